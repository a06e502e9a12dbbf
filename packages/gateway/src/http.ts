// The gateway's HTTP policy, for the other HTTP servers of a deployment (the console): what counts
// as this machine, every refusal the gateway answers, and SSE framing. No express, no log.
export { HttpRefusals } from './http-refusals.js';
export type { HttpRefusal } from './http-refusals.js';
export {
  isLoopbackHost,
  isLoopbackOrigin,
  isLoopbackRequest,
  LOOPBACK_ADDRESSES,
} from './loopback.js';
export { sseComment, sseFrame } from './sse-frames.js';
