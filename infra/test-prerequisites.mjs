#!/usr/bin/env node
// What `npm test` needs besides npm packages, installed by `npm test` itself and cached, so the
// README's test command passes on a fresh machine:
//
//   Kafka broker jars   Maven Central → ~/.m2, for infra/kafka/kafka.sh (not needed with
//                       KAFKA_BROKERS or a Docker engine)
//   Python MCP clients  test/interop/python/requirements.txt (the official SDK `mcp`, FastMCP's
//                       Tasks client) in a venv of the project's own (TIDEMARK_PYTHON overrides)
//   helm                built from the Go module proxy (TIDEMARK_HELM overrides)
//   redis-server        Debian's package, for the benchmarks' SDK + Redis baseline
//                       (TIDEMARK_REDIS_SERVER overrides)
//   chromium            Debian's package, the headless browser of the console test
//                       (TIDEMARK_CHROMIUM overrides)
//   k8s-validate        infra/k8s-validate built with Go (strict decoding against the Kubernetes API
//                       types, for the chart tests; TIDEMARK_K8S_VALIDATE overrides)
//   rmcp client         the official Rust SDK (rmcp 3.11.0, Tasks extension), built with cargo
//                       from test/interop/rmcp-tasks (TIDEMARK_RMCP_CLIENT overrides)
//   Go client           the official Go SDK (go-sdk 1.8.0), built with Go from
//                       test/interop/go-client (TIDEMARK_GO_CLIENT overrides), and the SDK's own
//                       "everything" example server, unmodified, from the same module graph
//                       (TIDEMARK_GO_EVERYTHING overrides), which a worker hosts in the tests
//   MCP Inspector CLI   test/interop/inspector's pinned @modelcontextprotocol/inspector, installed
//                       with npm ci into inspector/ (TIDEMARK_INSPECTOR overrides: its launcher)
//   podman, runc,       Debian's packages, to build the Dockerfile's image on a base assembled
//   debootstrap         here and run it (TIDEMARK_CONTAINER_ENGINE=docker uses a Docker engine)
//   image               the Dockerfile's image, built by infra/image/build.mjs (npm run image:build)
//   containerd, CNI     Debian's containerd, containernetworking-plugins and iptables: the
//   plugins, iptables   node of the e2e:k8s cluster
//   k8s                 Kubernetes 1.34, etcd and CoreDNS built from the Go module proxy into
//                       k8s/ (infra/k8s-cluster/build.mjs), and the CRDs the chart's objects need
//   nginx               Debian's package unpacked (not installed) into nginx/, for the ingress
//                       test (TIDEMARK_NGINX overrides; one on PATH is used)
//   previous release    releases/previous.json's release, built from git history (or from the
//                       archive beside it in a clone without that history) into releases/<tag>,
//                       for the rolling-upgrade test (TIDEMARK_PREVIOUS_RELEASE overrides: a
//                       built checkout of it)
//
// Caches live in $XDG_CACHE_HOME/tidemark (default ~/.cache/tidemark); test/support/prerequisites.ts
// reads the same places. A prerequisite that cannot be installed stops the run with a message that
// names it and the alternatives: tests never skip for want of one.
//
// Plain JavaScript that runs on any Node, so an old one is told what to do instead of failing
// on syntax.
import { execFile, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tidemark');
const PYTHON_REQUIREMENTS = join(root, 'test/interop/python/requirements.txt');
const HELM = 'v3.22.0';

/** Runs a command; resolves with its output, rejects with its stderr's last lines. */
function sh(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    execFile(command, args, { maxBuffer: 64 << 20, ...options }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      const tail = `${stderr}${stdout}`.trim().split('\n').slice(-12).join('\n');
      reject(new Error(`${command} ${args.join(' ')} failed${tail ? `:\n${tail}` : ''}`));
    });
  });
}
const succeeds = (command, args) =>
  sh(command, args).then(
    () => true,
    () => false,
  );
const onPath = (tool) => succeeds('sh', ['-c', `command -v ${tool}`]);

function nodeIsNewEnough() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 22)) return;
  throw new Error(
    `Node.js ${process.versions.node} is too old (the project needs >= 22.22). ` +
      '`npm install` brings Node 24 for linux-x64, linux-arm64 and darwin-x64 (the optional ' +
      'node-<os>-<arch> packages) and npm scripts run on it; elsewhere, install Node 24.',
  );
}

async function dockerAnswers() {
  if (process.env.DOCKER_HOST) return true;
  if (!existsSync('/var/run/docker.sock')) return false;
  return new Promise((resolve) => {
    const socket = connect('/var/run/docker.sock');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

async function kafka() {
  if (process.env.KAFKA_BROKERS) return 'KAFKA_BROKERS';
  if (await dockerAnswers()) return 'Docker (Testcontainers)';
  const missing = [];
  for (const tool of ['java', 'mvn']) if (!(await onPath(tool))) missing.push(tool);
  if (missing.length > 0) {
    throw new Error(
      `Kafka: the suites need a real broker and ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} ` +
        'not on PATH. Give them one of: KAFKA_BROKERS=host:port (a cluster you run); a Docker ' +
        'engine (Testcontainers); or Java 17+ and Maven (a local broker from Maven Central jars).',
    );
  }
  await sh('bash', [join(root, 'infra/kafka/kafka.sh'), 'fetch']);
  return 'local broker jars';
}

/** `name==version` pins of the Python requirements file (extras dropped), to check a venv by. */
function pythonPins() {
  return readFileSync(PYTHON_REQUIREMENTS, 'utf8')
    .split('\n')
    .map((line) => /^([\w.-]+)(?:\[[^\]]*\])?==(\S+)$/.exec(line.trim()))
    .filter((match) => match !== null)
    .map(([, name, version]) => ({ name, version }));
}

async function python() {
  if (process.env.TIDEMARK_PYTHON) return process.env.TIDEMARK_PYTHON;
  const venv = join(cache, 'pyenv');
  const bin = join(venv, 'bin', 'python');
  const pins = pythonPins();
  const check = `import importlib.metadata as m\n${pins
    .map(
      ({ name, version }) =>
        `assert m.version(${JSON.stringify(name)}) == ${JSON.stringify(version)}`,
    )
    .join('\n')}`;
  if (await succeeds(bin, ['-c', check])) return bin;
  if (!(await onPath('python3'))) {
    throw new Error(
      'Python: the interop suite runs the official Python MCP client and python3 is not on ' +
        'PATH. Install Python 3.10+ (with venv), or set TIDEMARK_PYTHON to an interpreter that has ' +
        'test/interop/python/requirements.txt installed.',
    );
  }
  log(
    `installing the Python MCP clients (${pins.map((p) => `${p.name}==${p.version}`).join(', ')}) into ${venv}`,
  );
  if (!existsSync(bin)) {
    try {
      await sh('python3', ['-m', 'venv', '--clear', venv]);
    } catch (error) {
      throw new Error(
        `Python: python3 -m venv failed (on Debian, install python3-venv), or set TIDEMARK_PYTHON.\n${error.message}`,
        { cause: error },
      );
    }
  }
  await sh(join(venv, 'bin', 'pip'), [
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '-r',
    PYTHON_REQUIREMENTS,
  ]);
  return bin;
}

async function helm() {
  if (process.env.TIDEMARK_HELM) return process.env.TIDEMARK_HELM;
  const bin = join(cache, 'go', 'bin', 'helm');
  if (existsSync(bin)) return bin;
  if (!(await onPath('go'))) {
    throw new Error(
      `helm: the chart tests render the chart with helm ${HELM}, built from the Go module proxy, ` +
        'and go is not on PATH. Install Go 1.24+, or set TIDEMARK_HELM to a helm 3 binary.',
    );
  }
  log(`building helm ${HELM} from the Go module proxy into ${dirname(bin)} (once)`);
  await sh('go', ['install', `helm.sh/helm/v3/cmd/helm@${HELM}`], {
    env: { ...process.env, GOBIN: dirname(bin) },
  });
  return bin;
}

/**
 * Debian packages, installed with one apt-get (two at once would fight over dpkg's lock): each
 * tells how to do without it when apt cannot be used.
 */
const DEBIAN = {
  redis: {
    env: 'TIDEMARK_REDIS_SERVER',
    command: 'redis-server',
    package: 'redis-server',
    why:
      'redis-server: the benchmarks smoke run compares against the SDK with a Redis event store. ' +
      'Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis), ' +
      'or set TIDEMARK_REDIS_SERVER to a redis-server binary.',
  },
  podman: {
    env: 'TIDEMARK_CONTAINER_ENGINE',
    command: 'podman',
    package: 'podman',
    why:
      'podman: the image test builds the Dockerfile and runs it. Install podman (Debian: sudo ' +
      'apt-get install podman runc debootstrap) or a Docker engine (TIDEMARK_CONTAINER_ENGINE=docker).',
  },
  runc: {
    env: 'TIDEMARK_CONTAINER_ENGINE',
    command: 'runc',
    package: 'runc',
    why: 'runc: podman runs containers with runc (crun refuses hybrid cgroup v1 hosts). Install it.',
  },
  debootstrap: {
    env: 'TIDEMARK_NODE_IMAGE',
    command: 'debootstrap',
    package: 'debootstrap',
    why:
      'debootstrap: the image is built on a base assembled here (no registry needed). Install it, ' +
      'or set TIDEMARK_NODE_IMAGE to a Node base image your engine can pull.',
  },
  containerd: {
    env: 'TIDEMARK_K8S_SKIP_DEBIAN',
    command: 'containerd',
    package: 'containerd',
    why: 'containerd: the e2e:k8s cluster runs its pods on containerd (Debian: apt-get install containerd).',
  },
  cni: {
    env: 'TIDEMARK_K8S_SKIP_DEBIAN',
    command: '/usr/lib/cni/bridge',
    package: 'containernetworking-plugins',
    why: 'CNI plugins: the e2e:k8s cluster wires its pods with them (Debian: containernetworking-plugins).',
  },
  iptables: {
    env: 'TIDEMARK_K8S_SKIP_DEBIAN',
    command: 'iptables',
    package: 'iptables',
    why: 'iptables: kube-proxy routes Service addresses with it (Debian: apt-get install iptables).',
  },
  chromium: {
    env: 'TIDEMARK_CHROMIUM',
    command: 'chromium',
    package: 'chromium',
    why:
      'chromium: the console test drives a real headless Chromium (playwright-core). Install it ' +
      '(Debian: sudo apt-get install chromium; elsewhere Chrome or Chromium), or set ' +
      'TIDEMARK_CHROMIUM to its executable.',
  },
};

/**
 * nginx, for the ingress test (docs/scaling.md's configuration in front of two gateways): the one
 * on PATH, or Debian's package unpacked into the cache — not installed, so no service starts.
 */
async function nginx() {
  if (process.env.TIDEMARK_NGINX) return process.env.TIDEMARK_NGINX;
  if (await onPath('nginx')) return 'nginx';
  const dir = join(cache, 'nginx');
  const bin = join(dir, 'root', 'usr', 'sbin', 'nginx');
  if (existsSync(bin)) return bin;
  if (!(await onPath('apt-get')) || !(await onPath('dpkg')))
    throw new Error(
      'nginx: the ingress test runs nginx in front of two gateways. Install it (Debian/Ubuntu: ' +
        'sudo apt-get install nginx; macOS: brew install nginx), or set TIDEMARK_NGINX to its binary.',
    );
  log(`unpacking Debian's nginx into ${dir} (once)`);
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  await sh('sh', ['-c', 'apt-get download nginx 2>/dev/null && dpkg -x nginx_*.deb root'], {
    cwd: staging,
  });
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return bin;
}

/**
 * The Dockerfile's image, built by `npm run image:build` (infra/image/build.mjs) for the image
 * test: the engine's layer cache makes a rebuild of an unchanged tree take seconds.
 */
async function image() {
  await debianPackagesOnce();
  await sh(process.execPath, [join(root, 'infra/image/build.mjs')]);
  return 'built';
}

/**
 * Kubernetes, etcd and CoreDNS for e2e:k8s, built once from the Go module proxy, and the CRDs.
 * Built, the check is quick. Not built (a fresh cache), the build is the longest prerequisite by
 * far (about 16 minutes on 2 cores, the others about 10): it goes on in the background while the
 * suites run, and the e2e test waits for it (infra/k8s-cluster/build.mjs takes a lock; its output
 * in ~/.cache/tidemark/k8s/build.log). `TIDEMARK_K8S_BUILD=foreground` waits for it here.
 */
async function k8s() {
  if (!(await onPath('go')))
    throw new Error(
      'k8s: the e2e:k8s cluster is built with Go from the Go module proxy, and go is not on PATH. Install Go 1.26+.',
    );
  const build = join(root, 'infra/k8s-cluster/build.mjs');
  const { bin } = JSON.parse(await sh(process.execPath, [build, '--print']));
  const built = ['kube-apiserver', 'kubelet', 'kubectl', 'etcd', 'coredns'].every((name) =>
    existsSync(join(bin, name)),
  );
  if (built || process.env.TIDEMARK_K8S_BUILD === 'foreground') {
    await sh(process.execPath, [build]);
    return 'built';
  }
  const buildLog = join(cache, 'k8s', 'build.log');
  mkdirSync(dirname(buildLog), { recursive: true });
  const out = openSync(buildLog, 'w');
  spawn(process.execPath, [build], { detached: true, stdio: ['ignore', out, out] }).unref();
  closeSync(out);
  log(`building Kubernetes in the background (log: ${buildLog}); the e2e:k8s test waits for it`);
  return 'building';
}

let debianInstall;
const debianPackagesOnce = () => (debianInstall ??= debianPackages());

async function debianPackages() {
  const missing = [];
  for (const tool of Object.values(DEBIAN))
    if (!process.env[tool.env] && !(await onPath(tool.command))) missing.push(tool);
  if (missing.length === 0) return 'present';
  const isRoot = process.getuid?.() === 0;
  const sudo = !isRoot && (await succeeds('sudo', ['-n', 'true']));
  if (!(await onPath('apt-get')) || (!isRoot && !sudo))
    throw new Error(missing.map((tool) => tool.why).join('\n'));
  const packages = missing.map((tool) => tool.package);
  log(`installing ${packages.join(', ')} (Debian packages)`);
  const apt = (args) =>
    sh(sudo ? 'sudo' : 'apt-get', [...(sudo ? ['-n', 'apt-get'] : []), ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  const install = ['install', '-y', '--no-install-recommends', ...packages];
  await apt(install).catch(() => apt(['update']).then(() => apt(install)));
  return packages.join(', ');
}

/** A Go program of this repository built into the cache (go knows whether the build is current). */
async function goBuild({ name, dir, override, purpose, pkg = '.' }) {
  if (process.env[override]) return process.env[override];
  if (!(await onPath('go'))) {
    throw new Error(
      `${name}: ${purpose}, built with Go, and go is not on PATH. Install Go 1.26+, or set ` +
        `${override} to a binary built from ${dir}.`,
    );
  }
  const bin = join(cache, 'go', 'bin', name);
  if (!existsSync(bin))
    log(`building ${name} (modules from the Go module proxy) into ${dirname(bin)} (once)`);
  await sh('go', ['build', '-o', bin, pkg], { cwd: join(root, dir) });
  return bin;
}

const k8sValidate = () =>
  goBuild({
    name: 'k8s-validate',
    dir: 'infra/k8s-validate',
    override: 'TIDEMARK_K8S_VALIDATE',
    purpose: 'the chart tests check the rendered manifests against the Kubernetes API types',
  });

const goClient = () =>
  goBuild({
    name: 'go-mcp-client',
    dir: 'test/interop/go-client',
    override: 'TIDEMARK_GO_CLIENT',
    purpose: 'the interop tests run the official Go MCP SDK (go-sdk 1.8.0)',
  });

// Built after the client: one Go build at a time over the same module cache.
const goEverything = () =>
  goBuild({
    name: 'go-mcp-everything',
    dir: 'test/interop/go-client',
    pkg: 'github.com/modelcontextprotocol/go-sdk/examples/server/everything',
    override: 'TIDEMARK_GO_EVERYTHING',
    purpose: "the hosted-servers tests run the official Go MCP SDK's example server",
  });

async function rmcp() {
  if (process.env.TIDEMARK_RMCP_CLIENT) return process.env.TIDEMARK_RMCP_CLIENT;
  if (!(await onPath('cargo'))) {
    throw new Error(
      'rmcp: the Tasks interop suite runs the official Rust MCP SDK (rmcp 3.11.0), built with ' +
        'cargo, and cargo is not on PATH. Install Rust (rustup), or set TIDEMARK_RMCP_CLIENT to ' +
        'a binary built from test/interop/rmcp-tasks.',
    );
  }
  const target = join(cache, 'rmcp-target');
  if (!existsSync(join(target, 'debug', 'rmcp-tasks-interop')))
    log(`building the rmcp Tasks client (crates from the registry) into ${target} (once)`);
  // cargo itself knows whether the cached build is current.
  await sh('cargo', ['build', '--locked', '--quiet'], {
    cwd: join(root, 'test/interop/rmcp-tasks'),
    env: { ...process.env, CARGO_TARGET_DIR: target },
  });
  return join(target, 'debug', 'rmcp-tasks-interop');
}

/**
 * The MCP Inspector CLI, pinned by test/interop/inspector's package.json and lockfile, installed
 * with `npm ci` into the cache (its own tree: it brings a web UI's dependencies the project does
 * not want in its own) whenever the cached lockfile differs from the pinned one.
 */
async function inspector() {
  if (process.env.TIDEMARK_INSPECTOR) return process.env.TIDEMARK_INSPECTOR;
  const pinned = join(root, 'test/interop/inspector');
  const dir = join(cache, 'inspector');
  const bin = join(
    dir,
    'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
  );
  const lock = readFileSync(join(pinned, 'package-lock.json'), 'utf8');
  const cachedLock = join(dir, 'package-lock.json');
  if (existsSync(bin) && existsSync(cachedLock) && readFileSync(cachedLock, 'utf8') === lock)
    return bin;
  log(`installing the MCP Inspector CLI (npm ci) into ${dir}`);
  mkdirSync(dir, { recursive: true });
  for (const file of ['package.json', 'package-lock.json'])
    writeFileSync(join(dir, file), readFileSync(join(pinned, file)));
  await sh('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
  });
  return bin;
}

/**
 * The release before this one (releases/previous.json), built once, so the rolling-upgrade test
 * runs its gateways and workers beside this tree's on the same topics (docs/upgrades.md). Its
 * sources come from git history when this clone has the commit, else from the archive committed
 * beside it: a CI clone of one branch, without tags or shallow, has no history to build from.
 */
async function previousRelease() {
  if (process.env.TIDEMARK_PREVIOUS_RELEASE) return process.env.TIDEMARK_PREVIOUS_RELEASE;
  const releases = join(root, 'releases');
  const { tag, commit, archive } = JSON.parse(
    readFileSync(join(releases, 'previous.json'), 'utf8'),
  );
  const dir = join(cache, 'releases', tag);
  if (existsSync(join(dir, '.built')) && readFileSync(join(dir, '.built'), 'utf8').includes(commit))
    return dir;
  const inHistory = await succeeds('git', ['-C', root, 'cat-file', '-e', `${commit}^{commit}`]);
  const source = inHistory
    ? `git -C "${root}" archive --format=tar "${commit}"`
    : `gzip -dc "${join(releases, archive)}"`;
  log(
    `building the previous release ${tag} from ${inHistory ? 'git history' : archive} into ${dir} (once)`,
  );
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  await sh('sh', ['-c', `${source} | tar -x -C "${staging}"`]);
  await sh('npm', ['ci', '--no-audit', '--no-fund'], { cwd: staging });
  await sh(
    join(staging, 'node_modules', '.bin', 'turbo'),
    ['run', 'build', '--output-logs=errors-only'],
    {
      cwd: staging,
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
    },
  );
  writeFileSync(join(staging, '.built'), `${tag} ${commit}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return dir;
}

function log(line) {
  process.stderr.write(`test prerequisites: ${line}\n`);
}

async function main() {
  try {
    nodeIsNewEnough();
  } catch (error) {
    log(error.message);
    process.exit(1);
  }
  // The interop suite's records of this run (test/interop/render.ts reads them after the run).
  rmSync(join(root, 'test-results', 'interop'), { recursive: true, force: true });
  const steps = {
    kafka,
    python,
    helm,
    debianPackages: debianPackagesOnce,
    image,
    k8s,
    nginx,
    rmcp,
    k8sValidate,
    goClient: () => goClient().then(goEverything),
    inspector,
    previousRelease,
  };
  // Each step's time, for `npm test`'s phase report: from an empty cache the builds dominate.
  const times = {};
  const timed = ([name, step]) => {
    const started = performance.now();
    return Promise.resolve()
      .then(step)
      .finally(() => (times[name] = Math.round((performance.now() - started) / 1000)));
  };
  const results = await Promise.allSettled(Object.entries(steps).map(timed));
  const slow = Object.entries(times)
    .filter(([, s]) => s >= 5)
    .sort(([, a], [, b]) => b - a);
  if (slow.length > 0)
    log(`steps over 5 s (in parallel): ${slow.map(([n, s]) => `${n} ${s} s`).join(', ')}`);
  const failures = [];
  for (const [i, name] of Object.keys(steps).entries()) {
    const result = results[i];
    if (result.status === 'rejected') failures.push(`${name}: ${result.reason.message}`);
  }
  if (failures.length > 0) {
    process.stderr.write(
      `\nnpm test cannot run: ${failures.length} prerequisite${failures.length > 1 ? 's are' : ' is'} missing.\n\n` +
        failures.map((failure) => `  - ${failure.replace(/\n/g, '\n    ')}`).join('\n\n') +
        '\n\n',
    );
    process.exit(1);
  }
}

await main();
