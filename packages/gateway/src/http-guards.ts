import cors from 'cors';
import type express from 'express';
import type { Request, Response } from 'express';
import { recordRefusal } from '@tidemark/otel';

// The gateway's front door: the checks every request meets before a handler, and the one way a
// refusal is written. Guards answer with a JSON-RPC error and stop; nothing here touches the log.

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Client addresses of this machine: exempt from the per-address rate limit. */
export const LOOPBACK_ADDRESSES = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** `example.com:3000` → `example.com`; `[::1]:3000` → `[::1]`. */
function hostnameOf(host: string): string {
  return host.replace(/:\d+$/, '').toLowerCase();
}

const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/;

export interface FrontDoorOptions {
  path: string;
  allowedOrigins: readonly string[] | 'any' | undefined;
  allowedHosts: readonly string[] | undefined;
  isDraining: () => boolean;
}

/**
 * Draining (503), `Origin` (403; CORS for allowed ones) and `Host` (403; on a loopback address only
 * loopback names, so a page that rebinds its own domain to 127.0.0.1 is refused).
 */
export function frontDoor(options: FrontDoorOptions): {
  install(app: express.Express): void;
  /** The address the server listens on: loopback turns the Host check on. */
  listeningOn(host: string): void;
} {
  let loopbackOnly = false;
  const { allowedOrigins, allowedHosts } = options;
  const originAllowed = (origin: string): boolean =>
    allowedOrigins === 'any' ||
    (allowedOrigins === undefined ? LOOPBACK_ORIGIN.test(origin) : allowedOrigins.includes(origin));
  const hostAllowed = (host: string | undefined): boolean => {
    if (allowedHosts !== undefined)
      return (
        host !== undefined &&
        (allowedHosts.includes(host) || allowedHosts.includes(hostnameOf(host)))
      );
    return !loopbackOnly || (host !== undefined && LOOPBACK_HOSTS.has(hostnameOf(host)));
  };
  return {
    install(app) {
      app.use(options.path, (req: Request, res: Response, next: () => void) => {
        if (options.isDraining())
          return void jsonError(res, 503, -32000, 'Service draining: retry on another replica');
        const origin = req.headers.origin;
        if (origin !== undefined && !originAllowed(origin))
          return void jsonError(res, 403, -32000, 'Forbidden: Origin not allowed', 'origin');
        if (!hostAllowed(req.headers.host))
          return void jsonError(res, 403, -32000, 'Forbidden: Host not allowed', 'host');
        next();
      });
      // Browser clients from an allowed Origin: preflight answered, MCP headers readable.
      app.use(
        options.path,
        cors({
          origin: (origin, callback) =>
            callback(null, origin !== undefined && originAllowed(origin)),
          methods: ['GET', 'POST', 'DELETE'],
          allowedHeaders: [
            'Content-Type',
            'Accept',
            'Authorization',
            'Mcp-Session-Id',
            'MCP-Protocol-Version',
            'Last-Event-ID',
            'Mcp-Method',
            'Mcp-Name',
            'traceparent',
            'tracestate',
          ],
          exposedHeaders: ['Mcp-Session-Id', 'WWW-Authenticate'],
          maxAge: 600,
        }),
      );
    },
    listeningOn(host) {
      if (LOOPBACK_HOSTS.has(host === '::1' ? '[::1]' : host)) loopbackOnly = true;
    },
  };
}

export function isJson(contentType: string | undefined): boolean {
  return (
    contentType !== undefined &&
    contentType.split(';')[0]!.trim().toLowerCase() === 'application/json'
  );
}

export /** What body-parser threw for a body the client got wrong, as the answer it deserves. */
function bodyRefusal(
  error: unknown,
  maxBodyBytes: number,
): { status: number; code: number; message: string } | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  switch (type) {
    case 'entity.too.large':
      return {
        status: 413,
        code: -32000,
        message: `Request body larger than ${maxBodyBytes} bytes`,
      };
    case 'entity.parse.failed':
      return { status: 400, code: -32700, message: 'Parse error: the body is not JSON' };
    case 'charset.unsupported':
      return {
        status: 415,
        code: -32000,
        message: 'Unsupported Media Type: the body must be UTF-8',
      };
    case 'encoding.unsupported':
      return {
        status: 415,
        code: -32000,
        message: 'Unsupported Media Type: Content-Encoding must be identity, gzip or deflate',
      };
    default:
      return { status, code: -32000, message: 'Bad request body' };
  }
}

export /** A JSON-RPC error as the whole answer; every 4xx is counted by reason (`tidemark.gateway.refusals`). */
function jsonError(
  res: Response,
  status: number,
  code: number,
  message: string,
  reason = 'other',
): void {
  if (res.headersSent) return;
  if (status >= 400 && status < 500) recordRefusal(status, reason);
  res.status(status).json({ jsonrpc: '2.0', id: null, error: { code, message } });
}
