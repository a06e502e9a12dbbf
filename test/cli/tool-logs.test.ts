import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { EXIT, main } from '@tidemark/cli';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished, vi } from 'vitest';

const FAILING_MODULE = `
export default (server) => {
  server.registerTool('explode', { description: 'always fails' }, async () => {
    throw new Error('kaboom');
  });
};
`;

describe('what an operator reads in the log', () => {
  it('one line per tool execution: a failing tool’s name, outcome, attempt and the error with its stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-logs-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const module = join(dir, 'fails.mjs');
    writeFileSync(module, FAILING_MODULE);
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    let stop!: () => void;
    const out: string[] = [];
    const running = main(['dev', '--tools', module, '--port', '0', '--data', join(dir, 'data')], {
      env: {},
      cwd: dir,
      out: (line) => out.push(line),
      err: (line) => out.push(line),
      stopSignal: new Promise<void>((resolve) => (stop = resolve)),
      log,
    });
    await vi.waitFor(() => expect(out.some((l) => l.startsWith('MCP endpoint: '))).toBe(true), {
      timeout: 20_000,
    });
    const url = out.find((l) => l.startsWith('MCP endpoint: '))!.slice('MCP endpoint: '.length);
    const client = new Client({ name: 'log-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const result = await client.callTool({ name: 'explode', arguments: {} });
    expect(result.isError).toBe(true);
    await client.close();
    stop();
    expect(await running).toBe(EXIT.ok);

    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const ended = entries.filter((entry) => entry['tool'] === 'explode');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      level: 50,
      msg: 'tool explode: failed',
      outcome: 'failed',
      attempt: 1,
      err: { message: 'kaboom', stack: expect.stringContaining('Error: kaboom') as unknown },
    });
    expect(ended[0]!['duration_ms']).toEqual(expect.any(Number));
  });
});
