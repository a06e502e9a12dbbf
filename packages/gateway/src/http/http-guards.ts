import cors from 'cors';
import type express from 'express';
import type { Request, Response } from 'express';
import { HttpRefusals, type HttpRefusal } from './http-refusals.js';
import { isLoopbackHost, isLoopbackOrigin } from './loopback.js';
import { sendRefusal } from './http-answers.js';

// The gateway's front door: the checks every request meets before a handler, and the one way a
// refusal is written. Guards answer with a JSON-RPC error and stop; nothing here touches the log.

/** `example.com:3000` → `example.com`; `[::1]:3000` → `[::1]`. */
function hostnameOf(host: string): string {
  return host.replace(/:\d+$/, '').toLowerCase();
}

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
    (allowedOrigins === undefined ? isLoopbackOrigin(origin) : allowedOrigins.includes(origin));
  const hostAllowed = (host: string | undefined): boolean => {
    if (allowedHosts !== undefined)
      return (
        host !== undefined &&
        (allowedHosts.includes(host) || allowedHosts.includes(hostnameOf(host)))
      );
    return !loopbackOnly || (host !== undefined && isLoopbackHost(host));
  };
  return {
    install(app) {
      app.use(options.path, (req: Request, res: Response, next: () => void) => {
        // Draining: a request on a connection kept alive is still served (a resumable stream
        // ends after its priming event), and the connection closes after it — the client's next
        // one reaches another replica. A refusal here would fail a call the log could serve.
        if (options.isDraining()) res.setHeader('Connection', 'close');
        const origin = req.headers.origin;
        if (origin !== undefined && !originAllowed(origin))
          return sendRefusal(res, HttpRefusals.origin());
        if (!hostAllowed(req.headers.host)) return sendRefusal(res, HttpRefusals.host());
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
      if (isLoopbackHost(host)) loopbackOnly = true;
    },
  };
}

export function isJson(contentType: string | undefined): boolean {
  return (
    contentType !== undefined &&
    contentType.split(';')[0]!.trim().toLowerCase() === 'application/json'
  );
}

/**
 * Whether a JSON body's declared charset is UTF-8 (or none, which means UTF-8). body-parser decodes
 * any `utf-*`: a `utf-7` or `utf-16le` body slipped past the nesting scan, which reads UTF-8 bytes,
 * and `JSON.parse` then built a million levels (security review M2). Only UTF-8 is promised.
 */
export function declaresUtf8(contentType: string | undefined): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/** The first value of a request header (Node joins most repeated ones; a few stay arrays). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Whether the request's `Accept` names a media type, literally (a wildcard is named as such). */
export function accepts(req: Request, mediaType: string): boolean {
  return String(req.headers.accept ?? '').includes(mediaType);
}

/** The error type of a body whose bytes nest deeper than the limit (thrown by `verify`). */
export const NESTED_TOO_DEEP = 'entity.too.deep';

/** What body-parser threw for a body the client got wrong, as the answer it deserves. */
export function bodyRefusal(
  error: unknown,
  maxBodyBytes: number,
  maxJsonDepth: number,
): HttpRefusal | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  switch (type) {
    case 'entity.too.large':
      return HttpRefusals.bodyTooLarge(maxBodyBytes);
    case NESTED_TOO_DEEP:
      return HttpRefusals.nestedTooDeep(maxJsonDepth);
    case 'entity.parse.failed':
      return HttpRefusals.notJson();
    case 'charset.unsupported':
      return HttpRefusals.charset();
    case 'encoding.unsupported':
      return HttpRefusals.encoding();
    default:
      return HttpRefusals.badBody(status);
  }
}
