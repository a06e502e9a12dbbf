// The official Rust SDK (rmcp, pinned in test/interop/rmcp-tasks/Cargo.toml), unmodified, as a
// Tasks client (test/interop/rmcp-tasks; `npm test` builds it): it discovers the extension,
// creates tasks through one endpoint and follows them through the other, polling.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { rmcpTasksClient } from '../support/prerequisites.js';
import { useDeployment } from './deployments.js';
import { handoffTests, type TaskRun } from './task-suite.js';
import { recorder, type Deployment } from './matrix.js';

const run = promisify(execFile);

/** One run of the driver in a hand-off mode: the JSON line it prints. */
async function runLine(args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(rmcpTasksClient(), args, { timeout: 60_000 });
  return JSON.parse(stdout.trim()) as Record<string, unknown>;
}

describe.each<Deployment>(['dev', 'kafka'])('rmcp as a Tasks client on %s', (deployment) => {
  const current = useDeployment(deployment);

  it('discovers the extension, gets tasks, polls them to the exact result, answers input, cancels', async () => {
    const { stdout } = await run(rmcpTasksClient(), [...current().urls], { timeout: 60_000 });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    const [discover, count, input, cancel] = lines;
    expect(discover).toEqual({ discover: { tasks: true } });
    expect(count!['count']).toMatchObject({
      created: { resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1000 },
      text: '1,2,3,4,5',
    });
    expect((count!['count']!['seen'] as string[]).at(-1)).toBe('completed');
    expect(input!['input']).toMatchObject({ text: 'deployed to staging' });
    expect(input!['input']!['keys']).toEqual([expect.stringMatching(/^1\.1\.confirm$/)]);
    expect((input!['input']!['seen'] as string[]).at(-1)).toBe('completed');
    expect((cancel!['cancel']!['seen'] as string[]).at(-1)).toBe('cancelled');

    const saw = recorder('rmcp', deployment);
    saw('handshake', 'server/discover: the Tasks extension found', { revisions: ['2026-07-28'] });
    saw('task', 'created (working), polled on the other endpoint to completed, exact result');
    saw('task-input', 'input_required answered with tasks/update, completed');
    saw('task-cancel', 'tasks/cancel: cancelled');
  });

  handoffTests('rmcp', deployment, current, {
    start: async (url) => String((await runLine(['start', url]))['taskId']),
    resume: async (url, taskId) => {
      const line = await runLine(['resume', url, taskId]);
      return { created: 'working', asked: [], ...(line as Pick<TaskRun, 'result' | 'status'>) };
    },
  });
});
