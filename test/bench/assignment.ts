// `npm run bench:assignment`: scale events at a size this machine cannot run as processes. Hundreds
// of members of one consumer group — each a real member on the next-generation protocol (KIP-848),
// joined through `KafkaLog.joinGroup` as a worker joins, heartbeating, taking assignments and
// acknowledging revocations, but running no worker — on a topic of thousands of partitions, with the
// broker's own assignor deciding. Members join and leave one at a time; per event, how many
// partitions changed owner against the fewest that could (the joiner's new share, the leaver's
// old one), and how long until every partition had exactly one owner again. Writes
// docs/benchmarks/assignment.json.
//
//   npm run bench:assignment              # 150 members, 1,500 partitions
//   npm run bench:assignment -- --smoke   # 20 members, 200 partitions
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { KafkaLog } from '@tidemark/kafka';
import { resolveKafka, uniqueTopicName } from '@tidemark/kafka-fixtures';
import type { GroupMembership } from '@tidemark/protocol';
import { machine } from './support.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks/assignment.json' },
  },
});
const smoke = values.smoke;
const MEMBERS = smoke ? 20 : 150;
const PARTITIONS = smoke ? 200 : 1_500;
/** Members share this many Kafka clients (connections), as if a few hosts ran them all. */
const LOGS = smoke ? 2 : 10;
const SCALE_EVENTS = smoke ? 2 : 4;
/** No assignment changed for this long: the group has settled. */
const QUIET_MS = 2_000;
const SETTLE_LIMIT_MS = 120_000;

interface Member {
  readonly id: number;
  readonly owned: Set<number>;
  membership?: GroupMembership;
}

interface Row {
  event: string;
  members: number;
  partitions: number;
  /** Partitions whose owner is not the one before the event. */
  moved: number;
  /** The fewest that had to move: the joiner's share now, or the leaver's before. */
  minimum: number;
  /** From the event to every partition having one owner, none changing for QUIET_MS (not counted). */
  settleMs: number;
  largestShare: number;
  smallestShare: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let lastChange = Date.now();

function join(log: KafkaLog, topic: string, group: string, member: Member): Promise<void> {
  return log
    .joinGroup({
      topic,
      group,
      onAssigned: (partitions) => {
        for (const p of partitions) member.owned.add(p);
        lastChange = Date.now();
      },
      onRevoked: (partitions) => {
        for (const p of partitions) member.owned.delete(p);
        lastChange = Date.now();
      },
    })
    .then((membership) => {
      member.membership = membership;
    });
}

/**
 * Who owns each partition now, when every partition has exactly one owner and the shares are as
 * even as they can be (what the broker's uniform assignor converges to); else undefined.
 */
function owners(members: readonly Member[]): number[] | undefined {
  const owner = new Array<number>(PARTITIONS).fill(-1);
  for (const member of members)
    for (const p of member.owned) {
      if (owner[p] !== -1) return undefined;
      owner[p] = member.id;
    }
  const shares = members.map((m) => m.owned.size);
  if (Math.max(...shares) - Math.min(...shares) > 1) return undefined;
  return owner.includes(-1) ? undefined : owner;
}

/**
 * Waits for one owner per partition, even shares and QUIET_MS without a change: the owners, and
 * the ms from `since` to the last change.
 */
async function settled(members: readonly Member[], since: number) {
  for (;;) {
    const owner = owners(members);
    if (owner !== undefined && Date.now() - lastChange >= QUIET_MS)
      return { owner, settleMs: Math.max(0, lastChange - since) };
    if (Date.now() - since > SETTLE_LIMIT_MS)
      throw new Error(`the group did not settle in ${SETTLE_LIMIT_MS} ms`);
    await sleep(100);
  }
}

function row(
  event: string,
  live: readonly Member[],
  before: number[],
  after: number[],
  minimum: number,
  settleMs: number,
): Row {
  const shares = live.map((m) => m.owned.size);
  const result: Row = {
    event,
    members: live.length,
    partitions: PARTITIONS,
    moved: after.filter((owner, p) => owner !== before[p]).length,
    minimum,
    settleMs,
    largestShare: Math.max(...shares),
    smallestShare: Math.min(...shares),
  };
  console.log(
    `${event}: ${result.members} members, ${result.moved} partitions moved (fewest possible ${minimum}), ` +
      `settled in ${(settleMs / 1000).toFixed(1)} s, shares ${result.smallestShare}–${result.largestShare}`,
  );
  return result;
}

async function run(brokers: readonly string[]): Promise<Row[]> {
  const topic = uniqueTopicName('assignment');
  const group = `${topic}.group`;
  const admin = new Admin({ clientId: 'tidemark-bench', bootstrapBrokers: [...brokers] });
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  const logs = Array.from(
    { length: LOGS },
    () => new KafkaLog({ brokers, groupSessionTimeoutMs: 10_000 }),
  );
  const members: Member[] = [];
  const live = () => members.filter((m) => m.membership !== undefined);
  const add = async () => {
    const member: Member = { id: members.length, owned: new Set() };
    members.push(member);
    await join(logs[member.id % LOGS]!, topic, group, member);
    return member;
  };
  try {
    const rows: Row[] = [];
    let since = Date.now();
    for (let i = 0; i < MEMBERS; i++) await add();
    let { owner, settleMs } = await settled(live(), since);
    rows.push(
      row('start', live(), new Array<number>(PARTITIONS).fill(-1), owner, PARTITIONS, settleMs),
    );
    for (let i = 0; i < SCALE_EVENTS; i++) {
      since = Date.now();
      const joined = await add();
      const before = owner;
      ({ owner, settleMs } = await settled(live(), since));
      rows.push(row('a member joins', live(), before, owner, joined.owned.size, settleMs));
    }
    for (let i = 0; i < SCALE_EVENTS; i++) {
      const leaving = live()[(i * 7) % live().length]!;
      const share = leaving.owned.size;
      since = Date.now();
      const membership = leaving.membership!;
      delete leaving.membership;
      await membership.leave();
      leaving.owned.clear();
      const before = owner;
      ({ owner, settleMs } = await settled(live(), since));
      rows.push(row('a member leaves', live(), before, owner, share, settleMs));
    }
    return rows;
  } finally {
    for (const member of live()) await member.membership?.leave().catch(() => undefined);
    for (const log of logs) await log.close();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.close();
  }
}

const kafka = await resolveKafka({ log: (line) => console.error(line) });
try {
  const rows = await run(kafka.brokers);
  writeFileSync(
    values.out,
    `${JSON.stringify({ machine: machine(), smoke, members: MEMBERS, partitions: PARTITIONS, rows }, null, 2)}\n`,
  );
} finally {
  await kafka.stop();
}
