import type { NextFunction, Request, Response } from 'express';
import { isLoopbackOrigin, isLoopbackRequest } from '@tidemark/gateway/http';
import type { ConsoleOptions } from './console-options.js';
import type { Visibility } from './visibility.js';

// What every console request meets before a page: this machine only, the security headers, and
// who is asking (a bearer token, or the sign-in cookie).

/** The sign-in cookie: the bearer token, HttpOnly and SameSite, for the console's path only. */
export const COOKIE = 'tidemark_console_token';

/** Loopback peers only, and a loopback `Host` (DNS rebinding): the console is for this machine. */
export function thisMachineOnly(req: Request, res: Response, next: NextFunction): void {
  if (!isLoopbackRequest(req))
    return void res
      .status(403)
      .type('text')
      .send(
        'The console answers this machine only (a loopback address and Host). Use an SSH tunnel or kubectl port-forward.',
      );
  next();
}

/** A form post from another origin is refused: the sign-in cannot be driven by another site. */
export function sameOrigin(req: Request, res: Response, next: NextFunction): void {
  const origin = req.headers.origin;
  if (origin !== undefined && !isLoopbackOrigin(origin))
    return void res.status(403).type('text').send('Cross-origin form posts are refused.');
  next();
}

export function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set({
    'content-security-policy':
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer a form post's Origin is "null".
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
  next();
}

/** Who is asking: everyone when the endpoint has no authentication, else the token's subject. */
export async function whoIs(
  options: ConsoleOptions,
  req: Request,
): Promise<Visibility | undefined> {
  if (options.authenticate === undefined) return { all: true };
  if (req.headers.authorization === undefined) {
    const token = cookieOf(req.headers.cookie, COOKIE);
    if (token !== undefined) req.headers.authorization = `Bearer ${token}`;
  }
  const auth = await options.authenticate(req);
  return auth === undefined ? undefined : { all: false, subject: auth.subject };
}

/** A cookie's value; a malformed one (bad percent-encoding, not a token) is no cookie: a 401, not a 500. */
function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key !== name) continue;
    try {
      const token = decodeURIComponent(value.join('='));
      return /^[A-Za-z0-9\-._~+/]+=*$/.test(token) ? token : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
