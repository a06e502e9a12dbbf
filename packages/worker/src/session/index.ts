/**
 * session/ — the session lane (2025-11-25 and before). `SessionLane` dispatches a partition's
 * session records; a `SessionRuntime` is one session's SDK server over a `LogTransport`, running
 * its calls — each request handed to it once (`Delivery`), decided there; `SessionCache` keeps
 * them warm; `StandaloneStream` is what a session's server sends outside any call; `followJoined`
 * copies a joined keyed call into the request's own stream.
 */
export { SessionLane } from './session-lane.js';
