/**
 * Whether every event of a stream gets its own spans (the worker's produce, the gateway's receive
 * and SSE write). Off by default: a call's trace holds the request, the hops of its records into
 * and out of the log, and its terminal record's way to the client, while every event still carries
 * its trace context in its headers — per-event spans cost most of a traced process's throughput.
 * On with `setSpansPerEvent(true)` (the CLI's `--trace-events` or `TIDEMARK_TRACE_EVENTS=true`), to
 * follow single events.
 */
let everyEvent = false;

export function spansPerEvent(): boolean {
  return everyEvent;
}

export function setSpansPerEvent(on: boolean): void {
  everyEvent = on;
}
