#!/usr/bin/env node
// The Kubernetes of `npm run e2e:k8s`, built from the Go module proxy (no release binaries are
// reachable here) into ~/.cache/tidemark/k8s/<version>/bin, once: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl from k8s.io/kubernetes
// (go.mod beside this file replaces its staging modules by their published versions), the etcd
// server that release is tested with, and CoreDNS for the cluster's names.
//
//   node infra/k8s-cluster/build.mjs [--print]    (--print: the versions and bin directory, JSON)
//
// One build at a time: a second run (the e2e test, while `npm test`'s prerequisites build it in
// the background) waits for the first's lock and uses what it built.
//
// Why 1.34: the newest release whose kubelet runs on a cgroup v1 host without an opt-out (1.35
// refuses unless failCgroupV1: false; this machine's cgroups are v1) and still supports
// containerd 1.x (Debian 12 has 1.6; 1.35 is the last to support 1.x at all).
//
// Plain JavaScript that runs on any Node.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const KUBERNETES = 'v1.34.4';
const ETCD = 'v3.6.4'; // k8s.io/kubernetes v1.34.4's go.mod
const COREDNS = 'v1.14.7';
const here = dirname(fileURLToPath(import.meta.url));
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tidemark', 'k8s');
const bin = join(cache, KUBERNETES, 'bin');
const COMMANDS = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
  'kubectl',
];

// The CRDs of the objects the chart can make beside the core ones, from their projects' Go
// modules (the files are in the module zips the proxy serves).
const CRDS = {
  'github.com/prometheus-operator/prometheus-operator@v0.85.0': [
    'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
    'example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml',
  ],
  'github.com/kedacore/keda/v2@v2.21.0': [
    'config/crd/bases/keda.sh_scaledobjects.yaml',
    'config/crd/bases/keda.sh_triggerauthentications.yaml',
  ],
};

/** Each CRD file's path in the module cache (downloaded if missing; outside any module). */
function crdFiles() {
  return Object.entries(CRDS).flatMap(([module, files]) => {
    const { Dir } = JSON.parse(
      execFileSync('go', ['mod', 'download', '-json', module], {
        cwd: homedir(),
        encoding: 'utf8',
      }),
    );
    return files.map((file) => join(Dir, file));
  });
}

if (process.argv.includes('--print')) {
  const crds = crdFiles();
  process.stdout.write(
    `${JSON.stringify({ kubernetes: KUBERNETES, etcd: ETCD, coredns: COREDNS, bin, crds })}\n`,
  );
  process.exit(0);
}
const built = () => [...COMMANDS, 'etcd', 'coredns'].every((name) => existsSync(join(bin, name)));
crdFiles();
if (built()) process.exit(0);
lock();
if (built()) process.exit(0); // built by the run this one waited for

mkdirSync(bin, { recursive: true });
const [major, minor] = KUBERNETES.slice(1).split('.');
// The version the binaries report (a module build has no git tree to read it from).
const version = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
  `-X ${pkg}.gitVersion=${KUBERNETES}`,
  `-X ${pkg}.gitMajor=${major}`,
  `-X ${pkg}.gitMinor=${minor}`,
  `-X ${pkg}.gitTreeState=clean`,
]);
process.stderr.write(
  `k8s: building Kubernetes ${KUBERNETES}, etcd ${ETCD} and CoreDNS ${COREDNS} from the Go module proxy into ${bin} (once)\n`,
);
const go = (args, env = process.env) =>
  execFileSync('go', args, { cwd: here, env, stdio: ['ignore', 'inherit', 'inherit'] });
go([
  'build',
  '-ldflags',
  `-s -w ${version.join(' ')}`,
  '-o',
  `${bin}/`,
  ...COMMANDS.map((c) => `k8s.io/kubernetes/cmd/${c}`),
]);
go(['build', '-ldflags', '-s -w', '-o', join(bin, 'etcd'), 'go.etcd.io/etcd/server/v3']);
go(['install', '-ldflags', '-s -w', `github.com/coredns/coredns@${COREDNS}`], {
  ...process.env,
  GOBIN: bin,
});

/**
 * Takes the build's lock (a directory: made atomically), waiting while a live build holds it; a
 * lock whose process is gone is taken over. Released when this process exits, however it exits.
 */
function lock() {
  const dir = join(cache, `${KUBERNETES}.lock`);
  mkdirSync(cache, { recursive: true });
  for (let announced = false; ;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = holderOf(dir);
    if (holder === 'starting') {
      sleepMs(200); // taken a moment ago: its pid is being written
      continue;
    }
    if (holder === undefined || !alive(holder)) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (!announced) process.stderr.write(`k8s: waiting for the build under way (pid ${holder})\n`);
    announced = true;
    sleepMs(2_000);
  }
}

/** The pid holding the lock; `starting` while a just-made lock has none yet; else undefined (stale). */
function holderOf(dir) {
  let pid = 0;
  let ageMs = Infinity;
  try {
    ageMs = Date.now() - statSync(dir).mtimeMs;
    pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
  } catch {
    // no pid file yet, or the lock went meanwhile (the loop tries to take it again)
  }
  if (pid > 0) return pid;
  return ageMs < 10_000 ? 'starting' : undefined;
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
