// Where the tests find what `npm test` installs before them (infra/test-prerequisites.mjs): the
// same environment overrides and the same cache, so a suite run alone (`npx vitest run …`) after
// one `npm test` finds them too.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cache = join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'tidemark');

/** A Python interpreter with the official MCP SDK (`mcp` on PyPI). */
export const pythonWithMcp = (): string =>
  process.env['TIDEMARK_PYTHON'] ?? join(cache, 'pyenv', 'bin', 'python');

/** helm 3, built from the Go module proxy. */
export const helmBinary = (): string =>
  process.env['TIDEMARK_HELM'] ?? join(cache, 'go', 'bin', 'helm');

/** redis-server, for the benchmarks' SDK + Redis baseline. */
/** nginx: TIDEMARK_NGINX, the one on PATH, or Debian's unpacked into the cache. */
export const nginxBinary = (): string => {
  if (process.env['TIDEMARK_NGINX'] !== undefined) return process.env['TIDEMARK_NGINX'];
  const cached = join(cache, 'nginx', 'root', 'usr', 'sbin', 'nginx');
  return existsSync(cached) ? cached : 'nginx';
};

export const redisServer = (): string => process.env['TIDEMARK_REDIS_SERVER'] ?? 'redis-server';

/** The official Rust SDK's Tasks client (rmcp), built from test/interop/rmcp-tasks. */
export const rmcpTasksClient = (): string =>
  process.env['TIDEMARK_RMCP_CLIENT'] ?? join(cache, 'rmcp-target', 'debug', 'rmcp-tasks-interop');

/** The official Go SDK's client (go-sdk), built from test/interop/go-client. */
export const goMcpClient = (): string =>
  process.env['TIDEMARK_GO_CLIENT'] ?? join(cache, 'go', 'bin', 'go-mcp-client');

/** The official Go SDK's "everything" example server, unmodified (go-sdk's examples/server). */
export const goMcpEverything = (): string =>
  process.env['TIDEMARK_GO_EVERYTHING'] ?? join(cache, 'go', 'bin', 'go-mcp-everything');

/** The MCP Inspector's launcher script (run with `--cli`), installed from test/interop/inspector. */
export const inspectorCli = (): string =>
  process.env['TIDEMARK_INSPECTOR'] ??
  join(
    cache,
    'inspector',
    'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
  );

/** infra/k8s-validate: strict decoding of manifests against the Kubernetes API types. */
export const k8sValidate = (): string =>
  process.env['TIDEMARK_K8S_VALIDATE'] ?? join(cache, 'go', 'bin', 'k8s-validate');

/** Chromium's executable for the console test (Debian's `chromium`, or TIDEMARK_CHROMIUM). */
export const chromiumBinary = (): string =>
  process.env['TIDEMARK_CHROMIUM'] ??
  execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], {
    encoding: 'utf8',
  }).trim();

/**
 * A built checkout of the release before this tree (releases/previous.json), as
 * infra/test-prerequisites.mjs builds it: the rolling-upgrade test runs it beside this tree.
 */
export function previousRelease(): { tag: string; dir: string } {
  const override = process.env['TIDEMARK_PREVIOUS_RELEASE'];
  if (override !== undefined) return { tag: 'TIDEMARK_PREVIOUS_RELEASE', dir: override };
  const { tag } = JSON.parse(readFileSync(join(root, 'releases', 'previous.json'), 'utf8')) as {
    tag: string;
  };
  return { tag, dir: join(cache, 'releases', tag) };
}
