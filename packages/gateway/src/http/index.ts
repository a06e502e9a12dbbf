/**
 * http/ — the gateway's HTTP policy: `HttpRefusals` is every refusal it answers (and
 * `http-answers.ts` the one writer of them), `http-guards.ts` the checks before a body is read,
 * `inbound.ts` what a body must be, `loopback.ts` what counts as this machine, `sse.ts` and
 * `sse-frames.ts` the one SSE writer. This index is also `@tidemark/gateway/http`, for the other
 * HTTP servers of a deployment (the console): no express, no log.
 */
export { HttpRefusals } from './http-refusals.js';
export type { HttpRefusal } from './http-refusals.js';
export {
  isLoopbackHost,
  isLoopbackOrigin,
  isLoopbackRequest,
  LOOPBACK_ADDRESSES,
} from './loopback.js';
export { sseComment, sseFrame } from './sse-frames.js';
