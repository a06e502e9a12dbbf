import type { ParseArgsConfig } from 'node:util';
import { Command, CommanderError, Option } from 'commander';

/** A usage error: printed as one line naming the flag and what it accepts; exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

type Options = NonNullable<ParseArgsConfig['options']>;
type FlagValue = string | boolean | string[] | undefined;

/**
 * A command's parsed flags by name. Each flag group (`src/flags/`) declares its flags as a
 * `*_FLAGS` object and reads its values from these with an `…Of(values)` function.
 */
export type FlagValues = Record<string, FlagValue>;

/**
 * Strict flag parsing by commander (its errors, with "did you mean" for a mistyped flag): an
 * unknown flag or a missing value is a UsageError naming it. The flags are declared as
 * `node:util` parseArgs options, so each command's set stays a plain object.
 */
export function parseFlags(
  args: readonly string[],
  options: Options,
): { values: FlagValues; positionals: string[] } {
  const program = new Command()
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined })
    .helpOption(false)
    .allowExcessArguments(true)
    .showSuggestionAfterError(true);
  const names = new Map<string, string>();
  for (const [name, spec] of Object.entries(options)) {
    const option =
      spec.type === 'boolean' ? new Option(`--${name}`) : new Option(`--${name} <value>`);
    if (spec.multiple === true)
      option.argParser((value: string, earlier: string[] | undefined) => [
        ...(earlier ?? []),
        value,
      ]);
    program.addOption(option);
    names.set(option.attributeName(), name);
  }
  try {
    program.parse([...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) throw new UsageError(usageMessage(error.message));
    throw error;
  }
  const values: FlagValues = {};
  for (const [attribute, value] of Object.entries(program.opts<Record<string, FlagValue>>()))
    values[names.get(attribute) ?? attribute] = value;
  return { values, positionals: program.args };
}

/** commander's `error: unknown option '--prot'\n(Did you mean --port?)`, as one line of ours. */
function usageMessage(message: string): string {
  return message
    .replace(/^error: /, '')
    .replace(/^unknown option '(.+?)'/, 'unknown flag $1')
    .replace(/^option '(--[\w-]+) <value>' argument missing/, '$1: expected a value')
    .replace(/\n\(Did you mean (.+?)\?\)/, ' (did you mean $1?)')
    .replace(/\n/g, ' ')
    .concat(' (see --help)');
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
  if (!/^[1-9]\d{0,14}$/.test(value) || !Number.isSafeInteger(Number(value)))
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

/**
 * Runs every check and returns their values; when several refuse, one UsageError names them all
 * (a user fixes a command line once, not once per missing flag).
 */
export function allOf<T extends readonly unknown[]>(...checks: { [K in keyof T]: () => T[K] }): T {
  const refusals: string[] = [];
  const values = checks.map((check) => {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      refusals.push(error.message);
      return undefined;
    }
  });
  const [only] = refusals;
  if (refusals.length === 1 && only !== undefined) throw new UsageError(only);
  if (refusals.length > 1)
    throw new UsageError(`${refusals.length} problems:\n  ${refusals.join('\n  ')}`);
  return values as unknown as T;
}
