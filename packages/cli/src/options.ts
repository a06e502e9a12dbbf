import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A usage error: printed as one line naming the flag and what it accepts; exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

type Options = NonNullable<ParseArgsConfig['options']>;

/** Strict flag parsing: an unknown flag or a missing value is a UsageError naming it. */
export function parseFlags(
  args: readonly string[],
  options: Options,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options,
      strict: true,
      allowPositionals: true,
    });
    return {
      values: values as Record<string, string | boolean | string[] | undefined>,
      positionals,
    };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    throw new UsageError(
      message.replace(/^Unknown option '(.+?)'.*/, 'unknown flag $1 (see --help)'),
    );
  }
}

export function port(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535)
    throw new UsageError(`${flag}: expected a port number 0-65535, got "${value}"`);
  return n;
}

export function positiveInt(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9]\d{0,5}$/.test(value))
    throw new UsageError(`${flag}: expected a positive integer, got "${value}"`);
  return Number(value);
}

/** `host:port[,host:port]`, from the flag or `KAFKA_BROKERS`. */
export function brokers(flag: string | undefined, env: NodeJS.ProcessEnv): string[] {
  const value = flag ?? env['KAFKA_BROKERS'];
  if (value === undefined || value.trim() === '') {
    throw new UsageError('--brokers: required (host:port[,host:port]), or set KAFKA_BROKERS');
  }
  const list = value.split(',').map((b) => b.trim());
  for (const b of list) {
    if (!/^[^\s:]+:\d{1,5}$/.test(b))
      throw new UsageError(`--brokers: expected host:port[,host:port], got "${b}"`);
  }
  return list;
}

export function list(value: string | boolean | string[] | undefined): string[] {
  if (value === undefined || typeof value === 'boolean') return [];
  return (Array.isArray(value) ? value : [value])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

export function str(value: string | boolean | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Bind addresses that keep a server on this machine (dev and the console refuse others). */
export const LOOPBACK_BIND_ADDRESSES: ReadonlySet<string> = new Set([
  '127.0.0.1',
  'localhost',
  '::1',
]);
