import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  jwtAuthenticator,
  tokenFileAuthenticator,
  type GatewayOptions,
  type JSONWebKeySet,
} from '@tidemark/gateway';
import { str, UsageError } from './options.js';
import { messageOf } from '@tidemark/protocol';

/** The authentication flags shared by `gateway` and `dev`. */
export const AUTH_FLAGS = {
  auth: { type: 'string' },
  'auth-tokens': { type: 'string' },
  'auth-jwks': { type: 'string' },
  'auth-issuer': { type: 'string' },
  'auth-audience': { type: 'string' },
  'public-url': { type: 'string' },
} as const;

type Values = Record<string, string | boolean | string[] | undefined>;
type GatewayAuth = Pick<GatewayOptions, 'authenticate' | 'resourceMetadata'>;

const CHOOSE =
  'choose how clients authenticate: --auth-tokens <file> (lines "<token> <subject>"), ' +
  '--auth-jwks <url|file> --auth-issuer <iss> --auth-audience <aud> (OAuth 2.1 bearer JWTs), ' +
  'or --auth none (anyone who reaches the port may call every tool)';

/**
 * The gateway's authentication from its flags: exactly one choice. `required`: no choice is a
 * usage error (`tidemark gateway`); otherwise no choice means none (`tidemark dev`, loopback only).
 */
export function authOf(values: Values, cwd: string, required: boolean): GatewayAuth {
  const mode = str(values['auth']);
  const tokens = str(values['auth-tokens']);
  const jwks = str(values['auth-jwks']);
  const chosen = [mode !== undefined, tokens !== undefined, jwks !== undefined].filter(Boolean);
  if (chosen.length > 1) throw new UsageError(`auth: give one choice only; ${CHOOSE}`);
  if (mode !== undefined && mode !== 'none')
    throw new UsageError(`--auth: expected "none", got "${mode}"; ${CHOOSE}`);
  if (chosen.length === 0) {
    if (required) throw new UsageError(CHOOSE);
    return {};
  }
  if (tokens !== undefined) {
    const text = readText(tokens, cwd, '--auth-tokens');
    return { authenticate: asUsage('--auth-tokens', () => tokenFileAuthenticator(text)) };
  }
  if (jwks === undefined) return {};
  const issuer = str(values['auth-issuer']);
  const audience = str(values['auth-audience']);
  if (issuer === undefined || audience === undefined)
    throw new UsageError('--auth-jwks: needs --auth-issuer and --auth-audience');
  const resource = str(values['public-url']) ?? (isUrl(audience) ? audience : undefined);
  if (resource === undefined)
    throw new UsageError(
      '--public-url: required with --auth-jwks when --auth-audience is not a URL (the resource clients see)',
    );
  return {
    authenticate: asUsage('--auth-jwks', () =>
      jwtAuthenticator({
        jwks: isUrl(jwks)
          ? new URL(jwks)
          : (JSON.parse(readText(jwks, cwd, '--auth-jwks')) as JSONWebKeySet),
        issuer,
        audience,
      }),
    ),
    resourceMetadata: { resource, authorizationServers: [issuer] },
  };
}

/** A bad file given on the command line is the user's mistake: exit 2, saying which flag. */
function asUsage<T>(flag: string, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${flag}: ${messageOf(error)}`);
  }
}

function isUrl(value: string): boolean {
  return /^https?:\/\//.test(value);
}

function readText(path: string, cwd: string, flag: string): string {
  try {
    return readFileSync(resolve(cwd, path), 'utf8');
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${messageOf(error)}`);
  }
}
