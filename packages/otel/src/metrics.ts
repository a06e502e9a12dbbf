import { metrics, type Attributes } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_TIDEMARK_RESUME_OUTCOME,
  ATTR_TIDEMARK_RESUME_REASON,
} from './semconv.js';

// Instruments are looked up at use, not held: the metrics API has no proxy, so a meter taken
// before the process registers its SDK would stay a no-op forever. The SDK dedupes by name.
const meter = () => metrics.getMeter('tidemark', '0.1.0');

export const METRIC_RESUME_OUTCOMES = 'tidemark.resume.outcomes';
export const METRIC_SUPERSEDED_DROPPED = 'tidemark.delivery.superseded_dropped';
export const METRIC_LIVE_STREAMS = 'tidemark.gateway.live_streams';
export const METRIC_TOOL_DURATION = 'tidemark.tool.duration';
export const METRIC_TOOL_RETRIES = 'tidemark.tool.retries';

/** One resume decision, by outcome and reason. */
export function recordResume(outcome: string, reason: string): void {
  meter()
    .createCounter(METRIC_RESUME_OUTCOMES, {
      description: 'Resume decisions by outcome and reason',
    })
    .add(1, { [ATTR_TIDEMARK_RESUME_OUTCOME]: outcome, [ATTR_TIDEMARK_RESUME_REASON]: reason });
}

/** Records of a superseded generation (a zombie worker) dropped instead of delivered. */
export function recordSupersededDropped(): void {
  meter()
    .createCounter(METRIC_SUPERSEDED_DROPPED, {
      description: 'Records of superseded generations dropped',
    })
    .add(1);
}

/** An SSE stream opened (+1) or closed (-1) at a gateway. */
export function recordLiveStreams(delta: 1 | -1): void {
  meter().createUpDownCounter(METRIC_LIVE_STREAMS, { description: 'Live SSE streams' }).add(delta);
}

/** One execution of a tool, in seconds, and whether it failed. */
export function recordToolDuration(tool: string, seconds: number, failed: boolean): void {
  const attributes: Attributes = {
    [ATTR_GEN_AI_TOOL_NAME]: tool,
    'error.type': failed ? 'tool_error' : undefined,
  };
  if (!failed) delete attributes['error.type'];
  meter()
    .createHistogram(METRIC_TOOL_DURATION, { description: 'Tool execution time', unit: 's' })
    .record(seconds, attributes);
}

/** A retry of a tool call (the next execution is a new generation). */
export function recordToolRetry(tool: string): void {
  meter()
    .createCounter(METRIC_TOOL_RETRIES, { description: 'Tool call retries' })
    .add(1, { [ATTR_GEN_AI_TOOL_NAME]: tool });
}
