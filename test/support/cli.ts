import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '@tidemark/cli';
import { pino } from 'pino';

/**
 * A `tidemark` command run in this process, as the binary runs it (no environment, a fresh working
 * directory, its log silent): its exit code and the lines it printed, errors as `error: …`.
 */
export async function runTidemark(
  args: readonly string[],
): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await main([...args], {
    env: {},
    cwd: mkdtempSync(join(tmpdir(), 'tidemark-cli-')),
    out: (line) => out.push(line),
    err: (line) => out.push(`error: ${line}`),
    stopSignal: new Promise<void>(() => undefined),
    logger: pino({ level: 'silent' }),
  });
  return { code, out };
}
