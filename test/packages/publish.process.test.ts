import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { describe, expect, it } from 'vitest';

// Ready to publish, package by package, by the ecosystem's own checks: publint (package.json
// against what is packed), @arethetypeswrong (every export's types resolve; ESM-only, so the
// CommonJS and node10 resolutions are out of scope), and `npm publish --dry-run` (what npm would
// upload, scoped packages as public).

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
// Every package but the private ones (`@tidemark/fixtures`: the tests' own, never published).
const packages = [
  ...readdirSync(join(root, 'packages')).map((name) => join('packages', name)),
  'examples',
].filter(
  (dir) =>
    !(JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { private?: boolean })
      .private,
);
const npmEnv = {
  ...process.env,
  PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
};

describe.each(packages)('%s, as it would be published', (dir) => {
  it('publint finds nothing', async () => {
    const { messages } = await publint({ pkgDir: join(root, dir), strict: true });
    expect(messages).toEqual([]);
  });

  it('@arethetypeswrong: every export resolves with its types (ESM)', async () => {
    const attw = join(root, 'node_modules/.bin/attw');
    const outcome = await run(attw, ['--pack', dir, '--profile', 'esm-only', '--format', 'ascii'], {
      cwd: root,
      env: npmEnv,
    }).then(
      () => 'ok',
      (error: { stdout: string }) => error.stdout,
    );
    expect(outcome).toBe('ok');
  });

  it('npm publish --dry-run: public, tag latest', async () => {
    const { stderr } = await run('npm', ['publish', '--dry-run', '--workspace', dir], {
      cwd: root,
      env: npmEnv,
    });
    expect(stderr).toMatch(/with tag latest and public access \(dry-run\)/);
  });
});
