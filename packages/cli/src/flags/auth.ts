import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { resolve } from 'node:path';
import {
  jwtAuthenticator,
  tokenFileAuthenticator,
  type Authenticate,
  type GatewayOptions,
  type JSONWebKeySet,
} from '@tidemark/gateway';
import type { Io } from '../io.js';
import { str, UsageError, type FlagValues } from '../options.js';
import { messageOf } from '@tidemark/protocol';

/** The authentication flags shared by `gateway` and `dev`. */
export const AUTH_FLAGS = {
  auth: { type: 'string' },
  'auth-tokens': { type: 'string' },
  'auth-jwks': { type: 'string' },
  'auth-issuer': { type: 'string' },
  'auth-audience': { type: 'string' },
  'public-url': { type: 'string' },
  'auth-scopes': { type: 'string' },
} as const;

type GatewayAuth = Pick<GatewayOptions, 'authenticate' | 'resourceMetadata'>;

const CHOOSE =
  'choose how clients authenticate: --auth-tokens <file> (lines "<token> <subject>"), ' +
  '--auth-jwks <url|file> --auth-issuer <iss> --auth-audience <aud> (OAuth 2.1 bearer JWTs), ' +
  'or --auth none (anyone who reaches the port may call every tool)';

/**
 * The gateway's authentication from its flags: exactly one choice. `required`: no choice is a
 * usage error (`tidemark gateway`); otherwise no choice means none (`tidemark dev`, loopback only).
 * A tokens or JWKS file is read again when it changes and on SIGHUP, until the process is asked to
 * stop. It fails closed: what the file says now holds (a tokens file's bad lines skipped, said; an
 * empty one refuses every token), and a file that no longer reads refuses every credential until
 * it does — a token removed is never kept because something else in the file went wrong.
 */
export function authOf(
  values: FlagValues,
  io: Pick<Io, 'cwd' | 'logger' | 'stopSignal'>,
  required: boolean,
): GatewayAuth {
  const made = authFrom(values, io, required);
  if (made.authenticate === undefined || made.file === undefined) return made.auth;
  const { file, make } = made;
  let current = made.authenticate;
  const reload = () => {
    try {
      current = make(true);
      io.logger.info({ file }, 'authentication reloaded');
    } catch (error) {
      current = () => Promise.resolve(undefined);
      io.logger.error(
        { file, err: messageOf(error) },
        'authentication file does not read: every credential is refused until it does',
      );
    }
  };
  watchFile(file, { interval: 1_000, persistent: false }, reload);
  process.on('SIGHUP', reload);
  void io.stopSignal.then(() => {
    unwatchFile(file, reload);
    process.off('SIGHUP', reload);
  });
  return { ...made.auth, authenticate: (req) => current(req) };
}

/** The choice made, and — for a file — how to make it again from the file. */
function authFrom(
  values: FlagValues,
  io: Pick<Io, 'cwd' | 'logger'>,
  required: boolean,
): {
  auth: GatewayAuth;
  authenticate?: Authenticate;
  file?: string;
  /** `reloading`: the file read again (a tokens file's bad lines are skipped, said). */
  make: (reloading?: boolean) => Authenticate;
} {
  const none = { auth: {}, make: () => () => Promise.resolve(undefined) };
  const cwd = io.cwd;
  const mode = str(values['auth']);
  const tokens = str(values['auth-tokens']);
  const jwks = str(values['auth-jwks']);
  const chosen = [mode !== undefined, tokens !== undefined, jwks !== undefined].filter(Boolean);
  if (chosen.length > 1) throw new UsageError(`auth: give one choice only; ${CHOOSE}`);
  if (mode !== undefined && mode !== 'none')
    throw new UsageError(`--auth: expected "none", got "${mode}"; ${CHOOSE}`);
  if (chosen.length === 0) {
    if (required) throw new UsageError(CHOOSE);
    return none;
  }
  if (tokens !== undefined) {
    const make = (reloading = false) =>
      asUsage('--auth-tokens', () =>
        tokenFileAuthenticator(readText(tokens, cwd, '--auth-tokens'), {
          onWeakToken: (line) =>
            io.logger.warn(
              { file: tokens, line },
              'a token shorter than 32 characters can be guessed: use 32 random characters or more',
            ),
          ...(reloading
            ? {
                onBadLine: (line: number, problem: string) =>
                  io.logger.error({ file: tokens, line, problem }, 'tokens line skipped'),
              }
            : {}),
        }),
      );
    const authenticate = make();
    return { auth: { authenticate }, authenticate, file: resolve(cwd, tokens), make };
  }
  if (jwks === undefined) {
    if (values['auth-scopes'] !== undefined)
      throw new UsageError('--auth-scopes: only with --auth-jwks (the scopes of OAuth tokens)');
    return none;
  }
  return jwtAuth(values, cwd, jwks);
}

/** `--auth-jwks` and the flags that go with it. */
function jwtAuth(values: FlagValues, cwd: string, jwks: string): ReturnType<typeof authFrom> {
  const issuer = str(values['auth-issuer']);
  const audience = str(values['auth-audience']);
  if (issuer === undefined || audience === undefined)
    throw new UsageError('--auth-jwks: needs --auth-issuer and --auth-audience');
  const resource = str(values['public-url']) ?? (isUrl(audience) ? audience : undefined);
  if (resource === undefined)
    throw new UsageError(
      '--public-url: required with --auth-jwks when --auth-audience is not a URL (the resource clients see)',
    );
  const scopes = scopesOf(values);
  const make = () =>
    asUsage('--auth-jwks', () =>
      jwtAuthenticator({
        jwks: isUrl(jwks)
          ? new URL(jwks)
          : (JSON.parse(readText(jwks, cwd, '--auth-jwks')) as JSONWebKeySet),
        issuer,
        audience,
      }),
    );
  const authenticate = make();
  return {
    auth: {
      authenticate,
      resourceMetadata: {
        resource,
        authorizationServers: [issuer],
        ...(scopes === undefined ? {} : { scopesSupported: scopes }),
      },
    },
    authenticate,
    // A JWKS URL is fetched again by jose when a token names a key it has not seen.
    ...(isUrl(jwks) ? {} : { file: resolve(cwd, jwks) }),
    make,
  };
}

/** `--auth-scopes`: OAuth scope-tokens, separated by spaces or commas. */
function scopesOf(values: FlagValues): string[] | undefined {
  const scopes = str(values['auth-scopes'])
    ?.split(/[\s,]+/)
    .filter((scope) => scope !== '');
  const bad = scopes?.find((scope) => !/^[\u0021\u0023-\u005B\u005D-\u007E]+$/.test(scope));
  if (bad !== undefined)
    throw new UsageError(`--auth-scopes: ${JSON.stringify(bad)} is not an OAuth scope`);
  return scopes;
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
