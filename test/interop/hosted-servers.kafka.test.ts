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
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
    return { action: 'accept', content: { random: 'from the user' } };
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

/** The pid of `worker`'s child process whose command line contains `marker`. */
function childOf(worker: (typeof workers)[number], marker: string): number {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(worker.process.child.pid)], {
    encoding: 'utf8',
  })
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0);
  const pid = children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker));
  if (pid === undefined) throw new Error(`no child of the worker runs ${marker}`);
  return pid;
}

describe('servers in three languages, hosted by two workers behind two gateways', () => {
  it('their tools are listed and called: Python, Go (a log message, an elicitation), TypeScript, FastMCP 4’s proxy (progress); their processes in the workers’ metrics', async () => {
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

    // Through FastMCP 4's proxy: its progress, every update in order.
    const progress: number[] = [];
    const proxied = await client.callTool(
      { name: 'fast_trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(textOf(proxied)).toMatch(/completed/i);
    expect(progress).toEqual([1, 2, 3]);
    const now = await client.callTool({
      name: 'time_get_current_time',
      arguments: { timezone: 'Europe/Paris' },
    });
    expect(now.structuredContent).toMatchObject({ timezone: 'Europe/Paris' });
    expect(textOf(await client.callTool({ name: 'go_greet', arguments: { name: 'Ada' } }))).toBe(
      'Hi Ada',
    );
    expect(
      textOf(await client.callTool({ name: 'ts_echo', arguments: { message: 'hi' } })),
    ).toMatch(/hi/);
    await client.callTool({ name: 'go_log', arguments: {} });
    expect(logged).toContainEqual(expect.objectContaining({ data: 'something happened!' }));
    // Each worker's metrics: its three servers' processes, their memory and CPU time.
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
    const elicited = await client.callTool({ name: 'go_elicit (form)', arguments: {} });
    expect(asked).toEqual(['provide a random string']);
    expect(textOf(elicited)).toBe('from the user');
  });

  it('a gateway killed -9 mid-call: resumed on the other, every progress once, the result', async () => {
    const proxy = await TcpProxy.start(gatewayPorts[0]!);
    onTestFinished(() => proxy.close());
    const { client, resets } = await connect(`http://127.0.0.1:${proxy.port}/mcp`);
    const progress: number[] = [];
    let killed = false;
    const result = await client.callTool(
      { name: LONG, arguments: { duration: 3, steps: 6 } },
      {
        timeout: 60_000,
        onprogress: (p) => {
          progress.push(p.progress);
          if (p.progress !== 2 || killed) return;
          killed = true;
          proxy.target = gatewayPorts[1]!;
          gateways[0]!.child.kill('SIGKILL');
        },
      },
    );
    expect(killed).toBe(true);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6]);
    expect(textOf(result)).toMatch(/completed/i);
    expect(resets).toEqual([]);
  });

  it('a worker killed -9 mid-call: the other runs it again, an explicit reset, then the result', async () => {
    const { client, resets } = await connect(gateway(1));
    const progress: number[] = [];
    const call = client.callTool(
      { name: LONG, arguments: { duration: 3, steps: 6 } },
      { timeout: 60_000, onprogress: (p) => progress.push(p.progress) },
    );
    const worker = await busyWorker();
    await expect.poll(() => progress.length, { timeout: 10_000 }).toBeGreaterThan(0);
    worker.process.child.kill('SIGKILL');
    const result = await call;
    expect(textOf(result)).toMatch(/completed/i);
    expect(resets.length).toBe(1);
    expect(rising(progress)).toBe(true);
    await startWorker();
  });

  it('its child process killed mid-call: run again on a copy started in its place', async () => {
    const { client, resets } = await connect(gateway(1));
    const progress: number[] = [];
    const call = client.callTool(
      { name: LONG, arguments: { duration: 2, steps: 4 } },
      { timeout: 60_000, onprogress: (p) => progress.push(p.progress) },
    );
    const worker = await busyWorker();
    await expect.poll(() => progress.length, { timeout: 10_000 }).toBeGreaterThan(0);
    process.kill(childOf(worker, 'server-everything'), 'SIGKILL');
    const result = await call;
    expect(textOf(result)).toMatch(/completed/i);
    // The progress it had sent was of a run superseded: said so, and never taken back.
    expect(resets).toHaveLength(1);
    expect(rising(progress)).toBe(true);
  });

  it('cancelled by its client: the call ends at once, in the audit trail as cancelled; each record names its server', async () => {
    const { client } = await connect(gateway(1));
    const cancel = new AbortController();
    const progress: number[] = [];
    const call = client.callTool(
      { name: LONG, arguments: { duration: 30, steps: 30 } },
      {
        signal: cancel.signal,
        onprogress: (p) => {
          progress.push(p.progress);
          if (p.progress === 2) cancel.abort(new Error('the user changed their mind'));
        },
      },
    );
    await expect(call).rejects.toThrow(/changed their mind/);
    // The next call is served at once: nothing is left holding the slot.
    expect(
      textOf(await client.callTool({ name: 'ts_echo', arguments: { message: 'after' } })),
    ).toMatch(/after/);
    // The audit trail says so, and how the calls before it ended, tool by tool.
    const audited = async () => {
      const audit = await runTidemark(['audit', '--since', '10m', ...common]);
      return audit.out.map(
        (line) => JSON.parse(line) as { tool: string; outcome: string; module?: string },
      );
    };
    await expect
      .poll(async () => (await audited()).filter((r) => r.tool === LONG).map((r) => r.outcome), {
        timeout: 15_000,
      })
      .toEqual(['answered', 'answered', 'answered', 'cancelled']);
    const records = await audited();
    expect(records.filter((r) => r.tool === 'go_elicit (form)')).toHaveLength(1);
    // Each record names the server that ran the call.
    expect(records.find((r) => r.tool === 'time_get_current_time')?.module).toBe('mcp-server:time');
    expect(records.find((r) => r.tool === LONG)?.module).toBe('mcp-server:ts');
  });
});
