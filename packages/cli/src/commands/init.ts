import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { hostedServersOf, MCP_SERVER_FLAGS } from '../flags/mcp-servers.js';
import type { Io } from '../io.js';
import { parseFlags, UsageError } from '../options.js';

// `tidemark init [dir]`: a ready project — a TypeScript tool module, a test of it with `runTool`,
// a README, and a package.json whose `npm start` serves the module and whose `npm test` runs the
// test, both on the Node 24 the project brings (the optional `node-<os>-<arch>` packages, as this
// CLI does). Nothing the user wrote is overwritten: a file already there is kept and said so.
// With `--mcp-server '<name>=<command line>'` it is a project that hosts existing MCP servers
// instead: their servers file (`mcp-servers.json`, what the chart's `worker.mcpServers` holds), a
// README, and `npm start` serving them.

const TOOLS = `// Your tools: an ES module that registers them on the official MCP SDK's server.
import { defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export default defineToolModule({
  name: 'tools',
  register(server) {
    server.registerTool(
      'greet',
      {
        description: 'Greets someone by name.',
        inputSchema: z.object({ name: z.string().min(1) }),
      },
      async ({ name }) => ({ content: [{ type: 'text', text: \`Hello, \${name}!\` }] }),
    );
  },
});
`;

const TOOLS_TEST = `// The module run as the worker runs it (the official client and server, in memory): npm test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTool } from '@tidemark/testing';
import tools from './tools.ts';

test('greet greets by name', async () => {
  const run = await runTool(tools, 'greet', { name: 'Ada' });
  assert.deepEqual(run.result.content, [{ type: 'text', text: 'Hello, Ada!' }]);
});
`;

const HOSTED_README = `# Hosted MCP servers

Served by Tidemark: \`npm start\` runs the servers \`mcp-servers.json\` lists and serves their
tools at http://127.0.0.1:3000/mcp — each call durable and resumable. Each entry is
\`{ name, command, args, env, cwd, processes, prefix }\` (or \`url\` for a Streamable HTTP server).
On Kubernetes the same list is the chart's \`worker.mcpServers\`; the servers' runtime goes into an
image derived from Tidemark's (see Tidemark's docs/hosted-servers.md).
`;

const README = `# My MCP tools

Served by Tidemark: \`npm start\` runs them at http://127.0.0.1:3000/mcp
(reloading \`tools.ts\` when you save it), \`npm test\` runs \`tools.test.ts\`.
`;

interface PackageJson {
  name?: string;
  type?: string;
  scripts?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/** Writes the project (synchronously: a few small files), as a command the CLI awaits. */
export function init(args: readonly string[], io: Io): Promise<void> {
  const { positionals, values } = parseFlags(args, MCP_SERVER_FLAGS);
  if (positionals.length > 1)
    throw new UsageError(`expected at most one directory, got ${positionals.length}`);
  const dir = resolve(io.cwd, positionals[0] ?? '.');
  // Hosted servers, checked as the worker will check them before anything is written.
  const servers = hostedServersOf(values, io.cwd);
  const hosting = servers.length > 0;
  mkdirSync(dir, { recursive: true });
  const start = hosting
    ? 'tidemark dev --mcp-servers-file ./mcp-servers.json'
    : 'tidemark dev --tools ./tools.ts --watch';
  const manifest = packageJsonFor(dir, start);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  io.out(`package.json: "type": "module", npm start, npm test, Node 24`);
  const files: ReadonlyArray<readonly [string, string]> = hosting
    ? [
        ['mcp-servers.json', `${JSON.stringify(servers, null, 2)}\n`],
        ['README.md', HOSTED_README],
      ]
    : [
        ['tools.ts', TOOLS],
        ['tools.test.ts', TOOLS_TEST],
        ['README.md', README],
      ];
  for (const [name, text] of files) {
    const path = join(dir, name);
    if (existsSync(path)) {
      io.out(`${name}: already there, kept`);
      continue;
    }
    writeFileSync(path, text);
    io.out(`${name}: written`);
  }
  const next = hosting ? 'then npm start (serve)' : 'then npm start (serve) or npm test';
  io.out(`\nNext, in ${dir}: npm install, ${next}.`);
  return Promise.resolve();
}

/** The project's package.json with what init needs, its own entries kept. */
function packageJsonFor(dir: string, start: string): PackageJson {
  const path = join(dir, 'package.json');
  const manifest: PackageJson = existsSync(path)
    ? (JSON.parse(readFileSync(path, 'utf8')) as PackageJson)
    : { name: safeName(dir), private: true };
  if (manifest.type !== undefined && manifest.type !== 'module')
    throw new UsageError(
      `package.json says "type": "${manifest.type}"; tool modules are ES modules: set "type": "module", or init a new directory`,
    );
  return {
    ...manifest,
    type: 'module',
    scripts: {
      start,
      test: 'node --test',
      ...manifest.scripts,
    },
    // npm scripts run on the Node these bring (their `node` is linked into node_modules/.bin).
    optionalDependencies: { ...nodeBinaries(), ...manifest.optionalDependencies },
  };
}

/** The `node-<os>-<arch>` packages this CLI itself depends on, with the same ranges. */
function nodeBinaries(): Record<string, string> {
  const own = createRequire(import.meta.url)('../../package.json') as PackageJson;
  return { ...own.optionalDependencies };
}

function safeName(dir: string): string {
  const base = dir.split(/[\\/]/).pop() ?? '';
  return base.toLowerCase().replace(/[^a-z0-9-]/g, '-') || 'my-tools';
}
