import {
  metrics,
  type Attributes,
  type Counter,
  type Gauge,
  type Histogram,
  type MeterProvider,
  type UpDownCounter,
} from '@opentelemetry/api';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_TIDEMARK_RESUME_OUTCOME,
  ATTR_TIDEMARK_RESUME_REASON,
} from './semconv.js';

export const METRIC_RESUME_OUTCOMES = 'tidemark.resume.outcomes';
export const METRIC_REPLAY_LENGTH = 'tidemark.resume.replay_length';
export const METRIC_SUPERSEDED_DROPPED = 'tidemark.delivery.superseded_dropped';
export const METRIC_DELIVERY_LAG = 'tidemark.delivery.lag';
export const METRIC_LIVE_STREAMS = 'tidemark.gateway.live_streams';
export const METRIC_TAIL_READERS = 'tidemark.gateway.tail_readers';
export const METRIC_LIVE_SESSIONS = 'tidemark.worker.live_sessions';
export const METRIC_REQUEST_QUEUE_LAG = 'tidemark.worker.request_queue_lag';
export const METRIC_TOOL_DURATION = 'tidemark.tool.duration';
export const METRIC_TOOL_RETRIES = 'tidemark.tool.retries';
export const METRIC_REFUSALS = 'tidemark.gateway.refusals';
export const METRIC_ASSIGNED_PARTITIONS = 'tidemark.worker.assigned_partitions';
export const METRIC_PARTITION_LAG = 'tidemark.worker.partition_lag';
export const METRIC_WORKER_SLOTS = 'tidemark.worker.slots';
export const METRIC_WORKER_LARGEST_SHARE = 'tidemark.worker.slots.largest_share';
export const METRIC_WORKER_REFUSALS = 'tidemark.worker.refusals';
export const METRIC_HANDOFF_CALLS = 'tidemark.worker.handoff.calls';

interface Instruments {
  resumes: Counter;
  replayLength: Histogram;
  superseded: Counter;
  deliveryLag: Histogram;
  liveStreams: UpDownCounter;
  tailReaders: UpDownCounter;
  liveSessions: UpDownCounter;
  queueLag: Histogram;
  toolDuration: Histogram;
  toolRetries: Counter;
  refusals: Counter;
  assignedPartitions: UpDownCounter;
  partitionLag: Gauge;
  slots: Gauge;
  largestShare: Gauge;
  workerRefusals: Counter;
  handoffCalls: Counter;
}

// The metrics API has no proxy: a meter taken before the process registers its SDK stays a no-op
// forever. So the instruments are made per provider, on first use after it changes.
let cached: { provider: MeterProvider; instruments: Instruments } | undefined;

function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (cached?.provider === provider) return cached.instruments;
  const meter = provider.getMeter('tidemark', '0.1.0');
  const instruments: Instruments = {
    resumes: meter.createCounter(METRIC_RESUME_OUTCOMES, {
      description: 'Resume decisions by outcome and reason',
    }),
    replayLength: meter.createHistogram(METRIC_REPLAY_LENGTH, {
      description: 'Events replayed by a resume before it reached the live stream',
      unit: '{event}',
    }),
    superseded: meter.createCounter(METRIC_SUPERSEDED_DROPPED, {
      description: 'Records of superseded generations dropped',
    }),
    deliveryLag: meter.createHistogram(METRIC_DELIVERY_LAG, {
      description: 'Live delivery lag: record timestamp to SSE write',
      unit: 's',
    }),
    liveStreams: meter.createUpDownCounter(METRIC_LIVE_STREAMS, {
      description: 'Live SSE streams',
    }),
    tailReaders: meter.createUpDownCounter(METRIC_TAIL_READERS, {
      description: 'Streams reading a partition of events through its shared tail',
    }),
    liveSessions: meter.createUpDownCounter(METRIC_LIVE_SESSIONS, {
      description: 'Sessions a worker holds a server for',
    }),
    queueLag: meter.createHistogram(METRIC_REQUEST_QUEUE_LAG, {
      description: 'Request queue lag: request record timestamp to the start of its processing',
      unit: 's',
    }),
    toolDuration: meter.createHistogram(METRIC_TOOL_DURATION, {
      description: 'Tool execution time',
      unit: 's',
    }),
    toolRetries: meter.createCounter(METRIC_TOOL_RETRIES, { description: 'Tool call retries' }),
    refusals: meter.createCounter(METRIC_REFUSALS, {
      description: 'Requests the gateway refused with a 4xx, by status and reason',
    }),
    assignedPartitions: meter.createUpDownCounter(METRIC_ASSIGNED_PARTITIONS, {
      description: 'Partitions of requests a worker reads (0 on every worker: nobody serves)',
    }),
    partitionLag: meter.createGauge(METRIC_PARTITION_LAG, {
      description: 'Requests waiting unread in a partition of requests (consumer lag, records)',
    }),
    slots: meter.createGauge(METRIC_WORKER_SLOTS, {
      description: 'Slots of a worker in use, by kind (call, task)',
    }),
    largestShare: meter.createGauge(METRIC_WORKER_LARGEST_SHARE, {
      description:
        'Slots of a kind held by the one subject holding the most (near the per-subject cap: one subject is taking its share)',
    }),
    workerRefusals: meter.createCounter(METRIC_WORKER_REFUSALS, {
      description: 'Requests a worker answered with an error instead of running, by reason',
    }),
    handoffCalls: meter.createCounter(METRIC_HANDOFF_CALLS, {
      description:
        'Calls running when a worker gave up a partition, by how they ended: finished by it, or taken over by the next owner',
    }),
  };
  cached = { provider, instruments };
  return instruments;
}

/** A request refused with a 4xx: which limit or check (`rate-limit`, `invalid-request`, …). */
export function recordRefusal(status: number, reason: string): void {
  instruments().refusals.add(1, {
    'http.response.status_code': status,
    'tidemark.refusal.reason': reason,
  });
}

/** One resume decision, by outcome and reason. */
export function recordResume(outcome: string, reason: string): void {
  instruments().resumes.add(1, {
    [ATTR_TIDEMARK_RESUME_OUTCOME]: outcome,
    [ATTR_TIDEMARK_RESUME_REASON]: reason,
  });
}

/** How many events a resume replayed before it was caught up with the live stream. */
export function recordReplayLength(events: number): void {
  instruments().replayLength.record(events);
}

/** Records of a superseded generation (a zombie worker) dropped instead of delivered. */
export function recordSupersededDropped(): void {
  instruments().superseded.add(1);
}

/** A live event written to its SSE stream, `lagMs` after its record was appended. */
export function recordDeliveryLag(lagMs: number): void {
  instruments().deliveryLag.record(Math.max(0, lagMs) / 1000);
}

/** An SSE stream opened (+1) or closed (-1) at a gateway. */
export function recordLiveStreams(delta: 1 | -1): void {
  instruments().liveStreams.add(delta);
}

/** A stream started (+1) or stopped (-1) reading a partition's shared tail. */
export function recordTailReaders(partition: number, delta: 1 | -1): void {
  instruments().tailReaders.add(delta, {
    [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(partition),
  });
}

/** A worker started (+1) or dropped (-1) a session's server. */
export function recordLiveSessions(delta: 1 | -1): void {
  instruments().liveSessions.add(delta);
}

/** A request's wait in the `requests` topic before a worker started processing it. */
export function recordRequestQueueLag(lagMs: number): void {
  instruments().queueLag.record(Math.max(0, lagMs) / 1000);
}

/** One execution of a tool, in seconds, and whether it failed. */
export function recordToolDuration(tool: string, seconds: number, failed: boolean): void {
  const attributes: Attributes = { [ATTR_GEN_AI_TOOL_NAME]: tool };
  if (failed) attributes['error.type'] = 'tool_error';
  instruments().toolDuration.record(seconds, attributes);
}

/** A retry of a tool call (the next execution is a new generation). */
export function recordToolRetry(tool: string): void {
  instruments().toolRetries.add(1, { [ATTR_GEN_AI_TOOL_NAME]: tool });
}

/** A worker was given (+1) or lost (-1) a partition of `requests`. */
export function recordAssignedPartitions(delta: 1 | -1): void {
  instruments().assignedPartitions.add(delta);
}

/** After a fetch: how many requests of the partition wait unread behind the worker's position. */
export function recordPartitionLag(partition: number, records: bigint): void {
  instruments().partitionLag.record(Number(records < 0n ? 0n : records), {
    [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(partition),
  });
}

/** A worker's slots of one kind changed hands: how many are in use, and the busiest subject's. */
export function recordSlots(kind: string, busy: number, largestShare: number): void {
  const attributes = { 'tidemark.slot.kind': kind };
  instruments().slots.record(busy, attributes);
  instruments().largestShare.record(largestShare, attributes);
}

/**
 * Calls that were running on a partition its worker gave up (`finished`: within the handoff
 * timeout; `taken-over`: they outlived it, and the next owner runs them again).
 */
export function recordHandoffCalls(outcome: 'finished' | 'taken-over', count: number): void {
  if (count > 0) instruments().handoffCalls.add(count, { 'tidemark.handoff.outcome': outcome });
}

/** A request a worker refused to run (`queued-per-subject`, …). */
export function recordWorkerRefusal(reason: string): void {
  instruments().workerRefusals.add(1, { 'tidemark.refusal.reason': reason });
}
