// The worker's tools/call trip, counted: which of the runtime's files one call enters and how many
// functions it calls there (each returns once). A gateway and a worker on the embedded log in this
// process; V8's precise coverage (call counts) is reset after a warm-up call, then one `count`
// call of the session lane and one of the stateless lane are taken apart. Numbers, not assertions:
// `npm run bench:trip`, before and after a refactor of the worker (#34).
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import { createGateway } from '@tidemark/gateway';
import { createKeyring, statelessRequest, topicNames } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { parseArgs } from 'node:util';
import { machine, ROOT, round, writeResult } from './support.ts';

interface FunctionCoverage {
  functionName: string;
  ranges: Array<{ count: number }>;
}

/** Tidemark's runtime files: the worker and what it runs a call with. */
const RUNTIME = /packages\/(worker|tools|log|protocol|otel)\/dist\/(.+)\.js$/;

async function main(): Promise<void> {
  const inspector = new Session();
  inspector.connect();
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

  const log = new EmbeddedLog({ path: ':memory:' });
  const topics = topicNames('trip.');
  log.provisionTopics(topics, { partitions: 1 });
  const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
  const worker = new Worker({ log, topics, modules: [counting], pollMs: 5, keyring });
  await worker.start();
  const gateway = await createGateway({ log, topics, keyring, tailWaitMs: 20 });
  const server = await gateway.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;

  const lanes = { stateless: () => statelessCall(url), session: await sessionCaller(url) };
  const results: Record<string, unknown> = {};
  for (const [lane, call] of Object.entries(lanes)) {
    await call(); // warm-up: modules loaded, caches filled
    await inspector.post('Profiler.takePreciseCoverage'); // resets the counts
    await call();
    const { result } = (await inspector.post('Profiler.takePreciseCoverage')) as {
      result: Array<{ url: string; functions: FunctionCoverage[] }>;
    };
    results[lane] = tally(result);
  }
  await gateway.drain();
  await worker.stop();
  await log.close();
  inspector.disconnect();

  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  if (values.out !== undefined) writeResult(values.out, { machine: machine(), results });
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

/** Files entered and functions called per package, for one trip. */
function tally(scripts: Array<{ url: string; functions: FunctionCoverage[] }>) {
  const packages: Record<string, { files: number; calls: number; entered: string[] }> = {};
  for (const script of scripts) {
    const match = RUNTIME.exec(script.url.replace(/^file:\/\//, '').replace(ROOT, ''));
    if (match === null) continue;
    // The first range of a function is its whole body: its count is how often it was called.
    const calls = script.functions
      .filter((f) => f.functionName !== '')
      .reduce((sum, f) => sum + (f.ranges[0]?.count ?? 0), 0);
    if (calls === 0) continue;
    const entry = (packages[match[1]!] ??= { files: 0, calls: 0, entered: [] });
    entry.files += 1;
    entry.calls += calls;
    entry.entered.push(match[2]!);
  }
  for (const entry of Object.values(packages)) entry.entered.sort();
  return { ...packages, total: totals(packages) };
}

function totals(packages: Record<string, { files: number; calls: number }>) {
  const all = Object.values(packages);
  return {
    files: all.reduce((s, p) => s + p.files, 0),
    calls: round(all.reduce((s, p) => s + p.calls, 0)),
  };
}

const CLIENT = { clientInfo: { name: 'trip', version: '1' }, capabilities: {} };

async function statelessCall(url: string): Promise<void> {
  const { headers, body } = statelessRequest(
    'tools/call',
    { name: 'count', arguments: { to: 3 } },
    { ...CLIENT, name: 'count' },
  );
  const response = await fetch(url, { method: 'POST', headers, body });
  if (!(await response.text()).includes('"numbers"')) throw new Error('the call did not answer');
}

/** An initialized 2025-11-25 session, and a function that makes one call on it. */
async function sessionCaller(url: string): Promise<() => Promise<void>> {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
  };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: CLIENT.clientInfo },
    }),
  });
  const session = init.headers.get('mcp-session-id')!;
  await init.text();
  const withSession = {
    ...headers,
    'Mcp-Session-Id': session,
    'MCP-Protocol-Version': '2025-11-25',
  };
  await fetch(url, {
    method: 'POST',
    headers: withSession,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.text());
  let id = 1;
  return async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: withSession,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name: 'count', arguments: { to: 3 } },
      }),
    });
    if (!(await response.text()).includes('"numbers"')) throw new Error('the call did not answer');
  };
}

await main();
