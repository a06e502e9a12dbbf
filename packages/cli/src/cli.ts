import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import type { Io } from './io.js';
import { describeFailure } from './failures.js';
import { MAIN_HELP } from './main-help.js';
import { EXIT, UsageError } from './options.js';

export interface CliIo extends Omit<Io, 'out'> {
  out: (line: string) => void;
  err: (line: string) => void;
}

type Run = (args: readonly string[], io: Io) => Promise<void>;

// Each command's code is loaded when it runs: `--help`, `--version` and a mistyped command answer
// without loading the gateway, the worker and Kafka's client — and a server's code loads only
// after the OpenTelemetry SDK patched `http`. A command's help loads the options' tables it takes
// its defaults from.
const help = async (command: string): Promise<string> => (await import('./help.js')).HELP[command]!;
const COMMANDS: Record<string, () => Promise<Run>> = {
  dev: async () => (await import('./commands/dev.js')).dev,
  gateway: async () => (await import('./commands/gateway.js')).gateway,
  worker: async () => (await import('./commands/worker.js')).worker,
  topics: async () => (await import('./commands/topics.js')).topics,
  calls: async () => (await import('./commands/calls.js')).calls,
  audit: async () => (await import('./commands/audit.js')).audit,
  console: async () => (await import('./console.js')).consoleCommand,
  check: async () => (await import('./commands/check.js')).check,
  init: async () => (await import('./commands/init.js')).init,
};

/** This package's version, as `tidemark --version` prints it. */
const VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/** Whether `argv` runs a command (rather than printing help or the version, or refusing). */
export function runsServer(argv: readonly string[]): boolean {
  const [command, ...rest] = argv;
  return (
    command !== undefined &&
    Object.hasOwn(COMMANDS, command) &&
    !rest.includes('--help') &&
    !rest.includes('-h')
  );
}

/** The tidemark command: returns the exit code (0 ok, 1 runtime failure, 2 usage error). */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.out(MAIN_HELP);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === '--version' || command === '-v' || command === '-V') {
    io.out(VERSION);
    return EXIT.ok;
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (load === undefined) {
    io.err(`tidemark: unknown command "${command}"${suggestion(command)} (see tidemark --help)`);
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(await help(command));
    return EXIT.ok;
  }
  try {
    await (
      await load()
    )(rest, io);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`tidemark ${command}: ${error.message}`);
      return EXIT.usage;
    }
    io.err(`tidemark ${command}: ${describeFailure(error, rest, io.env)}`);
    return EXIT.failure;
  }
}

/** `; did you mean dev?` when commander finds a command close to the one typed. */
function suggestion(typed: string): string {
  const program = new Command()
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined })
    .showSuggestionAfterError(true);
  for (const name of Object.keys(COMMANDS)) program.command(name);
  try {
    program.parse([typed], { from: 'user' });
  } catch (error) {
    const match = error instanceof CommanderError && /Did you mean (\S+)\?/.exec(error.message);
    if (match) return `; did you mean ${match[1]}?`;
  }
  return '';
}
