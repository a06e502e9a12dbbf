import { createServer } from 'node:http';
import express from 'express';
import { createConsole, ResumeJournal, type Console } from '@tidemark/console';
import type { Gateway, GatewayOptions } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { topicNames, type LogPort, type TopicNames } from '@tidemark/protocol';
import { AUTH_FLAGS, authOf } from './flags/auth.js';
import type { Io } from './io.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from './flags/kafka.js';
import {
  LOOPBACK_BIND_ADDRESSES,
  parseFlags,
  port,
  str,
  UsageError,
  type FlagValues,
} from './options.js';
import { duration } from './flags/ttl.js';

// The console (`@tidemark/console`): served by `tidemark dev` at /console, and by `tidemark
// console` over a Kafka deployment's topics, read-only. Loopback only either way.

/** The port `tidemark console` listens on unless told. */
export const CONSOLE_PORT = 3100;

export const CONSOLE_FLAGS = {
  console: { type: 'string' },
  'trace-url': { type: 'string' },
} as const;

/**
 * The console a gateway process serves beside its endpoint (dev: on by default; gateway: off),
 * from `--console on|off` and `--trace-url`, checked before anything starts: the gateway options
 * it needs (this replica's resume decisions, kept in memory) and how to mount it.
 */
export function mountedConsoleOf(
  values: FlagValues,
  shown: { byDefault: 'on' | 'off'; source: string; sessionTtlMs: number | undefined },
): {
  gatewayOptions: Pick<GatewayOptions, 'onResume'>;
  mount(gateway: Gateway, deps: MountDeps): Promise<Console | undefined>;
} {
  const choice = str(values['console']) ?? shown.byDefault;
  const { sessionTtlMs } = shown;
  if (choice !== 'on' && choice !== 'off')
    throw new UsageError(`--console: expected "on" or "off", got "${choice}"`);
  const traceUrl = traceUrlOf(values);
  if (choice === 'off') return { gatewayOptions: {}, mount: () => Promise.resolve(undefined) };
  const journal = new ResumeJournal();
  return {
    gatewayOptions: { onResume: journal.record },
    mount: async (gateway, { log, topics, auth, io, tools, events }) => {
      const console = await createConsole({
        log,
        topics,
        journal,
        source: shown.source,
        onError: (error) => io.logger.error({ err: error }, 'console error'),
        ...(traceUrl === undefined ? {} : { traceUrl }),
        ...(auth.authenticate === undefined ? {} : { authenticate: auth.authenticate }),
        ...(sessionTtlMs === undefined ? {} : { sessionTtlMs }),
        ...(tools === undefined ? {} : { mcp: { path: '/mcp', tools, events } }),
      });
      gateway.app.use(console.basePath, console.router);
      return console;
    },
  };
}

interface MountDeps {
  log: LogPort;
  topics: TopicNames;
  auth: Pick<GatewayOptions, 'authenticate'>;
  io: Io;
  /** The tools this process serves (dev), named on the console's empty overview. */
  tools?: () => readonly string[];
  /** The event types it offers (dev). */
  events?: () => readonly string[];
}

/** `tidemark console`'s flags, as its help lists them. */
export const CONSOLE_COMMAND_FLAGS = {
  ...KAFKA_FLAGS,
  port: { type: 'string' },
  host: { type: 'string' },
  'trace-url': { type: 'string' },
  'session-ttl': { type: 'string' },
  ...AUTH_FLAGS,
} as const;

/** `tidemark console --brokers …`: the console over a Kafka deployment, read-only. */
export async function consoleCommand(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, CONSOLE_COMMAND_FLAGS);
  const host = str(values['host']) ?? '127.0.0.1';
  if (!LOOPBACK_BIND_ADDRESSES.has(host))
    throw new UsageError(
      `--host: ${host} is not a loopback address; the console answers this machine only (use an SSH tunnel or kubectl port-forward)`,
    );
  const listenPort = port(str(values['port']), '--port', CONSOLE_PORT);
  const auth = authOf(values, io, false);
  const traceUrl = traceUrlOf(values);
  const sessionTtlMs = duration(str(values['session-ttl']), '--session-ttl');
  const kafka = kafkaOptions(values, io);
  const topics = topicNames(prefixOf(values));
  const log = new KafkaLog(kafka);
  const console = await createConsole({
    log,
    topics,
    source: `Kafka ${kafka.brokers.join(', ')} · read-only`,
    onError: (error) => io.logger.error({ err: error }, 'console error'),
    ...(traceUrl === undefined ? {} : { traceUrl }),
    ...(auth.authenticate === undefined ? {} : { authenticate: auth.authenticate }),
    ...(sessionTtlMs === undefined ? {} : { sessionTtlMs }),
  }).catch(async (error: unknown) => {
    await log.close();
    throw error;
  });
  const app = express();
  app.disable('x-powered-by');
  app.use(console.basePath, console.router);
  app.get('/', (_req, res) => res.redirect(302, console.basePath));
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : listenPort;
  io.out(`Tidemark console (read-only, topics ${topics.events} …)`);
  io.out(`Console: http://${host.includes(':') ? `[${host}]` : host}:${bound}${console.basePath}`);
  await io.stopSignal;
  console.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await log.close();
}

function traceUrlOf(values: FlagValues): string | undefined {
  const url = str(values['trace-url']);
  if (url !== undefined && !/^https?:\/\/\S+\{traceId\}/.test(url))
    throw new UsageError(
      `--trace-url: expected an http(s) URL containing {traceId}, e.g. http://localhost:16686/trace/{traceId}, got "${url}"`,
    );
  return url;
}
