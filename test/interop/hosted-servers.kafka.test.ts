// MCP servers nobody here wrote, in three languages, hosted by two `tidemark worker` processes
// behind two `tidemark gateway` processes on the real broker (issue #60): the official TypeScript
// reference server (@modelcontextprotocol/server-everything), the official Go SDK's example
// server (go-sdk's examples/server/everything) and the official Python time server
// (mcp-server-time, on the Python SDK's MCPServer) and FastMCP 4's proxy server (`fastmcp run`
// over an MCPConfig naming the reference server) — unmodified, as stdio processes. Through them,
// the official TypeScript client: listed, called, logging and eliciting, resumed exactly on the
// other gateway after a gateway kill -9, reset then exact after a worker kill -9, run again after
// its child process is killed, cancelled.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';
import { provisionTopics } from '@tidemark/kafka';
import { reservePorts, uniqueTopicName } from '@tidemark/kafka-fixtures';
import { runTidemark } from '../support/cli.js';
import { recordHosted, type HostedScenario, type ServerId } from './matrix.js';
import { goMcpEverything, pythonWithMcp } from '../support/prerequisites.js';

const brokers = inject('kafkaBrokers');
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'packages/cli/dist/bin.js');
const everything = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
);
const LONG = 'ts_trigger-long-running-operation';

interface Started {
  readonly child: ChildProcess;
  readonly output: () => string;
}

const started: ChildProcess[] = [];

/** `tidemark <args>`, once it printed `ready`. */
async function tidemark(args: string[], ready: RegExp): Promise<Started> {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`tidemark ${args[0]} not ready in 60 s:\n${output}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) =>
      reject(new Error(`tidemark ${args[0]} exited ${code}:\n${output}`)),
    );
  });
  return { child, output: () => output };
}

const prefix = `${uniqueTopicName('hosted')}.`;
const common = ['--brokers', brokers.join(','), '--prefix', prefix];
let gatewayPorts: number[] = [];
let gateways: Started[] = [];
const workers: Array<{ process: Started; metricsPort: number }> = [];
let secretFile = '';
let fastConfig = '';
/** FastMCP's command, installed beside the Python SDK (test/interop/python/requirements.txt). */
const fastmcp = () => join(dirname(pythonWithMcp()), 'fastmcp');

async function startWorker(): Promise<void> {
  const metricsPort = await reservePorts();
  const process_ = await tidemark(
    [
      'worker',
      ...['--secret-file', secretFile, '--group', `${prefix}workers`],
      ...['--group-session-timeout', '6s', '--metrics-port', String(metricsPort)],
      ...['--mcp-server-processes', '1', '--mcp-server-prefix'],
      ...['--mcp-server', `ts=${process.execPath} ${everything} stdio`],
      ...['--mcp-server', `go=${goMcpEverything()}`],
      ...['--mcp-server', `time=${pythonWithMcp()} -m mcp_server_time`],
      // FastMCP 4's own proxy server (`fastmcp run <MCPConfig>`) in front of the reference server.
      ...['--mcp-server', `fast=${fastmcp()} run ${fastConfig} --transport stdio --no-banner`],
      ...common,
    ],
    /worker \w+ started/,
  );
  workers.push({ process: process_, metricsPort });
}

beforeAll(async () => {
  await provisionTopics({ brokers: [...brokers] }, { prefix, partitions: 2, replicationFactor: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-hosted-'));
  secretFile = join(dir, 'secret');
  fastConfig = join(dir, 'mcp.json');
  writeFileSync(
    fastConfig,
    JSON.stringify({
      mcpServers: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
    }),
  );
  writeFileSync(secretFile, randomBytes(32).toString('hex'));
  gatewayPorts = [await reservePorts(), await reservePorts()];
  [gateways] = await Promise.all([
    Promise.all(
      gatewayPorts.map((port) =>
        tidemark(
          [
            'gateway',
            ...['--auth', 'none', '--port', String(port), '--host', '127.0.0.1'],
            ...['--secret-file', secretFile, '--console', 'off', '--group', `${prefix}gateways`],
            ...common,
          ],
          /gateway listening on port/,
        ),
      ),
    ),
    startWorker(),
    startWorker(),
  ]);
}, 120_000);

afterAll(async () => {
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  const admin = new Admin({ clientId: 'tidemark-test-cleanup', bootstrapBrokers: [...brokers] });
  try {
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
  } finally {
    await admin.close();
  }
});

interface Connected {
  readonly client: Client;
  readonly resets: string[];
  readonly logged: unknown[];
  readonly asked: string[];
}

/** The official client, able to answer an elicitation, recording resets and log messages. */
async function connect(url: string): Promise<Connected> {
  const client = new Client(
    { name: 'hosted-kafka', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  const seen: Connected = { client, resets: [], logged: [], asked: [] };
  client.fallbackNotificationHandler = (notification) => {
    if (notification.method === 'notifications/tidemark/reset')
      seen.resets.push(String((notification.params as { reason?: unknown }).reason));
    return Promise.resolve();
  };
  client.setNotificationHandler('notifications/message', (n) => void seen.logged.push(n.params));
  client.setRequestHandler('elicitation/create', (request) => {
    seen.asked.push(request.params.message);
    // The Go server asks for one string; the reference server for a form (name, agreement, …).
    const content = request.params.message.includes('random string')
      ? { random: 'from the user' }
      : { name: 'Ada Lovelace', check: true, integer: 7 };
    return { action: 'accept', content };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      reconnectionOptions: {
        initialReconnectionDelay: 100,
        maxReconnectionDelay: 500,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: 50,
      },
    }),
  );
  onTestFinished(() => client.close().catch(() => undefined));
  return seen;
}

const gateway = (i: number) => `http://127.0.0.1:${gatewayPorts[i]}/mcp`;
const textOf = (result: { content?: unknown }) =>
  (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
const rising = (values: readonly number[]) => values.every((v, i) => i === 0 || v > values[i - 1]!);

/** The worker whose call slot is in use (its metrics say), once one is. */
async function busyWorker(): Promise<(typeof workers)[number]> {
  for (let i = 0; i < 100; i++) {
    for (const worker of workers) {
      const { exitCode, signalCode } = worker.process.child;
      if (exitCode !== null || signalCode !== null) continue;
      const text = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
      const busy = /^tidemark_worker_slots\{[^}]*tidemark_slot_kind="call"[^}]*\} (\d+)/m.exec(
        text,
      );
      if (Number(busy?.[1] ?? 0) > 0) return worker;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no worker reports a call running');
}

/** The pid of `worker`'s child process whose command line contains `marker` (one `ps`: atomic). */
function childOf(worker: (typeof workers)[number], marker: string): number {
  const line = execFileSync(
    'ps',
    ['-o', 'pid=,args=', '--ppid', String(worker.process.child.pid)],
    {
      encoding: 'utf8',
    },
  )
    .split('\n')
    .find((l) => l.includes(marker));
  if (line === undefined) throw new Error(`no child of the worker runs ${marker}`);
  return Number(line.trim().split(/\s+/)[0]);
}

/** The long tool of the reference server, straight (`ts`) and through FastMCP's proxy (`fast`). */
const LONG_OF = { ts: LONG, fast: 'fast_trigger-long-running-operation' } as const;
type LongServer = keyof typeof LONG_OF;
const BOTH: readonly LongServer[] = ['ts', 'fast'];

/** One long call per server on `client`, side by side: its progress as it comes, its end. */
function longCalls(client: Client, steps: number, options: { signal?: AbortSignal } = {}) {
  return BOTH.map((server) => {
    const progress: number[] = [];
    const ended = client.callTool(
      { name: LONG_OF[server], arguments: { duration: steps / 2, steps } },
      { timeout: 60_000, onprogress: (p) => progress.push(p.progress), ...options },
    );
    return { server, progress, ended };
  });
}

const works = (server: ServerId, scenario: HostedScenario, seen: string) =>
  recordHosted({ server, scenario, outcome: 'works', seen });

describe('servers in four kinds, hosted by two workers behind two gateways', () => {
  it('their tools are listed and called, with progress, log messages and elicitations; their processes in the workers’ metrics', async () => {
    const { client, logged, asked } = await connect(gateway(0));
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'time_get_current_time',
        'go_greet',
        'go_log',
        'ts_echo',
        LONG,
        'fast_echo',
      ]),
    );
    const time = tools.find((t) => t.name === 'time_get_current_time');
    expect(time?.inputSchema).toMatchObject({ properties: { timezone: { type: 'string' } } });
    const now = await client.callTool({
      name: 'time_get_current_time',
      arguments: { timezone: 'Europe/Paris' },
    });
    expect(now.structuredContent).toMatchObject({ timezone: 'Europe/Paris' });
    works('time', 'listed', 'listed with its schemas; structured content');
    expect(textOf(await client.callTool({ name: 'go_greet', arguments: { name: 'Ada' } }))).toBe(
      'Hi Ada',
    );
    works('go', 'listed', 'listed, called');
    for (const server of BOTH) {
      const echoed = await client.callTool({
        name: `${server}_echo`,
        arguments: { message: 'hi' },
      });
      expect(textOf(echoed)).toMatch(/hi/);
      works(server, 'listed', 'listed with its schemas, called');
    }
    // Progress, straight and through FastMCP's proxy: every update in order.
    for (const call of longCalls(client, 3)) {
      expect(textOf(await call.ended)).toMatch(/completed/i);
      expect(call.progress).toEqual([1, 2, 3]);
      works(call.server, 'progress', 'every update in order');
    }
    await client.callTool({ name: 'go_log', arguments: {} });
    expect(logged).toContainEqual(expect.objectContaining({ data: 'something happened!' }));
    works('go', 'log', 'its log message reached the client');
    const elicited = await client.callTool({ name: 'go_elicit (form)', arguments: {} });
    expect(textOf(elicited)).toBe('from the user');
    works('go', 'input', 'asked once, answered, its result');
    const form = await client.callTool({ name: 'ts_trigger-elicitation-request', arguments: {} });
    expect(JSON.stringify(form.content)).toContain('Ada Lovelace');
    works('ts', 'input', 'asked once, answered, its result');
    expect(asked).toEqual(['provide a random string', expect.stringMatching(/Please provide/)]);
    // FastMCP's proxy does not pass the reference server's elicitation on: its result says why.
    const proxied = await client.callTool({
      name: 'fast_trigger-elicitation-request',
      arguments: {},
    });
    expect(proxied.isError).toBe(true);
    expect(textOf(proxied)).toMatch(/no back-channel/);
    expect(asked).toHaveLength(2);
    recordHosted({
      server: 'fast',
      scenario: 'input',
      outcome: 'limit',
      owner: 'server',
      seen: 'the proxy does not pass the elicitation of the server behind it on (its Python SDK: "no back-channel for server-initiated requests"); the call ends with that error',
    });

    // Each worker's metrics: its servers' processes, their memory and CPU time.
    const metrics = await (
      await fetch(`http://127.0.0.1:${workers[0]!.metricsPort}/metrics`)
    ).text();
    for (const server of ['ts', 'go', 'time', 'fast']) {
      const of = (name: string) =>
        Number(
          new RegExp(
            `^${name}\\{[^}]*tidemark_hosted_server="${server}"[^}]*\\} ([\\d.e+]+)`,
            'm',
          ).exec(metrics)?.[1],
        );
      expect(of('tidemark_worker_hosted_processes')).toBe(1);
      expect(of('tidemark_worker_hosted_memory')).toBeGreaterThan(1_000_000);
      // A Go server idle since its start may have used less than the clock's tick; Python's start not.
      const cpu = of('tidemark_worker_hosted_cpu_time_total');
      expect(cpu).toBeGreaterThanOrEqual(server === 'time' || server === 'fast' ? 0.01 : 0);
    }
  });

  it('a gateway killed -9 mid-call: resumed on the other, every progress once, the result', async () => {
    const proxy = await TcpProxy.start(gatewayPorts[0]!);
    onTestFinished(() => proxy.close());
    const { client, resets } = await connect(`http://127.0.0.1:${proxy.port}/mcp`);
    const calls = longCalls(client, 6);
    await expect
      .poll(() => calls.every((c) => c.progress.length >= 2), { timeout: 10_000 })
      .toBe(true);
    proxy.target = gatewayPorts[1]!;
    gateways[0]!.child.kill('SIGKILL');
    for (const call of calls) {
      expect(textOf(await call.ended)).toMatch(/completed/i);
      expect(call.progress).toEqual([1, 2, 3, 4, 5, 6]);
      works(
        call.server,
        'gateway-kill',
        'resumed on the other gateway: every update once, the result',
      );
    }
    expect(resets).toEqual([]);
  });

  it('a worker killed -9 mid-call: the other runs it again, an explicit reset, then the result', async () => {
    const { client, resets } = await connect(gateway(1));
    const calls = longCalls(client, 6);
    const worker = await busyWorker();
    await expect
      .poll(() => calls.every((c) => c.progress.length > 0), { timeout: 10_000 })
      .toBe(true);
    worker.process.child.kill('SIGKILL');
    for (const call of calls) {
      expect(textOf(await call.ended)).toMatch(/completed/i);
      expect(rising(call.progress)).toBe(true);
      works(call.server, 'worker-kill', 'one reset, progress never went back, the result');
    }
    // One reset per call (both ran on the killed worker: one session, one partition).
    expect(resets).toHaveLength(2);
    await startWorker();
  });

  it('its process killed mid-call: run again on a copy started in its place', async () => {
    const { client, resets } = await connect(gateway(1));
    const calls = longCalls(client, 4);
    const worker = await busyWorker();
    await expect
      .poll(() => calls.every((c) => c.progress.length > 0), { timeout: 10_000 })
      .toBe(true);
    process.kill(childOf(worker, 'server-everything'), 'SIGKILL');
    process.kill(childOf(worker, 'fastmcp'), 'SIGKILL');
    for (const call of calls) {
      expect(textOf(await call.ended)).toMatch(/completed/i);
      // The progress it had sent was of a run superseded: said so, and never taken back.
      expect(rising(call.progress)).toBe(true);
      works(call.server, 'child-kill', 'run again on a new process: one reset, the result');
    }
    expect(resets).toHaveLength(2);
  });

  it('cancelled by its client: the call ends at once, in the audit trail as cancelled; each record names its server', async () => {
    const { client } = await connect(gateway(1));
    const cancel = new AbortController();
    const calls = longCalls(client, 60, { signal: cancel.signal });
    await expect
      .poll(() => calls.every((c) => c.progress.length >= 1), { timeout: 10_000 })
      .toBe(true);
    cancel.abort(new Error('the user changed their mind'));
    for (const call of calls) await expect(call.ended).rejects.toThrow(/changed their mind/);
    // The next call is served at once: nothing is left holding the slot.
    expect(
      textOf(await client.callTool({ name: 'ts_echo', arguments: { message: 'after' } })),
    ).toMatch(/after/);
    const audited = async () => {
      const audit = await runTidemark(['audit', '--since', '10m', ...common]);
      return audit.out.map(
        (line) => JSON.parse(line) as { tool: string; outcome: string; module?: string },
      );
    };
    for (const server of BOTH) {
      await expect
        .poll(
          async () =>
            (await audited()).filter((r) => r.tool === LONG_OF[server]).map((r) => r.outcome),
          { timeout: 15_000 },
        )
        .toEqual(['answered', 'answered', 'answered', 'answered', 'cancelled']);
      works(server, 'cancel', 'ended at once; audited as cancelled');
    }
    const records = await audited();
    expect(records.filter((r) => r.tool === 'go_elicit (form)')).toHaveLength(1);
    // Each record names the server that ran the call.
    expect(records.find((r) => r.tool === 'time_get_current_time')?.module).toBe('mcp-server:time');
    expect(records.find((r) => r.tool === LONG)?.module).toBe('mcp-server:ts');
    expect(records.find((r) => r.tool === LONG_OF.fast)?.module).toBe('mcp-server:fast');
  });
});
