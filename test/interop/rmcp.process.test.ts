import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { rmcpTasksClient } from '../support/prerequisites.js';

// Interop with a client nobody here wrote: the official Rust SDK, rmcp 3.11.0, which implements
// the Tasks extension (SEP-2663), unmodified (test/interop/rmcp-tasks; `npm test` builds it). It
// creates tasks through one gateway replica and follows them through the other.

const run = promisify(execFile);

describe('the official Rust SDK (rmcp 3.11.0) as a Tasks client', () => {
  it('discovers the extension, gets tasks, polls them to the exact result, answers input, cancels', async () => {
    const stack = await embeddedStack({ replicas: 2, modules: [counting, interactive] });
    onTestFinished(() => stack.stop());
    const [a, b] = stack.gateways.map((g) => g.url);
    const { stdout } = await run(rmcpTasksClient(), [a!, b!], { timeout: 60_000 });
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
  });
});
