import type { IncomingMessage } from 'node:http';

// What counts as "this machine", in one place: the gateway's Host and Origin checks, its rate-limit
// exemption, and the console's this-machine-only rule all ask here.

/** Peer addresses of this machine as Node reports them (IPv4, IPv6, IPv4-mapped IPv6). */
export const LOOPBACK_ADDRESSES: ReadonlySet<string> = new Set([
  '127.0.0.1',
  '::1',
  '::ffff:127.0.0.1',
]);

const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

/**
 * Whether a `Host` header (`localhost:3000`, `[::1]:3000`) or a listening address (`::1`) names
 * this machine.
 */
export function isLoopbackHost(host: string): boolean {
  if (host === '::1') return true;
  return LOOPBACK_NAMES.has(host.replace(/:\d+$/, '').toLowerCase());
}

/** Whether an `Origin` header is a page served from this machine. */
export function isLoopbackOrigin(origin: string): boolean {
  return LOOPBACK_ORIGIN.test(origin);
}

/**
 * A request from this machine to this machine: a loopback peer and a loopback `Host` (a DNS
 * rebinding page reaches a loopback peer under its own host name). The console's rule.
 */
export function isLoopbackRequest(req: IncomingMessage): boolean {
  return (
    LOOPBACK_ADDRESSES.has(req.socket.remoteAddress ?? '') && isLoopbackHost(req.headers.host ?? '')
  );
}
