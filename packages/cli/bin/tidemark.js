#!/usr/bin/env node
// The `tidemark` command's launcher. It is committed (not built) so that npm links it at install
// time, and it is plain JavaScript that parses on any Node, so it can:
//   1. move to a newer Node when this one is older than the project's minimum: the Node 24 of the
//      optional `node-<os>-<arch>` package, when installed (this repository installs it);
//   2. build the command on first use in a checkout of this repository (dist/ is not committed);
//   3. run the real entry point, dist/bin.js.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const MINIMUM = [22, 22];
const here = dirname(fileURLToPath(import.meta.url));
const entry = join(here, '..', 'dist', 'bin.js');

function fail(message) {
  process.stderr.write(`tidemark: ${message}\n`);
  process.exit(1);
}

function newEnough(version) {
  const [major, minor] = version.split('.').map(Number);
  return major > MINIMUM[0] || (major === MINIMUM[0] && minor >= MINIMUM[1]);
}

/** The `node` binary of an installed `node-<os>-<arch>` package, looked up from cwd and from here. */
function bundledNode() {
  const os = process.platform === 'win32' ? 'win' : process.platform;
  const name = `node-${os}-${process.arch}`;
  for (const from of [join(process.cwd(), 'noop.js'), fileURLToPath(import.meta.url)]) {
    try {
      const manifest = createRequire(from).resolve(`${name}/package.json`);
      const binary = join(dirname(manifest), 'bin', os === 'win' ? 'node.exe' : 'node');
      if (existsSync(binary)) return binary;
    } catch {
      // Not installed where this lookup started.
    }
  }
  return undefined;
}

/** Runs this launcher again on `node`, passing signals on, and exits as it exits. */
function rerunOn(node) {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TIDEMARK_LAUNCHER_NODE: node },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('error', (error) => fail(`could not start ${node}: ${error.message}`));
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}

/** The root of this repository when the launcher runs from a checkout of it. */
function checkoutRoot() {
  const root = join(here, '..', '..', '..');
  try {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    return manifest.name === 'tidemark' && Array.isArray(manifest.workspaces) ? root : undefined;
  } catch {
    return undefined;
  }
}

function buildCheckout(root) {
  process.stderr.write('tidemark: first run in this checkout, building it (npm run build)…\n');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const build = spawnSync(npm, ['run', 'build', '--silent', '--', '--output-logs=errors-only'], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
  });
  if (build.status !== 0 || !existsSync(entry)) {
    process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
    fail(`the build failed${build.error ? `: ${build.error.message}` : ' (output above)'}`);
  }
}

if (!newEnough(process.versions.node)) {
  const node = process.env.TIDEMARK_LAUNCHER_NODE ? undefined : bundledNode();
  if (node === undefined) {
    fail(
      `Node.js ${process.versions.node} is too old: tidemark needs >= ${MINIMUM.join('.')}. ` +
        `Install Node 24, or add the package node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}@24 ` +
        'to your project (npm install node-<os>-<arch>@24) and tidemark runs on it.',
    );
  }
  stopWhenOrphanedByNpm();
  rerunOn(node);
} else {
  if (!existsSync(entry)) {
    const root = checkoutRoot();
    if (root === undefined) fail(`${entry} is missing: reinstall @tidemark/cli`);
    buildCheckout(root);
  }
  stopWhenOrphanedByNpm();
  await import(pathToFileURL(entry).href);
}

/**
 * `npx tidemark …` (and npm scripts) run this under `npm exec` and a shell; stopping npm with
 * SIGTERM ends npm and the shell but does not pass the signal on, and the server would run on with
 * no one to stop it. Under npm, a parent that goes away is taken as that stop: the process stops
 * itself the graceful way (SIGTERM: drain, then exit). Not outside npm, where a process left by its
 * shell (nohup, a daemon) is meant to run on.
 */
function stopWhenOrphanedByNpm() {
  if (process.env.npm_command === undefined) return;
  const parent = process.ppid;
  const check = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(check);
    process.kill(process.pid, 'SIGTERM');
  }, 500);
  check.unref();
}
