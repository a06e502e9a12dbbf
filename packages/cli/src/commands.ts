import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { topicNames } from '@tidemark/protocol';
import { loadToolModules, Worker, WORKER_DEFAULTS } from '@tidemark/worker';
import { CONSOLE_FLAGS, mountedConsoleOf } from './console.js';
import { SERVER_IDENTITY_FLAGS, serverIdentityOf } from './flags/server-identity.js';
import { sayTools } from './banner.js';
import { addHealth, topicsProbe } from './health.js';
import { devSecret, openDevLog } from './dev-data.js';
import {
  eventIdVersionOf,
  keyringOf,
  previousSecretsOf,
  secretOf,
  workerKeyringOf,
} from './flags/event-id-secret.js';
import { DEV_SSE_RETRY_MS, DRAIN_FLAGS, drainOf } from './flags/drain.js';
import { watchToolModules } from './watch.js';
import { observe, problemLogger } from './worker-log.js';
import { AUTH_FLAGS, authOf } from './flags/auth.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from './flags/kafka.js';
import { LIMIT_FLAGS, limitsOf, WORKER_LIMIT_FLAGS, workerLimitsOf } from './flags/limits.js';
import type { Io } from './io.js';
import {
  allOf,
  list,
  LOOPBACK_BIND_ADDRESSES,
  parseFlags,
  port,
  str,
  UsageError,
} from './options.js';
import { applyTelemetryFlags, TELEMETRY_FLAGS } from './flags/telemetry.js';
import { TASKS_FLAG, tasksOf } from './flags/tasks.js';
import { duration, TTL_FLAGS, ttlsOf } from './flags/ttl.js';
import { EVENT_FLAGS, eventOptionsOf } from './flags/events.js';
import {
  GATEWAY_GROUP_FLAGS,
  gatewayGroupOf,
  GROUP_FLAGS,
  groupLogOptionsOf,
  HANDOFF_FLAGS,
  handoffOf,
} from './flags/group.js';

const DEFAULT_EXAMPLES = ['@tidemark/examples/counting', '@tidemark/examples/interactive'];

const DEV_FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  watch: { type: 'boolean' },
  tools: { type: 'string', multiple: true },
  ...SERVER_IDENTITY_FLAGS,
  data: { type: 'string' },
  'resume-window': { type: 'string' },
  ...DRAIN_FLAGS,
  'allow-remote': { type: 'boolean' },
  ...TELEMETRY_FLAGS,
  ...AUTH_FLAGS,
  ...LIMIT_FLAGS,
  ...WORKER_LIMIT_FLAGS,
  ...EVENT_FLAGS,
  ...TTL_FLAGS,
  ...TASKS_FLAG,
  ...CONSOLE_FLAGS,
  ...HANDOFF_FLAGS,
} as const;

export async function dev(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, DEV_FLAGS);
  const listenPort = port(str(values['port']), '--port', 3000);
  const metrics = applyTelemetryFlags(values);
  const host = str(values['host']) ?? '127.0.0.1';
  if (!LOOPBACK_BIND_ADDRESSES.has(host) && values['allow-remote'] !== true) {
    throw new UsageError(
      `--host: ${host} is not a loopback address; dev is for one machine, so pass --allow-remote (and an --auth-tokens file) to expose it`,
    );
  }
  const auth = authOf(values, io, false);
  const limits = limitsOf(values);
  const ttls = ttlsOf(values);
  const handoff = handoffOf(values);
  const devConsole = mountedConsoleOf(values, {
    byDefault: 'on',
    source: 'tidemark dev · embedded log',
    sessionTtlMs: ttls.sessionTtlMs,
  });
  const resumeWindowMs = duration(str(values['resume-window']), '--resume-window') ?? 3_600_000;
  const data = resolve(io.cwd, str(values['data']) ?? '.tidemark');
  const specifiers = toolSpecifiers(list(values['tools']), io.cwd, DEFAULT_EXAMPLES);
  const modules = await loadToolModules(specifiers);
  const log = openDevLog(data);
  const topics = topicNames();
  log.provisionTopics(topics, { partitions: 4, resumeWindowMs });
  const keyring = keyringOf(devSecret(data));
  const worker = new Worker({
    log,
    topics,
    modules,
    keyring,
    ...ttls,
    ...handoff,
    ...workerLimitsOf(values),
    ...eventOptionsOf(values),
    ...serverIdentityOf(values, WORKER_DEFAULTS.serverInfo),
    ...observe(io.logger),
  });
  // A tool module that cannot start stops startup here, named (Worker.start probes them all).
  await startOrClose(worker, log);
  const gateway = await createGateway({
    log,
    topics,
    keyring,
    onError: (error) => io.logger.error({ err: error }, 'gateway error'),
    onWarning: (message, fields) => io.logger.warn(fields, message),
    ...drainOf(values, DEV_SSE_RETRY_MS),
    ...(ttls.sessionTtlMs === undefined ? {} : { sessionTtlMs: ttls.sessionTtlMs }),
    ...tasksOf(values),
    ...auth,
    ...limits,
    ...devConsole.gatewayOptions,
  });
  const tools = () => worker.modules.flatMap((module) => module.tools);
  const events = () => worker.modules.flatMap((module) => module.events);
  const console = await devConsole.mount(gateway, { log, topics, auth, io, tools, events });
  const server = await gateway.listen(listenPort, host);
  addHealth(gateway, () => Promise.resolve(true));
  io.out(`Tidemark dev server (single process, embedded log in ${data})`);
  announceEndpoints(io, host, portOf(server), console?.basePath);
  sayTools(io.out, 'tools:', worker.modules, io.cwd);
  announce(io, metrics);
  const watching =
    values['watch'] === true
      ? watchToolModules(specifiers, worker, { logger: io.logger, say: io.out, cwd: io.cwd })
      : undefined;
  await io.stopSignal;
  watching?.close();
  console?.close();
  await gateway.drain();
  await worker.stop();
  await log.close();
}

export async function gateway(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, {
    ...KAFKA_FLAGS,
    port: { type: 'string' },
    host: { type: 'string' },
    'secret-file': { type: 'string' },
    'previous-secret-file': { type: 'string', multiple: true },
    'event-id-version': { type: 'string' },
    ...TELEMETRY_FLAGS,
    'allowed-origin': { type: 'string', multiple: true },
    'allowed-host': { type: 'string', multiple: true },
    ...AUTH_FLAGS,
    ...LIMIT_FLAGS,
    'session-ttl': TTL_FLAGS['session-ttl'],
    ...DRAIN_FLAGS,
    ...TASKS_FLAG,
    ...CONSOLE_FLAGS,
    ...GATEWAY_GROUP_FLAGS,
  });
  // What a gateway cannot start without, each checked, all named at once.
  const [listenPort, auth, kafka, secret, groupLog, mints] = allOf(
    () => {
      if (values['port'] === undefined)
        throw new UsageError('--port: required (the port to listen on)');
      return port(str(values['port']), '--port', 0);
    },
    () => authOf(values, io, true),
    () => kafkaOptions(values, io),
    () => secretOf(str(values['secret-file']), io),
    () => groupLogOptionsOf(values),
    () => eventIdVersionOf(str(values['event-id-version']), io),
  );
  const limits = limitsOf(values);
  const { sessionTtlMs } = ttlsOf(values);
  const source = `gateway ${hostname()} · Kafka, read-only`;
  const mounted = mountedConsoleOf(values, { byDefault: 'off', source, sessionTtlMs });
  const metrics = applyTelemetryFlags(values);
  const topics = topicNames(prefixOf(values));
  const log = new KafkaLog({ ...kafka, ...groupLog, onProblem: problemLogger(io.logger) });
  const origins = list(values['allowed-origin']);
  const hosts = list(values['allowed-host']);
  const gw = await createGateway({
    log,
    topics,
    keyring: keyringOf(secret, previousSecretsOf(list(values['previous-secret-file']), io), mints),
    onError: (error) => io.logger.error({ err: error }, 'gateway error'),
    onWarning: (message, fields) => io.logger.warn(fields, message),
    ...drainOf(values, undefined),
    ...gatewayGroupOf(values, log),
    ...(origins.length > 0 ? { allowedOrigins: origins } : {}),
    ...(hosts.length > 0 ? { allowedHosts: hosts } : {}),
    ...(sessionTtlMs === undefined ? {} : { sessionTtlMs }),
    ...tasksOf(values),
    ...auth,
    ...limits,
    ...mounted.gatewayOptions,
  });
  const console = await mounted.mount(gw, { log, topics, auth, io });
  const probe = topicsProbe(kafka, topics);
  addHealth(gw, () => probe.ready());
  const server = await gw.listen(listenPort, str(values['host']) ?? '127.0.0.1');
  io.out(`Tidemark gateway listening on port ${portOf(server)} (topics ${topics.requests} …)`);
  if (console !== undefined) io.out(`Console: /console on port ${portOf(server)}, loopback only`);
  announce(io, metrics);
  await io.stopSignal;
  console?.close();
  await gw.drain();
  await probe.close();
  await log.close();
}

export async function worker(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, {
    ...KAFKA_FLAGS,
    tools: { type: 'string', multiple: true },
    ...SERVER_IDENTITY_FLAGS,
    ...GROUP_FLAGS,
    'health-port': { type: 'string' },
    'secret-file': { type: 'string' },
    'previous-secret-file': { type: 'string', multiple: true },
    'accept-unsealed': { type: 'boolean' },
    ...TELEMETRY_FLAGS,
    ...TTL_FLAGS,
    ...WORKER_LIMIT_FLAGS,
    ...EVENT_FLAGS,
  });
  const metrics = applyTelemetryFlags(values);
  const tools = list(values['tools']);
  if (tools.length === 0)
    throw new UsageError('--tools: required (a tool module path or package, repeatable)');
  const kafka = kafkaOptions(values, io);
  const topics = topicNames(prefixOf(values));
  const events = eventOptionsOf(values);
  const group = groupLogOptionsOf(values);
  const handoff = handoffOf(values);
  const modules = await loadToolModules(toolSpecifiers(tools, io.cwd, []));
  const secrets = [str(values['secret-file']), list(values['previous-secret-file'])] as const;
  const offersEvents = modules.some((m) => m.events !== undefined);
  const acceptUnsealed = values['accept-unsealed'] === true;
  const keyring = workerKeyringOf(...secrets, io, { offersEvents, acceptUnsealed });
  const log = new KafkaLog({
    ...kafka,
    ...group,
    onProblem: problemLogger(io.logger),
  });
  const w = new Worker({
    log,
    topics,
    modules,
    ...(str(values['group']) === undefined ? {} : { group: str(values['group'])! }),
    ...(keyring === undefined ? {} : { keyring }),
    ...ttlsOf(values),
    ...handoff,
    ...workerLimitsOf(values),
    ...events,
    ...serverIdentityOf(values, WORKER_DEFAULTS.serverInfo),
    ...observe(io.logger),
  });
  await startOrClose(w, log);
  let health: Server | undefined;
  const probe = topicsProbe(kafka, topics);
  if (values['health-port'] !== undefined) {
    const healthPort = port(str(values['health-port']), '--health-port', 0);
    health = createServer((req, res) => {
      if (req.url === '/healthz') {
        // Alive unless a partition's read loop stopped coming back (a wedged worker is restarted).
        const { alive, stalled } = w.liveness();
        return void res
          .writeHead(alive ? 200 : 503)
          .end(alive ? 'ok' : `stalled partitions: ${stalled.join(',')}`);
      }
      if (req.url === '/readyz') {
        void probe
          .ready()
          .then((ok) =>
            res
              .writeHead(ok ? 200 : 503)
              .end(ok ? ['ready', ...w.slotNotes()].join('; ') : 'not ready'),
          );
        return;
      }
      res.writeHead(404).end();
    }).listen(healthPort);
  }
  sayTools(io.out, `Tidemark worker ${w.epoch} started; tools:`, w.modules, io.cwd);
  announce(io, metrics);
  await io.stopSignal;
  health?.close();
  await w.stop();
  await probe.close();
  await log.close();
}

function toolSpecifiers(
  tools: readonly string[],
  cwd: string,
  fallback: readonly string[],
): string[] {
  const chosen = tools.length > 0 ? tools : fallback;
  return chosen.map((spec) =>
    spec.startsWith('.') || isAbsolute(spec) ? pathToFileURL(resolve(cwd, spec)).href : spec,
  );
}

/** The URLs dev serves; test helpers and users read `MCP endpoint:` and `Console:`. */
function announceEndpoints(io: Io, host: string, port: number, consolePath?: string): void {
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  io.out(`MCP endpoint: ${origin}/mcp`);
  if (consolePath !== undefined) io.out(`Console: ${origin}${consolePath} (this machine only)`);
}

function announce(io: Io, line: string | undefined): void {
  if (line !== undefined) io.out(line);
}

function portOf(server: Server): number {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** Starts the worker; when it cannot start (a tool module failed its probe), the log is closed. */
async function startOrClose(worker: Worker, log: { close(): Promise<void> }): Promise<void> {
  try {
    await worker.start();
  } catch (error) {
    await log.close().catch(() => undefined);
    throw error;
  }
}
