// `npm run bench:fanout`: what each added gateway costs the brokers. The same total load — clients
// spread evenly over the gateways, each running calls that stream progress, on the session lane and
// on the stateless one (2026-07-28) — with 1, 2, 4 and 8
// gateway processes on one broker; per run, the records and bytes of `events` the gateways fetched
// against the events and bytes delivered to clients, and gateway CPU per delivered event. Session
// ids are random, so a gateway's streams land on most partitions and every gateway reads most of
// the topic: fetched ÷ delivered grows with the gateways. Writes docs/benchmarks/fanout.json.
//
//   npm run bench:fanout                # 1, 2, 4, 8 gateways; 48 sessions, 12 partitions
//   npm run bench:fanout -- --smoke     # 1 and 2 gateways; 8 sessions
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { Cluster, type Member } from '../e2e/cluster.ts';
import { RawMcpClient } from '../support/sse.ts';
import { rpcResponse, sseMessages } from '../support/task-client.ts';
import { machine, round } from './support.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks/fanout.json' },
  },
});
const smoke = values.smoke;
const GATEWAYS = smoke ? [1, 2] : [1, 2, 4, 8];
const SESSIONS = smoke ? 8 : 48;
const PARTITIONS = 12;
/** Each call: `count` to this, every PACE_MS — one progress event each, then the result. */
const EVENTS_PER_CALL = smoke ? 20 : 50;
const PACE_MS = 20;
const CALLS_PER_SESSION = smoke ? 2 : 4;

/** The session lane (a session per client), or the stateless one (2026-07-28: none). */
type Lane = 'session' | 'stateless';

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

/** One call of `count` on a lane; the messages it delivered. */
async function call(lane: Lane, client: RawMcpClient, url: string, id: number) {
  if (lane === 'session') return (await client.callCount(id, EVENTS_PER_CALL, PACE_MS)).messages;
  const response = await rpcResponse(
    url,
    'tools/call',
    { name: 'count', arguments: { to: EVENTS_PER_CALL, delayMs: PACE_MS } },
    { tasks: false, meta: { progressToken: `p${id}` } },
  );
  return sseMessages(await response.text());
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
    const clients: Array<{ client: RawMcpClient; url: string }> = [];
    for (let i = 0; i < SESSIONS; i++) {
      const url = `http://127.0.0.1:${cluster.gateways[i % gateways]!.port}/mcp`;
      const client = new RawMcpClient(url);
      if (lane === 'session') await client.initialize();
      clients.push({ client, url });
    }
    await sleep(1_000);
    const fetchedBefore = cluster.gateways.map(fetchedBy);
    const cpuBefore = cluster.gateways.map(cpuMs);
    let deliveredEvents = 0;
    let deliveredBytes = 0;
    await Promise.all(
      clients.map(async ({ client, url }) => {
        for (let id = 1; id <= CALLS_PER_SESSION; id++) {
          const messages = await call(lane, client, url, id);
          deliveredEvents += messages.length;
          for (const message of messages) deliveredBytes += JSON.stringify(message).length;
        }
      }),
    );
    await sleep(1_200); // the counters print every 500 ms
    const cpu = cluster.gateways.reduce((sum, g, i) => sum + cpuMs(g) - cpuBefore[i]!, 0);
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
  for (const lane of ['session', 'stateless'] as const)
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
        rows,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await kafka.stop();
}
