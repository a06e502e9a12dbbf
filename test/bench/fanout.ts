// `npm run bench:fanout`: what each added gateway costs the brokers. The same total load — clients
// spread evenly over the gateways, each running calls that stream progress — with 1, 2, 4 and 8
// gateway processes on one broker, on three lanes: sessions (initialize on one gateway, every
// follow-up where an ingress hashing the session id's partition tag sends it), stateless
// 2026-07-28 calls (round robin, no affinity), and tasks (created round robin, their events read
// with `tasks/stream` where the ingress hashes the task id in `Mcp-Name`). Per run: the records and
// bytes of `events` the gateways fetched against the events and bytes delivered to clients, and
// gateway CPU per delivered event. The gateways share out the partitions in their group and mint
// keys onto their own share, so each reads about its share. Writes docs/benchmarks/fanout.json.
//
//   npm run bench:fanout                # 1, 2, 4, 8 gateways; 48 clients, 12 partitions
//   npm run bench:fanout -- --smoke     # 2 gateways; 8 clients
import { readFileSync, writeFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { Cluster, type Member } from '../e2e/cluster.ts';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { rpc, rpcResponse, sseMessages } from '@tidemark/fixtures/task-client';
import { machine, round } from './support.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks/fanout.json' },
  },
});
const smoke = values.smoke;
const GATEWAYS = smoke ? [2] : [1, 2, 4, 8];
/** Clients: each a session (session lane), or a caller of one call at a time. */
const SESSIONS = smoke ? 8 : 48;
const PARTITIONS = 12;
/** Each call: `count` to this, every PACE_MS — one progress event each, then the result. */
const EVENTS_PER_CALL = smoke ? 20 : 50;
const PACE_MS = 20;
const CALLS_PER_SESSION = smoke ? 2 : 4;

/** The session lane (a session per client), the stateless one (2026-07-28), or its tasks. */
type Lane = 'session' | 'stateless' | 'tasks';
const LANES: readonly Lane[] = ['session', 'stateless', 'tasks'];

interface Row {
  lane: Lane;
  gateways: number;
  deliveredEvents: number;
  deliveredBytes: number;
  fetchedRecords: number;
  fetchedBytes: number;
  /** Records of `events` the gateways fetched per event delivered to a client. */
  recordsPerEvent: number;
  bytesPerByte: number;
  gatewayCpuMsPerEvent: number;
  /** How long the calls took, from the first sent to the last answered. */
  seconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** User + system CPU of a process so far, ms (Linux `/proc`). */
function cpuMs(member: Member): number {
  const stat = readFileSync(`/proc/${member.process.child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function fetchedBy(member: Member): { records: number; bytes: number } {
  const last = member.process.events.findLast((e) => e['fetched'] !== undefined);
  return (
    (last?.['fetched'] as { records: number; bytes: number } | undefined) ?? {
      records: 0,
      bytes: 0,
    }
  );
}

/**
 * Where an ingress that hashes a key's first four characters (its partition tag, docs/scaling.md)
 * sends a follow-up: nginx's `hash` is CRC32 too; a consistent ring maps differently, but as
 * stably.
 */
function ingress(urls: readonly string[], key: string): string {
  return urls[crc32(key.slice(0, 4)) % urls.length]!;
}

const countArgs = { name: 'count', arguments: { to: EVENTS_PER_CALL, delayMs: PACE_MS } };

/** One call of `count` on a lane, the first request sent to `url`; the messages it delivered. */
async function call(
  lane: Lane,
  client: RawMcpClient,
  url: string,
  urls: readonly string[],
  id: number,
) {
  if (lane === 'session') {
    const follow = new RawMcpClient(ingress(urls, client.session), client.session);
    return (await follow.callCount(id, EVENTS_PER_CALL, PACE_MS)).messages;
  }
  const meta = { meta: { progressToken: `p${id}` } };
  if (lane === 'stateless') {
    const response = await rpcResponse(url, 'tools/call', countArgs, { tasks: false, ...meta });
    return sseMessages(await response.text());
  }
  const created = await rpc(url, 'tools/call', countArgs, meta);
  const taskId = String(created.body.result?.['taskId']);
  const streamed = await rpc(ingress(urls, taskId), 'tasks/stream', { taskId });
  return sseMessages(streamed.text);
}

/** Waits until the gateways' shares of the partitions are disjoint and cover them all. */
async function sharedOut(gateways: readonly Member[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const shares = gateways.map(
      (g) =>
        (g.process.events.findLast((e) => e['keyPartitions'] !== undefined)?.['keyPartitions'] ??
          []) as number[],
    );
    const all = shares.flat();
    if (
      shares.every((s) => s.length > 0) &&
      new Set(all).size === all.length &&
      all.length === PARTITIONS
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`partitions not shared out: ${JSON.stringify(shares)}`);
    await sleep(200);
  }
}

async function run(brokers: readonly string[], lane: Lane, gateways: number): Promise<Row> {
  const cluster = await Cluster.start({
    brokers,
    label: 'fanout',
    partitions: PARTITIONS,
    gateways,
    workers: 2,
  });
  try {
    await sharedOut(cluster.gateways);
    const urls = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}/mcp`);
    const clients: RawMcpClient[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const client = new RawMcpClient(urls[i % gateways]!);
      if (lane === 'session') await client.initialize();
      clients.push(client);
    }
    await sleep(1_000);
    const fetchedBefore = cluster.gateways.map(fetchedBy);
    const cpuBefore = cluster.gateways.map(cpuMs);
    let deliveredEvents = 0;
    let deliveredBytes = 0;
    const started = performance.now();
    await Promise.all(
      clients.map(async (client, i) => {
        for (let id = 1; id <= CALLS_PER_SESSION; id++) {
          // Stateless calls and task creations go round robin; a session's initialize stays put.
          const url = lane === 'session' ? client.url : urls[(i + id) % gateways]!;
          const messages = await call(lane, client, url, urls, id);
          deliveredEvents += messages.length;
          for (const message of messages) deliveredBytes += JSON.stringify(message).length;
        }
      }),
    );
    const seconds = round((performance.now() - started) / 1000, 2);
    const cpu = cluster.gateways.reduce((sum, g, i) => sum + cpuMs(g) - cpuBefore[i]!, 0);
    await sleep(1_200); // the fetch counters print every 500 ms
    const fetched = cluster.gateways.map(fetchedBy).reduce(
      (sum, f, i) => ({
        records: sum.records + f.records - fetchedBefore[i]!.records,
        bytes: sum.bytes + f.bytes - fetchedBefore[i]!.bytes,
      }),
      { records: 0, bytes: 0 },
    );
    const row: Row = {
      lane,
      gateways,
      deliveredEvents,
      deliveredBytes,
      fetchedRecords: fetched.records,
      fetchedBytes: fetched.bytes,
      recordsPerEvent: round(fetched.records / deliveredEvents, 2),
      bytesPerByte: round(fetched.bytes / deliveredBytes, 2),
      gatewayCpuMsPerEvent: round(cpu / deliveredEvents, 3),
      seconds,
    };
    console.log(
      `${lane} lane, ${gateways} gateway(s): ${deliveredEvents} events delivered; gateways fetched ` +
        `${row.recordsPerEvent} records per event, ${row.bytesPerByte} bytes per byte delivered; ` +
        `${row.gatewayCpuMsPerEvent} gateway CPU ms per event`,
    );
    return row;
  } finally {
    await cluster.stop();
  }
}

process.env['TIDEMARK_TEST_COUNT_FETCHES'] = '1';
const kafka = await resolveKafka({ log: (line) => console.error(line) });
try {
  const rows: Row[] = [];
  for (const lane of LANES)
    for (const gateways of GATEWAYS) rows.push(await run(kafka.brokers, lane, gateways));
  writeFileSync(
    values.out,
    `${JSON.stringify(
      {
        machine: machine(),
        smoke,
        sessions: SESSIONS,
        partitions: PARTITIONS,
        eventsPerCall: EVENTS_PER_CALL,
        callsPerClient: CALLS_PER_SESSION,
        paceMs: PACE_MS,
        rows,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await kafka.stop();
}
