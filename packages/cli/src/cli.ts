import { check } from './check.js';
import { consoleCommand } from './console.js';
import * as commands from './commands.js';
import { HELP } from './help.js';
import { EXIT, UsageError } from './options.js';

export interface CliIo extends Omit<commands.Io, 'out'> {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** The tidemark command: returns the exit code (0 ok, 1 runtime failure, 2 usage error). */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.out(HELP['main']!);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  const run = {
    dev: commands.dev,
    gateway: commands.gateway,
    worker: commands.worker,
    topics: commands.topics,
    console: consoleCommand,
    check,
  }[command];
  if (run === undefined) {
    io.err(
      `tidemark: unknown command "${command}" (expected dev, gateway, worker, topics, console or check; see tidemark --help)`,
    );
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(HELP[command]!);
    return EXIT.ok;
  }
  try {
    await run(rest, io);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`tidemark ${command}: ${error.message}`);
      return EXIT.usage;
    }
    io.err(`tidemark ${command}: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT.failure;
  }
}
