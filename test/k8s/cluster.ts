// A single-node Kubernetes cluster from what this machine can get, for `npm run e2e:k8s`: etcd, the
// control plane, the kubelet, kube-proxy and CoreDNS built from the Go module proxy
// (infra/k8s-cluster, cached in ~/.cache/tidemark/k8s), containerd + runc + the CNI plugins from
// Debian, and a Kafka broker the pods reach. Needs root (a kubelet, a bridge, iptables).
//
// Everything listens on a bridge of its own (tmk0, 10.244.0.1/24): the pods' network, which
// nothing outside this machine reaches — except etcd, on loopback. Why these versions and settings:
//   Kubernetes 1.34  the newest whose kubelet runs on cgroup v1 without an opt-out (1.35 refuses it
//                    unless failCgroupV1: false) and supports containerd 1.6, Debian 12's
//   cgroupfs driver  no systemd manages this machine's cgroups for the kubelet
//   no registry      the pause image is built here from Kubernetes' own pause.c; images are
//                    imported into containerd with ctr
// (Runs under Node's type stripping.)
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execAsync = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const cache = join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'tidemark', 'k8s');
export const { kubernetes: KUBERNETES, bin, crds: CRDS } = buildBinaries();

const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';
const BRIDGE = 'tmk0';
export const NODE_IP = '10.244.0.1';
const POD_CIDR = '10.244.0.0/24';
const SERVICE_CIDR = '10.96.0.0/24';
const NODE_NAME = 'tidemark-e2e';

const sh = (
  command: string,
  args: readonly string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): string =>
  execFileSync(command, args, {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...options,
  });
const trySh = (command: string, args: readonly string[]): boolean => {
  try {
    sh(command, args);
    return true;
  } catch {
    return false;
  }
};
export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

function log(line: string): void {
  process.stderr.write(`k8s: ${line}\n`);
}

async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The binaries and CRDs, built and fetched once (infra/k8s-cluster/build.mjs). */
function buildBinaries(): { kubernetes: string; bin: string; crds: string[] } {
  const script = join(root, 'infra/k8s-cluster/build.mjs');
  execFileSync(process.execPath, [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  return JSON.parse(execFileSync(process.execPath, [script, '--print'], { encoding: 'utf8' })) as {
    kubernetes: string;
    bin: string;
    crds: string[];
  };
}

export interface Cluster {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly brokers: string;
  kubectl(args: readonly string[], input?: string): string;
  /** Imports an image of the container engine into the node's containerd, under the same name. */
  importImage(save: (file: string) => void, name: string): void;
  /** Another name for an image the node has (a new tag of the same image, for an upgrade). */
  tagImage(from: string, to: string): void;
  stop(): Promise<void>;
}

/** Starts the cluster; `stop` ends every process it started and removes what it set up. */
export async function startCluster(options: { kafkaScript: string }): Promise<Cluster> {
  if (process.getuid?.() !== 0)
    throw new Error('the e2e cluster needs root: a kubelet, a bridge and iptables rules');
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-k8s-'));
  const children: Array<{ name: string; child: ChildProcess }> = [];
  const cleanups: Array<() => void | Promise<void>> = [];
  const beforeStop: Array<() => void> = [];
  const start = (
    name: string,
    command: string,
    args: readonly string[],
    env?: NodeJS.ProcessEnv,
  ): void => {
    const out = openSync(join(dir, `${name}.log`), 'a');
    const child = spawn(command, args, { stdio: ['ignore', out, out], env: env ?? process.env });
    closeSync(out);
    child.once('exit', (code, signal) => {
      if (!stopping)
        log(`${name} exited (${code ?? signal}); its log: ${join(dir, `${name}.log`)}`);
    });
    children.push({ name, child });
  };
  let stopping = false;
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const kubectl = (args: readonly string[], input?: string): string =>
    sh(
      join(bin, 'kubectl'),
      ['--kubeconfig', kubeconfig, ...args],
      input === undefined ? {} : { input },
    );

  const stop = async (): Promise<void> => {
    stopping = true;
    // The kubelet first, so it starts nothing again; then every container it started, while
    // containerd still answers (their shims would outlive it); then the rest.
    const kubelet = children.find(({ name }) => name === 'kubelet')?.child;
    if (kubelet && kubelet.exitCode === null) {
      kubelet.kill('SIGTERM');
      await new Promise((resolve) => kubelet.once('exit', resolve));
    }
    for (const before of beforeStop) {
      try {
        before();
      } catch (error) {
        log(`stop: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    for (const { child } of children.reverse()) child.kill('SIGTERM');
    await sleep(2_000);
    for (const { child } of children) if (child.exitCode === null) child.kill('SIGKILL');
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log(`cleanup: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    if (process.env['TIDEMARK_K8S_KEEP'] !== '1') rmSync(dir, { recursive: true, force: true });
    else log(`kept ${dir}`);
  };
  try {
    network(cleanups);
    const pki = certificates(dir);
    const etcdPort = await freePort();
    start('etcd', join(bin, 'etcd'), [
      '--name',
      'e2e',
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${await freePort()}`,
      '--log-level',
      'warn',
    ]);
    const apiPort = await freePort(NODE_IP);
    const server = `https://${NODE_IP}:${apiPort}`;
    writeFileSync(join(dir, 'tokens.csv'), `${pki.token},admin,admin,"system:masters"\n`);
    start('kube-apiserver', join(bin, 'kube-apiserver'), [
      '--etcd-servers',
      `http://127.0.0.1:${etcdPort}`,
      '--bind-address',
      NODE_IP,
      '--advertise-address',
      NODE_IP,
      '--secure-port',
      String(apiPort),
      '--tls-cert-file',
      pki.file('apiserver.crt'),
      '--tls-private-key-file',
      pki.file('apiserver.key'),
      '--client-ca-file',
      pki.file('ca.crt'),
      '--token-auth-file',
      join(dir, 'tokens.csv'),
      '--authorization-mode',
      'Node,RBAC',
      '--service-cluster-ip-range',
      SERVICE_CIDR,
      '--service-account-issuer',
      'https://kubernetes.default.svc.cluster.local',
      '--service-account-key-file',
      pki.file('sa.pub'),
      '--service-account-signing-key-file',
      pki.file('sa.key'),
      '--kubelet-client-certificate',
      pki.file('apiserver-kubelet.crt'),
      '--kubelet-client-key',
      pki.file('apiserver-kubelet.key'),
      // Kubelets by address: the node's name resolves nowhere (kubectl logs, exec).
      '--kubelet-preferred-address-types',
      'InternalIP',
      '--profiling=false',
      '--v=1',
    ]);
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: e2e',
        `clusters: [{ name: e2e, cluster: { server: "${server}", certificate-authority: "${pki.file('ca.crt')}" } }]`,
        `users: [{ name: admin, user: { token: "${pki.token}" } }]`,
        'contexts: [{ name: e2e, context: { cluster: e2e, user: admin, namespace: default } }]',
        '',
      ].join('\n'),
    );
    await until(
      'the API server ready',
      () => kubectl(['get', '--raw', '/readyz']).trim() === 'ok',
      90_000,
    );

    const common = ['--kubeconfig', kubeconfig];
    // One of each, so no election; their own ports on loopback.
    const controller = async () => [
      ...common,
      '--leader-elect=false',
      '--bind-address',
      '127.0.0.1',
      '--secure-port',
      String(await freePort()),
    ];
    start('kube-controller-manager', join(bin, 'kube-controller-manager'), [
      ...(await controller()),
      '--service-account-private-key-file',
      pki.file('sa.key'),
      '--root-ca-file',
      pki.file('ca.crt'),
      '--use-service-account-credentials=false',
      '--controllers',
      '*',
      '--v=1',
    ]);
    start('kube-scheduler', join(bin, 'kube-scheduler'), await controller());
    const containerd = containerdConfig(dir);
    start('containerd', 'containerd', ['--config', containerd.config]);
    await until(
      'containerd',
      () => trySh('ctr', ['--address', containerd.socket, 'version']),
      30_000,
    );
    const ctr = (args: readonly string[]) =>
      sh('ctr', ['--address', containerd.socket, '--namespace', 'k8s.io', ...args]);
    beforeStop.push(() => removeContainers(ctr));
    importPause(dir, containerd.socket);
    start('kubelet', join(bin, 'kubelet'), [
      '--config',
      kubeletConfig(dir, pki, containerd.socket),
      '--kubeconfig',
      kubeconfig,
      '--root-dir',
      join(dir, 'kubelet'),
      '--cert-dir',
      join(dir, 'kubelet-pki'),
      '--hostname-override',
      NODE_NAME,
      '--node-ip',
      NODE_IP,
      '--v=1',
    ]);
    cleanups.push(() => unmountUnder(dir));
    start('kube-proxy', join(bin, 'kube-proxy'), [
      ...common,
      '--hostname-override',
      NODE_NAME,
      '--cluster-cidr',
      POD_CIDR,
      '--proxy-mode',
      'iptables',
      '--conntrack-max-per-core',
      '0',
      '--metrics-bind-address',
      `127.0.0.1:${await freePort()}`,
      '--healthz-bind-address',
      `127.0.0.1:${await freePort()}`,
    ]);
    cleanups.push(() => void trySh(join(bin, 'kube-proxy'), ['--cleanup']));
    cleanups.push(removeKubeletChains);
    writeFileSync(
      join(dir, 'Corefile'),
      [
        `.:53 {`,
        `  bind ${NODE_IP}`,
        '  errors',
        `  kubernetes cluster.local in-addr.arpa ip6.arpa {`,
        `    kubeconfig ${kubeconfig} e2e`,
        '    pods insecure',
        '    fallthrough in-addr.arpa ip6.arpa',
        '  }',
        '  forward . /etc/resolv.conf',
        '  cache 5',
        '}',
        '',
      ].join('\n'),
    );
    start('coredns', join(bin, 'coredns'), ['-conf', join(dir, 'Corefile')]);
    const brokers = await broker(dir, options.kafkaScript, cleanups);
    await until(
      'the node Ready',
      () =>
        /True/.test(
          kubectl([
            'get',
            'node',
            NODE_NAME,
            '-o',
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
          ]),
        ),
      120_000,
    );
    return {
      dir,
      kubeconfig,
      brokers,
      kubectl,
      stop,
      tagImage(from, to) {
        ctr(['images', 'tag', from, to]);
      },
      importImage(save, name) {
        const file = join(dir, 'image.tar');
        save(file);
        ctr(['images', 'import', file]);
        rmSync(file);
        if (!ctr(['images', 'ls', '-q']).split('\n').includes(name))
          throw new Error(`${name} is not in containerd after the import`);
      },
    };
  } catch (error) {
    log(`start failed; logs in ${dir}`);
    process.env['TIDEMARK_K8S_KEEP'] = '1';
    await stop();
    throw error;
  }
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      if (check()) return;
    } catch (error) {
      last = (error as Error).message.split('\n').slice(0, 3).join(' ');
    }
    if (Date.now() > deadline) throw new Error(`${what}: not in ${timeoutMs / 1000} s (${last})`);
    await sleep(500);
  }
}

/** The pods' bridge, and IP forwarding while the cluster runs (both put back at stop). */
function network(cleanups: Array<() => void>): void {
  // The sandboxes' network namespaces: those this cluster made are gone after it.
  const namespaces = () => (existsSync('/run/netns') ? readdirSync('/run/netns') : []);
  const before = new Set(namespaces());
  cleanups.push(() => {
    for (const name of namespaces())
      if (!before.has(name) && name.startsWith('cni-')) trySh('ip', ['netns', 'delete', name]);
  });
  if (trySh('ip', ['link', 'show', BRIDGE])) sh('ip', ['link', 'delete', BRIDGE]);
  sh('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  sh('ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', BRIDGE]);
  sh('ip', ['link', 'set', BRIDGE, 'up']);
  cleanups.push(() => void trySh('ip', ['link', 'delete', BRIDGE]));
  const forwarding = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();
  writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
  cleanups.push(() => writeFileSync('/proc/sys/net/ipv4/ip_forward', forwarding));
}

interface Pki {
  readonly token: string;
  file(name: string): string;
}

/** A CA, the API server's serving certificate, its client certificate to kubelets, the SA keys. */
function certificates(dir: string): Pki {
  const pki = join(dir, 'pki');
  mkdirSync(pki);
  const file = (name: string) => join(pki, name);
  const openssl = (args: readonly string[]) => sh('openssl', args, { cwd: pki });
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=tidemark-e2e-ca',
  ]);
  const issue = (name: string, subject: string, extensions: string) => {
    writeFileSync(file(`${name}.ext`), extensions);
    openssl([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    ]);
    openssl([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]);
  };
  issue(
    'apiserver',
    '/CN=kube-apiserver',
    `subjectAltName=IP:${NODE_IP},IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n`,
  );
  issue(
    'apiserver-kubelet',
    '/O=system:masters/CN=kube-apiserver-kubelet-client',
    'extendedKeyUsage=clientAuth\n',
  );
  openssl(['genrsa', '-out', 'sa.key', '2048']);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
  return { token: sh('openssl', ['rand', '-hex', '24']).trim(), file };
}

function containerdConfig(dir: string): { config: string; socket: string } {
  const base = join(dir, 'containerd');
  mkdirSync(join(dir, 'cni'), { recursive: true });
  writeFileSync(
    join(dir, 'cni', '10-tidemark.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'tidemark-e2e',
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: join(dir, 'cni-ipam'),
            ranges: [[{ subnet: POD_CIDR, gateway: NODE_IP }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    }),
  );
  const socket = join(base, 'containerd.sock');
  const config = join(dir, 'containerd.toml');
  writeFileSync(
    config,
    [
      'version = 2',
      `root = "${base}/root"`,
      `state = "${base}/state"`,
      '[grpc]',
      `  address = "${socket}"`,
      // Lowering a process's OOM score needs CAP_SYS_RESOURCE, which this sandbox's root lacks: runc
      // fails ("can't get final child's PID from pipe") unless scores stay at containerd's or above.
      '[plugins."io.containerd.grpc.v1.cri"]',
      `  sandbox_image = "${PAUSE_IMAGE}"`,
      '  restrict_oom_score_adj = true',
      '  [plugins."io.containerd.grpc.v1.cri".containerd]',
      '    snapshotter = "overlayfs"',
      '    default_runtime_name = "runc"',
      '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
      '      runtime_type = "io.containerd.runc.v2"',
      '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
      '        SystemdCgroup = false',
      '  [plugins."io.containerd.grpc.v1.cri".cni]',
      '    bin_dir = "/usr/lib/cni"',
      `    conf_dir = "${join(dir, 'cni')}"`,
      '',
    ].join('\n'),
  );
  return { config, socket };
}

/** Kubernetes' pause (build/pause/linux/pause.c of the module), a static binary in an image. */
function importPause(dir: string, socket: string): void {
  const source = join(
    sh('go', ['list', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], {
      cwd: join(root, 'infra/k8s-cluster'),
    }).trim(),
    'build/pause/linux/pause.c',
  );
  const work = join(dir, 'pause');
  mkdirSync(work);
  sh('gcc', ['-Os', '-static', '-DVERSION=e2e', '-o', join(work, 'pause'), source]);
  sh('tar', ['-C', work, '-cf', join(work, 'rootfs.tar'), 'pause']);
  // An image of one layer, written as an OCI layout by hand would be a format of our own: ctr
  // builds none, so the layer goes through podman's import (the same engine as the image).
  const storage = join(cache, 'pause-podman');
  const podman = ['--root', join(storage, 'storage'), '--runroot', join(storage, 'run')];
  sh('podman', [
    ...podman,
    'import',
    '--change',
    'ENTRYPOINT ["/pause"]',
    join(work, 'rootfs.tar'),
    PAUSE_IMAGE,
  ]);
  sh('podman', [
    ...podman,
    'save',
    '--format',
    'docker-archive',
    '-o',
    join(work, 'pause.tar'),
    PAUSE_IMAGE,
  ]);
  sh('ctr', [
    '--address',
    socket,
    '--namespace',
    'k8s.io',
    'images',
    'import',
    join(work, 'pause.tar'),
  ]);
}

function kubeletConfig(dir: string, pki: Pki, socket: string): string {
  const file = join(dir, 'kubelet.yaml');
  writeFileSync(
    file,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `address: ${NODE_IP}`,
      'port: 10250',
      'readOnlyPort: 0',
      'healthzBindAddress: 127.0.0.1',
      'healthzPort: 0',
      'cgroupDriver: cgroupfs',
      `containerRuntimeEndpoint: unix://${socket}`,
      'failSwapOn: false',
      'failCgroupV1: false',
      'authentication:',
      '  anonymous: { enabled: false }',
      '  webhook: { enabled: true }',
      `  x509: { clientCAFile: "${pki.file('ca.crt')}" }`,
      'authorization: { mode: Webhook }',
      `clusterDNS: [${NODE_IP}]`,
      'clusterDomain: cluster.local',
      'resolvConf: /etc/resolv.conf',
      'evictionHard: { memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }',
      'imageGCHighThresholdPercent: 100',
      'imageGCLowThresholdPercent: 99',
      'serializeImagePulls: false',
      '',
    ].join('\n'),
  );
  return file;
}

/** A broker of its own on the node's address, which the pods reach. */
async function broker(dir: string, script: string, cleanups: Array<() => void>): Promise<string> {
  const port = await freePort(NODE_IP);
  const controller = await freePort();
  const extra = join(dir, 'kafka-listeners.properties');
  writeFileSync(
    extra,
    [
      `listeners=PLAINTEXT://${NODE_IP}:${port},CONTROLLER://127.0.0.1:${controller}`,
      `advertised.listeners=PLAINTEXT://${NODE_IP}:${port}`,
      `controller.quorum.voters=1@127.0.0.1:${controller}`,
      '',
    ].join('\n'),
  );
  const env = {
    ...process.env,
    TIDEMARK_KAFKA_DIR: join(dir, 'kafka'),
    TIDEMARK_KAFKA_PORT: String(port),
    TIDEMARK_KAFKA_EXTRA_CONFIG: extra,
  };
  await execAsync('bash', [script, 'start'], { env });
  cleanups.push(() => void execFileSync('bash', [script, 'stop'], { env, stdio: 'ignore' }));
  return `${NODE_IP}:${port}`;
}

/**
 * Every pod container of the node's containerd, killed and deleted (a task's shim outlives
 * containerd until its task is deleted), and the network namespaces of their sandboxes.
 */
function removeContainers(ctr: (args: readonly string[]) => string): void {
  const tasks = ctr(['tasks', 'ls', '-q']).split('\n').filter(Boolean);
  const attempt = (args: readonly string[]) => {
    try {
      ctr(args);
    } catch {
      // already gone
    }
  };
  for (const task of tasks) attempt(['tasks', 'kill', '--all', '--signal', 'SIGKILL', task]);
  for (const task of tasks) attempt(['tasks', 'delete', '--force', task]);
  for (const container of ctr(['containers', 'ls', '-q']).split('\n').filter(Boolean))
    attempt(['containers', 'delete', container]);
}

/** The kubelet's volumes and containerd's snapshots, unmounted so the directory can go. */
function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((path) => path.startsWith(dir))
    .sort((a, b) => b.length - a.length);
  for (const mount of mounts) trySh('umount', ['-l', mount]);
}

/**
 * The kubelet's iptables chains (KUBE-FIREWALL, the canaries), which it leaves behind: the jumps to
 * them from the built-in chains deleted, then the chains (kube-proxy --cleanup takes its own).
 */
function removeKubeletChains(): void {
  for (const iptables of ['iptables', 'ip6tables'])
    for (const table of ['filter', 'nat', 'mangle']) {
      let rules: string[];
      try {
        rules = sh(iptables, ['-t', table, '-S']).split('\n');
      } catch {
        continue;
      }
      const chains = rules.filter((r) => r.startsWith('-N KUBE-')).map((r) => r.slice(3));
      for (const rule of rules)
        if (/^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j KUBE-/.test(rule))
          trySh('sh', ['-c', `${iptables} -t ${table} -D ${rule.slice(3)}`]);
      for (const chain of chains) trySh(iptables, ['-t', table, '-F', chain]);
      for (const chain of chains) trySh(iptables, ['-t', table, '-X', chain]);
    }
}
