import { KafkaLog } from '@tidemark/kafka';
import {
  createKeyring,
  encodeEventId,
  newWorkerEpoch,
  partitionForSession,
  verifyEventId,
  type SessionId,
} from '@tidemark/protocol';
import { startDedicatedBroker } from '@tidemark/kafka-fixtures';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { callEnded, messages, whenLogged } from '@tidemark/fixtures/log-wait';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { TrackedClient, type CheckedCall } from './calls.js';
import { classify } from './checker.js';
import { Cluster, sleep, type ClusterOptions } from './cluster.js';

// The failure suite: named faults against real gateway and worker processes on a real broker,
// driven by the official SDK client. Every call is classified by the checker; none may be
// silently wrong or lost.

const brokers = inject('kafkaBrokers');

async function cluster(options: Omit<ClusterOptions, 'brokers'> & { brokers?: readonly string[] }) {
  const started = await Cluster.start({ brokers, ...options });
  onTestFinished(() => started.stop());
  return started;
}

async function client(c: Cluster, name = 'e2e'): Promise<TrackedClient> {
  const tracked = await TrackedClient.connect(c.url, name);
  onTestFinished(() => tracked.close());
  return tracked;
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 45_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The outcome, with what was seen when it is not the expected one (a useful failure message). */
const outcomeOf = (call: CheckedCall) =>
  call.verdict.outcome === 'exact' || call.verdict.outcome === 'reset'
    ? call.verdict.outcome
    : `${call.verdict.outcome}: ${call.verdict.why ?? ''} ${JSON.stringify(call.seen)}`;

/**
 * The outcome a fault of the gateways alone must leave: exact — unless the broker saw the worker
 * group change meanwhile (a worker on a loaded machine that missed its heartbeats lost and regained
 * its partitions: a takeover, and the client is then rightly reset). The test knows it killed no
 * worker; the broker, not the workers' own account, says whether a partition moved.
 */
function expectAfterGatewayFault(call: CheckedCall, membersBefore: string, membersAfter: string) {
  const seen = [outcomeOf(call), ...new Set(resetsOf(call))];
  if (membersBefore === membersAfter) expect(seen).toEqual(['exact']);
  else expect([['exact'], ['reset', 'generation-superseded']]).toContainEqual(seen);
}

/**
 * Starts a counting call whose client is held away (every connection cut, reconnects refused)
 * once it has seen progress `at`; `held` resolves then.
 */
function callHeldAt(
  c: Cluster,
  tracked: TrackedClient,
  at: number,
  options: { to: number; delayMs: number },
): { call: Promise<CheckedCall>; held: Promise<void> } {
  let held = false;
  const call = tracked.call({
    ...options,
    onProgress: (value) => {
      if (value === at && !held) {
        held = true;
        c.hold();
      }
    },
  });
  return { call, held: until(() => held, 'the client to be held') };
}

const resetsOf = (call: CheckedCall) =>
  call.seen.flatMap((s) => (s.kind === 'reset' ? [s.reason] : []));

describe('failure suite (real processes, official client, checker)', () => {
  it('1. worker failover mid-stream: the new worker counts from 1 again, and the client is told', async () => {
    const c = await cluster({ label: 'e2e-failover', workers: 2 });
    const tracked = await client(c);
    let killed: Promise<void> | undefined;
    const call = await tracked.call({
      to: 30,
      delayMs: 100,
      onProgress: (value) => {
        if (value === 8 && killed === undefined) killed = c.kill(c.runnerOf(tracked.session)!);
      },
    });
    await killed;
    expect(outcomeOf(call)).toBe('reset');
    expect(resetsOf(call)).toEqual(['generation-superseded']);
  });

  it('2. a retried invocation on the same worker (flaky_count): a reset, then the whole new execution', async () => {
    const c = await cluster({ label: 'e2e-retry' });
    const tracked = await client(c);
    const call = await tracked.call({
      tool: 'flaky_count',
      to: 10,
      delayMs: 20,
      extra: { failAt: 5, failAttempts: 2 },
    });
    expect(outcomeOf(call)).toBe('reset');
    expect(resetsOf(call)).toHaveLength(2);
  });

  it('3. gateway kill -9 mid-stream: the client resumes on another gateway, exactly', async () => {
    const c = await cluster({ label: 'e2e-gateway-kill', gateways: 2 });
    const tracked = await client(c);
    const [first, second] = c.gateways as [(typeof c.gateways)[0], (typeof c.gateways)[0]];
    const members = await c.workerMembers();
    let killed: Promise<void> | undefined;
    const call = await tracked.call({
      to: 30,
      delayMs: 50,
      onProgress: (value) => {
        if (value !== 10 || killed !== undefined) return;
        c.release(second);
        killed = c.kill(first);
      },
    });
    await killed;
    expectAfterGatewayFault(call, members, await c.workerMembers());
  });

  describe('4. eviction holes', () => {
    it('by deleteRecords while the client is away: a reset, then what the log still holds', async () => {
      const c = await cluster({ label: 'e2e-delete-records' });
      const tracked = await client(c);
      const log = new KafkaLog({ brokers });
      onTestFinished(() => log.close());
      const { call, held } = callHeldAt(c, tracked, 5, { to: 40, delayMs: 50 });
      await held;
      // The worker writes on past the client's last event (progress 5): five more.
      const partition = partitionForSession(tracked.session as SessionId, c.partitions);
      const { highWatermark } = await whenLogged(
        log,
        c.names.events,
        partition,
        tracked.session,
        (streams) => messages(streams) >= 10,
      );
      await log.deleteRecordsBefore(c.names.events, partition, highWatermark);
      c.release();
      const checked = await call;
      expect(outcomeOf(checked)).toBe('reset');
      expect(resetsOf(checked)).toEqual(['evicted']);
    });

    it('by retention (a short retention.ms) while the client is away: a reset, not a gap', async () => {
      const c = await cluster({
        label: 'e2e-retention',
        layout: { resumeWindowMs: 1_000, segmentMs: 200 },
      });
      const tracked = await client(c);
      const log = new KafkaLog({ brokers });
      onTestFinished(() => log.close());
      const { call, held } = callHeldAt(c, tracked, 3, { to: 60, delayMs: 100 });
      await held;
      const partition = partitionForSession(tracked.session as SessionId, c.partitions);
      const start = (await log.offsets(c.names.events, partition)).highWatermark;
      await until(
        async () => (await log.offsets(c.names.events, partition)).logStartOffset > start,
        'retention to delete the segments after the client’s last event',
      );
      c.release();
      const checked = await call;
      expect(outcomeOf(checked)).toBe('reset');
      expect(resetsOf(checked)).toContain('evicted');
    });
  });

  it('5. compaction of a (misconfigured) compacted events topic removes records of the stream: a reset, never a gap', async () => {
    // On a broker of its own: a misconfigured setup must not disturb the other suites' broker.
    const broker = await startDedicatedBroker();
    onTestFinished(() => broker.destroy());
    const brokers = broker.brokers;
    const c = await cluster({
      brokers,
      label: 'e2e-compacted',
      misconfiguredEvents: {
        'cleanup.policy': 'compact',
        'segment.ms': '100',
        'min.cleanable.dirty.ratio': '0.01',
        'min.compaction.lag.ms': '0',
      },
    });
    const tracked = await client(c);
    const log = new KafkaLog({ brokers });
    onTestFinished(() => log.close());
    // A long call: the cleaner only compacts rolled segments, and segments roll on appends.
    const { call, held } = callHeldAt(c, tracked, 3, { to: 5_000, delayMs: 50 });
    onTestFinished(async () => {
      await tracked.close();
      await call;
    });
    await held;
    const partition = partitionForSession(tracked.session as SessionId, c.partitions);
    const count = async () =>
      (await log.fetch(c.names.events, partition, 0n)).records.filter(
        (r) => r.key === tracked.session && r.offset < 10n,
      ).length;
    const before = await count();
    await until(async () => (await count()) < before, 'the cleaner to compact the stream', 100_000);
    c.release();
    // The client resumes into the compacted stream: it must be told before anything inconsistent.
    await until(
      () => tracked.inFlight()?.some((s) => s.kind === 'reset') ?? false,
      'the client to be reset',
    );
    const seen = [...(tracked.inFlight() ?? [])];
    const verdict = classify(5_000, [...seen, { kind: 'error', message: 'the test stops here' }]);
    expect({ outcome: verdict.outcome, why: verdict.why }).toEqual({
      outcome: 'errored',
      why: undefined,
    });
  }, 240_000);

  it('6. a finished stream whose events expired: a reset, then the result kept in its head', async () => {
    const c = await cluster({ label: 'e2e-terminal-evicted' });
    const tracked = await client(c);
    const log = new KafkaLog({ brokers });
    onTestFinished(() => log.close());
    const { call, held } = callHeldAt(c, tracked, 2, { to: 10, delayMs: 30 });
    await held;
    // The call finishes while the client is away.
    const partition = partitionForSession(tracked.session as SessionId, c.partitions);
    const { highWatermark } = await whenLogged(
      log,
      c.names.events,
      partition,
      tracked.session,
      callEnded,
    );
    await log.deleteRecordsBefore(c.names.events, partition, highWatermark);
    c.release();
    const checked = await call;
    expect(outcomeOf(checked)).toBe('reset');
    expect(resetsOf(checked)).toEqual(['terminal-evicted']);
  });

  it('7. claims beyond the tail, tampered, of another session and of an unknown generation: 400 naming the reason, nothing delivered', async () => {
    const c = await cluster({ label: 'e2e-invalid' });
    const raw = new RawMcpClient(c.url);
    await raw.initialize();
    const { ids } = await raw.callCount(1, 3, 0);
    const good = ids.at(-1)!;
    const keyring = createKeyring({ current: { id: 1, secret: Buffer.from(c.secret, 'hex') } });
    const verified = verifyEventId(good, {
      session: raw.session as SessionId,
      keyring,
      nowMs: Date.now(),
    });
    if (!verified.ok) throw new Error('the id the gateway minted does not verify');
    const { claim } = verified;
    const log = new KafkaLog({ brokers });
    onTestFinished(() => log.close());
    const position = {
      logIdentity: await log.identity(c.names.events),
      partition: claim.partition,
      stream: claim.stream,
    };
    const forge = (changes: Partial<Parameters<typeof encodeEventId>[0]>) =>
      encodeEventId(
        {
          ...position,
          offset: claim.offset,
          generation: claim.generation,
          seq: claim.seq,
          ...changes,
        },
        raw.session as SessionId,
        keyring,
      );
    const other = new RawMcpClient(c.url);
    await other.initialize();
    const cases: Array<[string, RawMcpClient, string, RegExp]> = [
      [
        'beyond the tail',
        raw,
        forge({ offset: claim.offset + 1000n, seq: claim.seq + 50 }),
        /beyond-tail/,
      ],
      [
        'tampered',
        raw,
        `${good.slice(0, 12)}${good[12] === 'A' ? 'B' : 'A'}${good.slice(13)}`,
        /mac-mismatch|malformed/,
      ],
      ['another session’s', other, good, /other-session/],
      [
        'an unknown generation',
        raw,
        forge({ generation: { epoch: newWorkerEpoch(), attempt: 1 } }),
        /unknown-generation/,
      ],
    ];
    for (const [what, who, id, reason] of cases) {
      const response = await who.resume(id);
      const body = await response.text();
      expect({ what, status: response.status }).toEqual({ what, status: 400 });
      expect(body).toMatch(reason);
      expect(body).not.toContain('notifications/progress');
    }
  });

  it('8. broker restart mid-stream: gateways and workers recover by themselves', async () => {
    const broker = await startDedicatedBroker();
    onTestFinished(() => broker.destroy());
    const c = await cluster({ label: 'e2e-broker-restart', brokers: broker.brokers });
    const tracked = await client(c);
    let restarted: Promise<void> | undefined;
    const call = await tracked.call({
      to: 30,
      delayMs: 100,
      timeoutMs: 180_000,
      onProgress: (value) => {
        if (value === 5 && restarted === undefined)
          restarted = broker
            .stop()
            .then(() => sleep(2_000))
            .then(() => broker.start());
      },
    });
    await restarted;
    // The call in flight rides it out: exact, or reset if its execution had to start again — not
    // an error (the broker was away for seconds; the call's timeout is minutes).
    expect(['exact', 'reset']).toContain(outcomeOf(call));
    // And without anyone restarting Tidemark, the next call is exact.
    const after = await client(c, 'after-restart');
    expect(outcomeOf(await after.call({ to: 10, delayMs: 10 }))).toBe('exact');
  }, 240_000);

  it('9. rebalance while calls are in flight: a worker joins, then one leaves', async () => {
    const c = await cluster({ label: 'e2e-rebalance', partitions: 4 });
    const clients = await Promise.all(Array.from({ length: 6 }, (_, i) => client(c, `r${i}`)));
    const calls = Promise.all(clients.map((t) => t.call({ to: 40, delayMs: 100 })));
    await sleep(1_000);
    await c.startWorker();
    await sleep(1_500);
    await c.kill(c.workers[0]!, 'SIGTERM');
    const checked = await calls;
    for (const call of checked) expect(['exact', 'reset']).toContain(outcomeOf(call));
  }, 120_000);

  it('10. reconnect storm: every client of a gateway drops at once and resumes on the other', async () => {
    const c = await cluster({ label: 'e2e-storm', gateways: 2, partitions: 4 });
    const clients = await Promise.all(Array.from({ length: 20 }, (_, i) => client(c, `s${i}`)));
    const members = await c.workerMembers();
    let seen = 0;
    let cut = false;
    const calls = Promise.all(
      clients.map((t) =>
        t.call({
          to: 30,
          delayMs: 60,
          onProgress: (value) => {
            if (value !== 5) return;
            if (++seen === clients.length && !cut) {
              cut = true;
              c.cut(c.gateways[1]);
            }
          },
        }),
      ),
    );
    const checked = await calls;
    expect(cut).toBe(true);
    // Exact, unless the broker saw a partition move (see expectAfterGatewayFault).
    const after = await c.workerMembers();
    for (const call of checked) expectAfterGatewayFault(call, members, after);
  }, 120_000);
});
