import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import { goMcpClient, pythonWithMcp } from '../support/prerequisites.js';
import { startProcess, supportScript } from '../support/processes.js';
import { startDevServer } from '../support/dev-server.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { markedBlock } from '../docs/blocks.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const execFileAsync = promisify(execFile);
const BIN = join(root, 'packages/cli/dist/bin.js');

/** `tidemark dev` on a port and a data directory, run by the built CLI. */
const devArgs = (port: number, data: string, ...flags: string[]) => [
  ...[BIN, 'dev', '--port', String(port), '--data', data],
  ...flags,
];
const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

async function connect(url: string) {
  return connectResumingClient(url, {
    name: 'newcomer',
    initialDelayMs: 200,
    growFactor: 1.2,
    maxRetries: 100,
  });
}

describe('npm start: the embedded single-process server', () => {
  it('a newcomer’s first run: no broker; list the examples, call count, drop mid-stream, resume with Last-Event-ID, exact result', async () => {
    // The README's first block (readme-commands): `npm start` is the main job, `npm test` the suite.
    expect(markedBlock('README.md', 'readme-commands')).toMatch(
      /^npm install && npm start .*\nnpm test /,
    );
    const port = await reservePorts();
    const data = join(mkdtempSync(join(tmpdir(), 'tidemark-dev-')), 'state');
    const server = startDevServer('npm', [
      'start',
      '--silent',
      '--',
      '--port',
      String(port),
      '--data',
      data,
    ]);
    const endpoint = await server.url;
    // `npm start` also tells where the console is (test/console drives it in a browser).
    await expect
      .poll(() => server.output())
      .toContain(`Console: ${endpoint.replace(/\/mcp$/, '/console')}`);
    // The log holds every request and result, the secret signs event ids: the user's only.
    const mode = (path: string) => statSync(path).mode & 0o777;
    expect([mode(data), mode(join(data, 'log.sqlite')), mode(join(data, 'secret'))]).toEqual([
      0o700, 0o600, 0o600,
    ]);
    const proxy = await TcpProxy.start(port);
    onTestFinished(() => proxy.close());
    const client = await connect(`http://127.0.0.1:${proxy.port}/mcp`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'confirm_delete',
      'confirm_deploy',
      'count',
      'export_report',
      'flaky_count',
    ]);
    const progress: number[] = [];
    let dropped = false;
    const result = await client.callTool(
      { name: 'count', arguments: { to: 25, delayMs: 20 } },
      {
        onprogress: (p) => {
          progress.push(p.progress);
          if (p.progress === 8 && !dropped) {
            dropped = true;
            proxy.cut();
          }
        },
      },
    );
    expect(dropped).toBe(true);
    expect(progress).toEqual(numbers(25));
    expect(result.content).toEqual([{ type: 'text', text: numbers(25).join(',') }]);
  });

  it('the seed’s restart: kill -9 mid-call, start again on the same data — the session holds, the call re-runs as a new generation, the client is reset and gets the exact result', async () => {
    const port = await reservePorts();
    const data = mkdtempSync(join(tmpdir(), 'tidemark-dev-'));
    const args = devArgs(port, data);
    const first = startDevServer(process.execPath, args);
    const url = await first.url;
    const client = await connect(url);
    const resets: Array<{ reason: string; generation: string }> = [];
    client.fallbackNotificationHandler = (notification) => {
      if (notification.method === 'notifications/tidemark/reset')
        resets.push(notification.params as { reason: string; generation: string });
      return Promise.resolve();
    };
    const progress: number[] = [];
    let killed = false;
    let second: ReturnType<typeof startDevServer> | undefined;
    const result = await client.callTool(
      { name: 'count', arguments: { to: 30, delayMs: 40 } },
      {
        timeout: 120_000,
        onprogress: (p) => {
          progress.push(p.progress);
          if (p.progress === 10 && !killed) {
            killed = true;
            first.kill('SIGKILL');
            second = startDevServer(process.execPath, args);
          }
        },
      },
    );
    expect(killed).toBe(true);
    await second!.url;
    expect(resets.map((r) => r.reason)).toEqual(['generation-superseded']);
    expect(resets[0]!.generation).toMatch(/\.2$/);
    // What came after the reset is one whole execution, its numbering continuing where the first
    // stopped (progress never goes back on the wire), then its result.
    const after = progress.slice(-30);
    expect(after[0]).toBeGreaterThan(10);
    expect(after).toEqual(numbers(30).map((n) => after[0]! - 1 + n));
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]!);
    expect(result.content).toEqual([{ type: 'text', text: numbers(30).join(',') }]);
  });

  it('two processes on one data directory: the second is refused, naming the first and the way out', async () => {
    const portA = await reservePorts({ count: 2 });
    const portB = portA + 1;
    const data = mkdtempSync(join(tmpdir(), 'tidemark-dev-'));
    const first = startDevServer(process.execPath, devArgs(portA, data));
    await first.url;
    const second = startDevServer(process.execPath, devArgs(portB, data));
    const refusal = await second.url.then(
      () => 'served',
      (error: unknown) => String(error),
    );
    expect(refusal).toContain('exited (1)');
    expect(refusal).toContain(`in use by process ${first.child.pid} on `);
    expect(refusal).toContain('--data <dir>');
  });

  it('an official client with its default reconnection (two attempts, each after the retry hint) rides out a restart of dev', async () => {
    const port = await reservePorts();
    const data = mkdtempSync(join(tmpdir(), 'tidemark-dev-'));
    const args = devArgs(port, data);
    const first = startDevServer(process.execPath, args);
    const url = await first.url;
    const client = new Client({ name: 'defaults', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    onTestFinished(() => client.close());
    let second: ReturnType<typeof startDevServer> | undefined;
    let killed = false;
    const result = await client.callTool(
      { name: 'count', arguments: { to: 20, delayMs: 40 } },
      {
        timeout: 60_000,
        onprogress: (p) => {
          if (p.progress === 5 && !killed) {
            killed = true;
            first.kill('SIGKILL');
            // Back in ~2.5 s, as `npm start` on a laptop (the official clients' budget was 2 s).
            setTimeout(() => (second = startDevServer(process.execPath, args)), 1_500);
          }
        },
      },
    );
    expect(second).toBeDefined();
    expect(result.content).toEqual([{ type: 'text', text: numbers(20).join(',') }]);
  });

  it('the official Python client (mcp 2.3) with its default reconnection rides out the same restart', async () => {
    const port = await reservePorts();
    const args = devArgs(port, mkdtempSync(join(tmpdir(), 'tidemark-dev-')));
    const first = startDevServer(process.execPath, args);
    const url = await first.url;
    let killed = false;
    const client = startProcess(
      onTestFinished,
      pythonWithMcp(),
      [supportScript('python_client.py'), url, '20', '150'],
      {
        onEvent: (event) => {
          if (event['progress'] !== 5 || killed) return;
          killed = true;
          first.kill('SIGKILL');
          // Back in ~2.5 s, as `npm start` on a laptop.
          setTimeout(() => startDevServer(process.execPath, args), 1_500);
        },
      },
    );
    const final = await client.waitFor((e) => 'result' in e || 'error' in e, 60_000);
    expect(killed).toBe(true);
    expect(final).toEqual({ result: numbers(20).join(',') });
  });

  it('the official Go client (go-sdk 1.8) rides out the same restart', async () => {
    const port = await reservePorts();
    const args = devArgs(port, mkdtempSync(join(tmpdir(), 'tidemark-dev-')));
    const first = startDevServer(process.execPath, args);
    const url = await first.url;
    let killed = false;
    const call = ['call', url, 'count', JSON.stringify({ to: 20, delayMs: 150 }), '2025-11-25'];
    const client = startProcess(onTestFinished, goMcpClient(), call, {
      onEvent: (event) => {
        if (event['progress'] !== 5 || killed) return;
        killed = true;
        first.kill('SIGKILL');
        setTimeout(() => startDevServer(process.execPath, args), 1_500);
      },
    });
    const final = await client.waitFor((e) => 'result' in e || 'error' in e, 60_000);
    expect(killed).toBe(true);
    expect(final).toEqual({ result: numbers(20).join(','), isError: false });
  });

  it('sends the retry hint dev was given (default 3 s)', async () => {
    const [portA, portB] = [await reservePorts(), await reservePorts()];
    const hintOf = async (port: number, flags: string[]) => {
      const data = mkdtempSync(join(tmpdir(), 'tidemark-dev-'));
      const server = startDevServer(process.execPath, devArgs(port, data, ...flags));
      const response = await fetch(await server.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        }),
      });
      const text = await response.text();
      return /^retry: (\d+)$/m.exec(text)?.[1];
    };
    expect(await hintOf(portA, [])).toBe('3000');
    expect(await hintOf(portB, ['--sse-retry', '5s'])).toBe('5000');
  });

  it('a syntax error in a tool module points at the line: file:line:col and the source line with a caret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-typo-'));
    const failure = async (name: string, source: string) => {
      writeFileSync(join(dir, name), source);
      const args = devArgs(0, join(dir, `${name}.data`), '--tools', `./${name}`);
      return execFileAsync(process.execPath, args, { cwd: dir }).then(
        () => 'started',
        (error: { code: number; stderr: string }) => `${error.code}\n${error.stderr}`,
      );
    };
    const js = await failure('typo.mjs', 'export default (server) => {\n  const x = ;\n};\n');
    expect(js).toMatch(/^1\n/);
    expect(js).toContain(
      `at ${join(dir, 'typo.mjs')}:2:13\n  2 |   const x = ;\n    |             ^`,
    );
    const ts = await failure(
      'typo.ts',
      'export default (server: unknown) => {\n  const x: number = ;\n};\n',
    );
    expect(ts).toContain(`at ${join(dir, 'typo.ts')}:2:21\n  2 |   const x: number = ;`);
    // A .ts module in a CommonJS package: Node reads it as CommonJS; say what to change.
    const cjs = join(dir, 'cjs');
    mkdirSync(cjs);
    writeFileSync(join(cjs, 'package.json'), '{ "type": "commonjs" }');
    const hinted = await failure('cjs/tools.ts', 'export default (server: unknown) => {};\n');
    expect(hinted).toContain(
      'hint: a .ts tool module is loaded as an ES module: add "type": "module"',
    );
  });

  it('logs for a person when asked (stderr a terminal, or TIDEMARK_LOG_FORMAT=pretty), JSON otherwise', async () => {
    const logsOf = async (format: string) => {
      const server = startDevServer(
        process.execPath,
        devArgs(await reservePorts(), mkdtempSync(join(tmpdir(), 'tidemark-dev-'))),
        { env: { ...process.env, TIDEMARK_LOG_FORMAT: format, TIDEMARK_LOG_LEVEL: 'debug' } },
      );
      const client = await connect(await server.url);
      await client.listTools();
      await expect.poll(() => server.output()).toMatch(/execution started/);
      return server.output();
    };
    expect(await logsOf('pretty')).toMatch(
      /^\[[\d:.]+\] DEBUG \(tidemark-dev\): execution started$/m,
    );
    expect(await logsOf('json')).toMatch(/^\{"level":20,.*"msg":"execution started"\}$/m);
  });
});
