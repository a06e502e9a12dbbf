import { ErrorCodes, isTidemarkError, messageOf } from '@tidemark/protocol';

// A runtime failure said in the user's terms, with what to do next: the error's own message
// first (it names the detail), then the way out for the failures a newcomer meets first.

const UNREACHABLE = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|EAI_AGAIN/;

/** One line (or a few) for a command that failed at runtime. */
export function describeFailure(
  error: unknown,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): string {
  const message = messageOf(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'EADDRINUSE') {
    const { address, port } = error as { address?: string; port?: number };
    return `port ${port} on ${address} is taken by another process: stop it, or pick another port with --port <n> (0: any free port)`;
  }
  if (isTidemarkError(error) && error.code === ErrorCodes.unknownTopic)
    return `${message}: create the topics first (tidemark topics create --brokers <list> …; see tidemark topics --help)`;
  const brokers = flagValue(args, '--brokers') ?? env['KAFKA_BROKERS'];
  if (brokers !== undefined && UNREACHABLE.test(chainOf(error)))
    return `cannot reach Kafka at ${brokers} (${message}): is the broker running and reachable from here? On a laptop: npm run kafka:start`;
  return message;
}

/** The messages of an error and its causes, to look for the system error underneath. */
function chainOf(error: unknown): string {
  const parts: string[] = [];
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 8; depth++) {
    const code = (at as { code?: unknown }).code;
    parts.push(at instanceof Error ? at.message : typeof at === 'string' ? at : '');
    if (typeof code === 'string') parts.push(code);
    const errors = (at as { errors?: unknown }).errors;
    if (Array.isArray(errors)) parts.push(...errors.map((e) => chainOf(e)));
    at = (at as { cause?: unknown }).cause;
  }
  return parts.join(' ');
}

/** `--flag value` or `--flag=value` from a command line. */
function flagValue(args: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === flag) return args[i + 1];
    if (arg.startsWith(`${flag}=`)) return arg.slice(flag.length + 1);
  }
  return undefined;
}
