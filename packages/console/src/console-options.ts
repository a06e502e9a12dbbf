import type { Request } from 'express';
import { positiveIntegers, type LogPort, type TopicNames } from '@tidemark/protocol';
import type { ResumeJournal } from './resume-journal.js';

/** What `createConsole` takes; each default in `CONSOLE_DEFAULTS`. */
export interface ConsoleOptions {
  readonly log: LogPort;
  readonly topics: TopicNames;
  /**
   * Where the router is mounted.
   * @default `/console`
   */
  readonly basePath?: string;
  /**
   * The MCP endpoint's authentication, when it has one: the console asks for the same bearer
   * token (a header, or a sign-in form that keeps it in an HttpOnly cookie) and shows only the
   * sessions of its subject.
   */
  readonly authenticate?: (req: Request) => Promise<{ readonly subject: string } | undefined>;
  /** The resume decisions of this process's gateway; without one, the page says where they are. */
  readonly journal?: ResumeJournal;
  /** A trace viewer's URL with `{traceId}` in it, e.g. `http://localhost:16686/trace/{traceId}`. */
  readonly traceUrl?: string;
  /**
   * What the header says the console reads.
   * @default `the log`
   */
  readonly source?: string;
  /**
   * Shown as each session's expiry.
   * @default 1 h (the gateway's default)
   */
  readonly sessionTtlMs?: number;
  /**
   * How many of a partition's latest records a call's timeline reads at most.
   * @default 100,000
   */
  readonly scanRecords?: number;
  /**
   * Sessions listed at most.
   * @default 200
   */
  readonly maxSessions?: number;
  /**
   * The MCP endpoint this console sits beside (a gateway's own console): its path on the same
   * origin and the tools served, named on the empty overview so a newcomer knows where to connect.
   */
  readonly mcp?: {
    readonly path: string;
    readonly tools: () => readonly string[];
    /** The event types served (the Events extension). */
    readonly events?: (() => readonly string[]) | undefined;
  };
  /**
   * Unexpected failures (answered 500).
   * @default stderr
   */
  readonly onError?: (error: unknown) => void;
}

export const CONSOLE_DEFAULTS = {
  basePath: '/console',
  sessionTtlMs: 60 * 60 * 1000,
  scanRecords: 100_000,
  maxSessions: 200,
} as const;

/** Options with their defaults applied, validated: a bad one throws a `TypeError` now. */
export type CompiledConsoleOptions = ConsoleOptions &
  Required<Pick<ConsoleOptions, keyof typeof CONSOLE_DEFAULTS>>;

export function compileConsoleOptions(options: ConsoleOptions): CompiledConsoleOptions {
  const o = { ...CONSOLE_DEFAULTS, ...options };
  if (!/^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/.test(o.basePath))
    throw new TypeError(
      `basePath: expected a path such as /console, got ${JSON.stringify(o.basePath)}`,
    );
  if (o.traceUrl !== undefined && !/^https?:\/\/\S+\{traceId\}/.test(o.traceUrl))
    throw new TypeError(
      `traceUrl: expected an http(s) URL containing {traceId}, got ${JSON.stringify(o.traceUrl)}`,
    );
  positiveIntegers(o, ['sessionTtlMs', 'scanRecords', 'maxSessions']);
  return o;
}
