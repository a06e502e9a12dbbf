import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { Io } from '../io.js';
import { parseFlags, UsageError } from '../options.js';

// `tidemark init [dir]`: a ready project — a TypeScript tool module, a test of it with `runTool`,
// a README, and a package.json whose `npm start` serves the module and whose `npm test` runs the
// test, both on the Node 24 the project brings (the optional `node-<os>-<arch>` packages, as this
// CLI does). Nothing the user wrote is overwritten: a file already there is kept and said so.

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
  const { positionals } = parseFlags(args, {});
  if (positionals.length > 1)
    throw new UsageError(`expected at most one directory, got ${positionals.length}`);
  const dir = resolve(io.cwd, positionals[0] ?? '.');
  mkdirSync(dir, { recursive: true });
  const manifest = packageJsonFor(dir);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  io.out(`package.json: "type": "module", npm start, npm test, Node 24`);
  for (const [name, text] of [
    ['tools.ts', TOOLS],
    ['tools.test.ts', TOOLS_TEST],
    ['README.md', README],
  ] as const) {
    const path = join(dir, name);
    if (existsSync(path)) {
      io.out(`${name}: already there, kept`);
      continue;
    }
    writeFileSync(path, text);
    io.out(`${name}: written`);
  }
  io.out(`\nNext, in ${dir}: npm install, then npm start (serve) or npm test.`);
  return Promise.resolve();
}

/** The project's package.json with what init needs, its own entries kept. */
function packageJsonFor(dir: string): PackageJson {
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
      start: 'tidemark dev --tools ./tools.ts --watch',
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
