import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it, onTestFinished } from 'vitest';

// `npm run e2e:k8s` as part of npm test: the chart on a single-node cluster built here (test/k8s).
// The script checks each step and exits 1 at the first failure; what it saw is asserted here too.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

it(
  'npm run e2e:k8s: the chart admitted, installed, tested, its workers deleted mid-call, upgraded under calls and uninstalled on a real cluster',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-k8s-transcript-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const transcript = join(dir, 'transcript.md');
    const { stdout } = await run(
      process.execPath,
      [join(root, 'test/k8s/e2e.ts'), '--transcript', transcript],
      {
        cwd: root,
        maxBuffer: 64 << 20,
        timeout: 14 * 60_000,
      },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `${error.message}\n${(error.stdout ?? '').split('\n').slice(-40).join('\n')}\n${error.stderr ?? ''}`,
      );
    });
    expect(stdout).toMatch(/ci\/everything-values\.yaml: \d+ objects admitted/);
    expect(stdout).toMatch(/STATUS: deployed/);
    expect(stdout).toMatch(/Phase:\s+Succeeded/);
    expect(stdout).toMatch(/the call during the workers' deletion: (exact|reset)/);
    expect(stdout).toMatch(/calls during the upgrade: [1-9]\d*, \d+ exact, \d+ reset, 0 failed/);
    expect(stdout).toMatch(/e2e:k8s passed/);
    expect(readFileSync(transcript, 'utf8')).toContain('$ helm uninstall tm -n tidemark --wait');
  },
  15 * 60_000,
);
