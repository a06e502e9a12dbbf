import type { ToolModule } from '@tidemark/tools';
import { sourceOccurrences, type RecordedOccurrence } from '@tidemark/worker/harness';

export interface EventSourceRunOptions {
  /** Stop after this many occurrences. Default 1. */
  count?: number;
  /** Resume from a position an earlier run returned. Default: start from now. */
  position?: string;
  /** Fail after this long without `count` occurrences. Default 10 s. */
  timeoutMs?: number;
}

/** What a source yielded, as the worker records it, and where a next run would resume. */
export interface EventSourceRun {
  readonly occurrences: ReadonlyArray<RecordedOccurrence>;
  readonly position: string | undefined;
}

/**
 * Runs one event type's source of a module the way the worker runs it — arguments and data
 * checked against the schemas, ids derived from positions — until `count` occurrences. A source
 * that yields too few in time fails the run, even one that does not honour its signal.
 *
 * @example
 * const run = await runEventSource(events, 'ticks', { everyMs: 10 }, { count: 3 });
 */
export async function runEventSource(
  module: ToolModule,
  name: string,
  args: unknown,
  options: EventSourceRunOptions = {},
): Promise<EventSourceRun> {
  const type = module.events?.find((event) => event.name === name);
  if (type === undefined) throw new TypeError(`${module.name} has no event type ${name}`);
  const count = options.count ?? 1;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const controller = new AbortController();
  const timedOut = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => {
      const error = new Error(`${name}: fewer than ${count} occurrences in ${timeoutMs} ms`);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
    controller.signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  });
  timedOut.catch(() => undefined);
  const occurrences: RecordedOccurrence[] = [];
  const run = sourceOccurrences(type, {
    arguments: args,
    position: options.position,
    signal: controller.signal,
  })[Symbol.asyncIterator]();
  try {
    while (occurrences.length < count) {
      const next = await Promise.race([run.next(), timedOut]);
      if (next.done === true)
        throw new Error(
          `${name}: the source ended after ${occurrences.length} of ${count} occurrences`,
        );
      occurrences.push(next.value);
    }
  } finally {
    controller.abort();
    void run.return?.(undefined);
  }
  return { occurrences, position: occurrences.at(-1)?.position ?? options.position };
}
