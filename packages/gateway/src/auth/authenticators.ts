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
import { isLoopbackHost } from '../http/loopback.js';
import type { Authenticate } from './authenticate.js';

/** The bearer token of a request, or undefined. */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  return match?.[1];
}

/** A token shorter than this is guessable: it is taken, with a warning. */
const STRONG_TOKEN_CHARS = 32;

export interface TokenFileOptions {
  /** A line whose token is shorter than 32 characters (the token itself is never passed). */
  onWeakToken?: (line: number) => void;
  /**
   * Reading a file again (a reload): a bad line is passed here and skipped instead of refusing the
   * file, and a file with no token is taken (every token refused) — what the file says now holds,
   * so a token removed from it is never kept by a mistake elsewhere in it.
   */
  onBadLine?: (line: number, problem: string) => void;
}

/**
 * Static tokens, for small deployments and tests: one `<token> <subject>` per line; blank lines and
 * `#` comments are ignored. Tokens are compared by their SHA-256 in constant time. A line that is
 * not one, a token under 16 characters or one given twice is refused, named by its line — never
 * by any of its characters.
 *
 * @example
 *   createGateway({ ..., authenticate: tokenFileAuthenticator(readFileSync('tokens.txt', 'utf8')) })
 */
export function tokenFileAuthenticator(text: string, options: TokenFileOptions = {}): Authenticate {
  const subjects = new Map<string, string>();
  const lineOf = new Map<string, number>();
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [token, subject, ...rest] = line.split(/\s+/);
    const bad = (expected: string) => {
      if (options.onBadLine === undefined)
        throw invalidOption(`tokens line ${index + 1}`, expected, '(hidden)');
      options.onBadLine(index + 1, `expected ${expected}`);
    };
    if (token === undefined || subject === undefined || rest.length > 0 || token.length < 16) {
      bad('"<token> <subject>" with a token of at least 16 characters');
      continue;
    }
    const key = digest(token);
    const earlier = lineOf.get(key);
    if (earlier !== undefined) {
      // Neither line's subject is taken: which one the writer meant is not known.
      subjects.delete(key);
      bad(`a token of its own (the same token as line ${earlier}: whose subject would it be?)`);
      continue;
    }
    if (token.length < STRONG_TOKEN_CHARS) options.onWeakToken?.(index + 1);
    subjects.set(key, subject);
    lineOf.set(key, index + 1);
  }
  if (subjects.size === 0 && options.onBadLine === undefined)
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
  /**
   * How long keys fetched from a JWKS URL are used before they are fetched again, seconds: a key
   * the authorization server removed (revoked) is accepted at most this long after. A token
   * naming a key not in the cache fetches at once (at most once per `jwksCooldownSec`).
   * @default 600
   */
  jwksMaxAgeSec?: number;
  /** Least time between two fetches of a JWKS URL, seconds. @default 30 */
  jwksCooldownSec?: number;
  /**
   * `typ` header values taken (case-insensitive), when a token has one: an access token's, not an
   * ID token's or a logout token's. A token without `typ` is taken.
   * @default ['at+jwt', 'application/at+jwt', 'JWT']
   */
  tokenTypes?: readonly string[];
}

const ACCESS_TOKEN_TYPES = ['at+jwt', 'application/at+jwt', 'jwt'];

/**
 * OAuth 2.1 resource server: validates a bearer JWT's signature against the issuer's keys, its
 * `iss`, `aud`, `exp` (required: a token without one would be good forever) and `nbf`, and its
 * `typ` when it has one; takes `sub` as the subject, `scope` (or `scp`) as its scopes and
 * `client_id` (or `azp`) as its client (jose). Keys are fetched over `https://` only
 * (`http://` for a loopback host, in tests and development).
 */
export function jwtAuthenticator(options: JwtAuthenticatorOptions): Authenticate {
  if (options.issuer === '') throw invalidOption('issuer', 'a non-empty string', options.issuer);
  if (options.audience === '')
    throw invalidOption('audience', 'a non-empty string', options.audience);
  if (
    options.jwks instanceof URL &&
    options.jwks.protocol !== 'https:' &&
    !(options.jwks.protocol === 'http:' && isLoopbackHost(options.jwks.host))
  )
    throw invalidOption(
      'jwks',
      'an https:// URL (http:// only on a loopback host)',
      options.jwks.href,
    );
  const types = (options.tokenTypes ?? ACCESS_TOKEN_TYPES).map((type) => type.toLowerCase());
  const keys: JWTVerifyGetKey =
    options.jwks instanceof URL
      ? createRemoteJWKSet(options.jwks, {
          cacheMaxAge: nonNegative('jwksMaxAgeSec', options.jwksMaxAgeSec ?? 600) * 1000,
          cooldownDuration: nonNegative('jwksCooldownSec', options.jwksCooldownSec ?? 30) * 1000,
        })
      : createLocalJWKSet(options.jwks);
  return async (req) => {
    const token = bearerToken(req);
    if (token === undefined) return undefined;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, keys, {
        issuer: options.issuer,
        audience: options.audience,
        clockTolerance: options.clockToleranceSec ?? 30,
        requiredClaims: ['exp'],
      });
      const { typ } = protectedHeader;
      if (typ !== undefined && !types.includes(typ.toLowerCase())) return undefined;
      if (typeof payload.sub !== 'string' || payload.sub === '') return undefined;
      const scope = scopesOf(payload['scope'] ?? payload['scp']);
      // RFC 9068's `client_id`; an OpenID provider's access tokens may say `azp` instead.
      const client = [payload['client_id'], payload['azp']].find(
        (id): id is string => typeof id === 'string' && id !== '',
      );
      return {
        subject: payload.sub,
        token,
        ...(client === undefined ? {} : { clientId: client }),
        ...(scope === undefined ? {} : { scopes: scope }),
        ...(payload.exp === undefined ? {} : { expiresAt: payload.exp }),
      };
    } catch {
      return undefined; // any invalid token is a 401, never a 5xx
    }
  };
}

/**
 * A token's scopes: OAuth's `scope` (RFC 9068: space-separated), else `scp` — Entra ID's and
 * Okta's claim, a string or an array.
 */
function scopesOf(claim: unknown): string[] | undefined {
  if (typeof claim === 'string') return claim.split(' ').filter((scope) => scope !== '');
  if (Array.isArray(claim) && claim.every((scope) => typeof scope === 'string')) return claim;
  return undefined;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw invalidOption(name, 'seconds >= 0', value);
  return value;
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
