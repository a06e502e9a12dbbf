import { timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  jwtVerify,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
} from 'jose';
import { invalidOption } from '@tidemark/protocol';

/** Who sent a request: sessions are bound to the subject; tools see it. */
export interface AuthResult {
  /** The authenticated subject a session is bound to. */
  subject: string;
  /** The bearer token as presented (tools may pass it on, as the SDK's `authInfo.token`). */
  token?: string;
  /** Scopes granted to the token, when it says. */
  scopes?: readonly string[];
  /** Seconds since the epoch at which the token expires, when it says. */
  expiresAt?: number;
}

/** Resolves the subject of a request, or undefined to answer 401. */
export type Authenticate = (req: Request) => Promise<AuthResult | undefined>;

/** The bearer token of a request, or undefined. */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  return match?.[1];
}

/**
 * Static tokens, for small deployments and tests: one `<token> <subject>` per line; blank lines and
 * `#` comments are ignored. Tokens are compared by their SHA-256 in constant time.
 *
 * @example
 *   createGateway({ ..., authenticate: tokenFileAuthenticator(readFileSync('tokens.txt', 'utf8')) })
 */
export function tokenFileAuthenticator(text: string): Authenticate {
  const subjects = new Map<string, string>();
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [token, subject, ...rest] = line.split(/\s+/);
    if (token === undefined || subject === undefined || rest.length > 0 || token.length < 16) {
      throw invalidOption(
        `tokens line ${index + 1}`,
        '"<token> <subject>" with a token of at least 16 characters',
        line.length > 40 ? `${line.slice(0, 8)}…` : '(hidden)',
      );
    }
    subjects.set(digest(token), subject);
  }
  if (subjects.size === 0)
    throw invalidOption('tokens', 'at least one "<token> <subject>" line', '');
  return (req) => {
    const token = bearerToken(req);
    if (token === undefined) return Promise.resolve(undefined);
    const presented = digest(token);
    for (const [known, subject] of subjects) {
      if (timingSafeEqual(Buffer.from(known, 'hex'), Buffer.from(presented, 'hex')))
        return Promise.resolve({ subject, token });
    }
    return Promise.resolve(undefined);
  };
}

export interface JwtAuthenticatorOptions {
  /** The authorization server's keys: a JWKS URL (fetched and cached by jose), or a JWKS object. */
  jwks: URL | JSONWebKeySet;
  /** Expected `iss`. */
  issuer: string;
  /** Expected `aud`: this resource server's identifier. */
  audience: string;
  /** Allowed clock skew, seconds. @default 30 */
  clockToleranceSec?: number;
}

/**
 * OAuth 2.1 resource server: validates a bearer JWT's signature against the issuer's keys, its
 * `iss`, `aud`, `exp` and `nbf`, and takes `sub` as the subject (jose).
 */
export function jwtAuthenticator(options: JwtAuthenticatorOptions): Authenticate {
  if (options.issuer === '') throw invalidOption('issuer', 'a non-empty string', options.issuer);
  if (options.audience === '')
    throw invalidOption('audience', 'a non-empty string', options.audience);
  const keys: JWTVerifyGetKey =
    options.jwks instanceof URL
      ? createRemoteJWKSet(options.jwks)
      : createLocalJWKSet(options.jwks);
  return async (req) => {
    const token = bearerToken(req);
    if (token === undefined) return undefined;
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: options.issuer,
        audience: options.audience,
        clockTolerance: options.clockToleranceSec ?? 30,
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') return undefined;
      const scope = typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : undefined;
      return {
        subject: payload.sub,
        token,
        ...(scope === undefined ? {} : { scopes: scope }),
        ...(payload.exp === undefined ? {} : { expiresAt: payload.exp }),
      };
    } catch {
      return undefined; // any invalid token is a 401, never a 5xx
    }
  };
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
