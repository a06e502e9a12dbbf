#!/usr/bin/env node
// Installs Tidemark from this clone into a project of yours — the packages are not on the public
// npm registry yet, so `npm install @tidemark/cli` answers 404. Builds the workspaces, packs each
// with `npm pack` into the project's `tidemark-packages/` (kept: its package.json refers to them,
// so a later `npm install` there still works), and installs them (with zod and the official SDK's
// server package, which tool modules import), creating its package.json when there is none.
//
//   npm run install-into -- ../my-tools
//
// Plain JavaScript on any Node: the repository's npm scripts already run on its own Node 24.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const target = process.argv[2];
if (target === undefined || target.startsWith('-')) {
  process.stderr.write('usage: npm run install-into -- <project directory>\n');
  process.exit(2);
}
const project = resolve(process.env.INIT_CWD ?? process.cwd(), target);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const sh = (args, cwd) => execFileSync(npm, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

process.stderr.write('install-into: building the packages…\n');
sh(['run', 'build', '--silent', '--', '--output-logs=errors-only'], root);
const tarballs = join(project, 'tidemark-packages');
rmSync(tarballs, { recursive: true, force: true });
mkdirSync(tarballs, { recursive: true });
execFileSync(npm, ['pack', '--workspaces', '--pack-destination', tarballs], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});
// The test fixtures are this repository's own; everything else is what a project runs.
for (const file of readdirSync(tarballs))
  if (file.includes('fixtures')) rmSync(join(tarballs, file));
const packed = readdirSync(tarballs).map((file) => join(tarballs, file));
if (!existsSync(join(project, 'package.json'))) {
  const name =
    basename(project)
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-') || 'my-tools';
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name, private: true, type: 'module' }, null, 2)}\n`,
  );
}
process.stderr.write(`install-into: installing ${packed.length} packages into ${project}…\n`);
sh(
  [
    'install',
    '--no-audit',
    '--no-fund',
    ...packed,
    'zod@^4',
    '@modelcontextprotocol/server@^2.4.0',
  ],
  project,
);
process.stdout.write(
  `\nInstalled (the packages are kept in ${tarballs}). In ${project}:\n` +
    '  npx tidemark init                      # a tool module, its test, npm start and npm test\n' +
    '  npx tidemark dev --tools ./tools.mjs   # or serve a module of your own\n',
);
