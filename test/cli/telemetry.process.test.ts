import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it, onTestFinished } from 'vitest';
import { RawMcpClient } from '@tidemark/fixtures/sse';

const bin = fileURLToPath(new URL('../../packages/cli/dist/bin.js', import.meta.url));

/**
 * Runs `tidemark dev`, initializes one session (and does `act` with it), stops it with SIGTERM;
 * resolves with what it printed.
 */
async function devRun(
  env: NodeJS.ProcessEnv,
  act: (client: RawMcpClient) => Promise<unknown> = () => Promise.resolve(),
  flags: string[] = [],
): Promise<string> {
  const child = spawn(
    process.execPath,
    [bin, 'dev', '--port', '0', '--data', mkdtempSync(join(tmpdir(), 'tidemark-otel-')), ...flags],
    {
      env: {
        ...process.env,
        OTEL_TRACES_EXPORTER: undefined,
        OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  while (!/MCP endpoint: (\S+)/.test(output))
    await new Promise((resolve) => setTimeout(resolve, 50));
  const client = new RawMcpClient(/MCP endpoint: (\S+)/.exec(output)![1]!);
  await client.initialize();
  await act(client);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return output;
}

it('boots the OpenTelemetry SDK from the OTEL_* variables: an HTTP server span, the service name per role, Kubernetes attributes', async () => {
  const output = await devRun({
    OTEL_TRACES_EXPORTER: 'console',
    K8S_POD_NAME: 'gateway-7f9c',
    K8S_NAMESPACE: 'mcp',
  });
  expect(output).toMatch(/name: 'POST'/);
  expect(output).toMatch(/'http.request.method': 'POST'/);
  expect(output).toMatch(/'service.name': 'tidemark-dev'/);
  expect(output).toMatch(/'k8s.pod.name': 'gateway-7f9c'/);
  expect(output).toMatch(/'k8s.namespace.name': 'mcp'/);
}, 60_000);

it('starts no SDK when no OTEL_* variable asks for one', async () => {
  const output = await devRun({});
  expect(output).not.toMatch(/traceId/);
}, 60_000);

it('writes JSON log lines stamped with the trace of the call they belong to', async () => {
  // A first execution's line is at debug (routine: every initialize, every tools/list).
  const output = await devRun(
    { OTEL_TRACES_EXPORTER: 'console', TIDEMARK_LOG_LEVEL: 'debug' },
    (client) => client.callCount(1, 2, 0),
  );
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('{"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const execution = lines.find((line) => line['msg'] === 'execution started')!;
  expect(execution).toMatchObject({
    name: 'tidemark-dev',
    level: 20,
    attempt: 1,
    cause: 'first',
    trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) as unknown,
  });
  // The same trace the console exporter printed for the tool call.
  expect(output).toContain(`traceId: '${String(execution['trace_id'])}'`);
}, 60_000);

it('--metrics-port serves Prometheus metrics without any OTEL_* variable: the metrics a dashboard reads', async () => {
  const metricsPort = await reservePort();
  let scraped = '';
  let fromOutside: unknown;
  // dev is for one machine: its metrics listen on loopback, not on the machine's other addresses.
  const outside = Object.values(networkInterfaces())
    .flat()
    .find((address) => address?.family === 'IPv4' && !address.internal)?.address;
  const output = await devRun(
    {},
    async (client) => {
      await client.callCount(1, 3, 0);
      scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      if (outside !== undefined)
        fromOutside = await fetch(`http://${outside}:${metricsPort}/metrics`).then(
          (response) => response.status,
          (error: unknown) => error,
        );
    },
    ['--metrics-port', String(metricsPort)],
  );
  expect(output).toContain(`Prometheus metrics: http://127.0.0.1:${metricsPort}/metrics`);
  if (outside !== undefined) expect(fromOutside).toBeInstanceOf(Error);
  expect(scraped).toMatch(/^# HELP tidemark_tool_duration/m);
  expect(scraped).toMatch(/^tidemark_gateway_live_streams/m);
  expect(scraped).toMatch(/target_info\{[^}]*service_name="tidemark-dev"/);
}, 60_000);

/** A free loopback port (the process binds it right after). */
function reservePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}
