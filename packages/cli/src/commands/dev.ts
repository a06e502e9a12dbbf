import { resolve } from 'node:path';
import { createGateway } from '@tidemark/gateway';
import { topicNames } from '@tidemark/protocol';
import { loadToolModules, Worker, WORKER_DEFAULTS } from '@tidemark/worker';
import { CONSOLE_FLAGS, mountedConsoleOf } from '../console.js';
import { SERVER_IDENTITY_FLAGS, serverIdentityOf } from '../flags/server-identity.js';
import { sayTools } from '../banner.js';
import { addHealth } from '../health.js';
import { devSecret, openDevLog } from '../dev-data.js';
import { keyringOf } from '../flags/event-id-secret.js';
import { DEV_SSE_RETRY_MS, DRAIN_FLAGS, drainOf } from '../flags/drain.js';
import { DEV_DATA, DEV_PORT } from '../flags/dev-defaults.js';
import { watchToolModules } from '../watch.js';
import { observe } from '../worker-log.js';
import { AUTH_FLAGS, authOf } from '../flags/auth.js';
import { LIMIT_FLAGS, limitsOf, WORKER_LIMIT_FLAGS, workerLimitsOf } from '../flags/limits.js';
import type { Io } from '../io.js';
import { list, LOOPBACK_BIND_ADDRESSES, parseFlags, port, str, UsageError } from '../options.js';
import { applyTelemetryFlags, TELEMETRY_FLAGS } from '../flags/telemetry.js';
import { TASKS_FLAG, tasksOf } from '../flags/tasks.js';
import { duration, TTL_FLAGS, ttlsOf } from '../flags/ttl.js';
import { EVENT_FLAGS, eventOptionsOf } from '../flags/events.js';
import { HANDOFF_FLAGS, handoffOf } from '../flags/group.js';
import { hostedModules, MCP_SERVER_FLAGS } from '../flags/mcp-servers.js';
import {
  DEFAULT_EXAMPLES,
  toolSpecifiers,
  announceEndpoints,
  announce,
  portOf,
  startOrClose,
} from './shared.js';

export const DEV_FLAGS = {
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
  ...MCP_SERVER_FLAGS,
} as const;

export async function dev(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, DEV_FLAGS);
  const listenPort = port(str(values['port']), '--port', DEV_PORT);
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
  const data = resolve(io.cwd, str(values['data']) ?? DEV_DATA);
  const hosted = hostedModules(values, io.cwd);
  // Hosting a server of one's own: the examples are not served beside it unless asked for.
  const examples = hosted.modules.length > 0 ? [] : DEFAULT_EXAMPLES;
  const specifiers = toolSpecifiers(list(values['tools']), io.cwd, examples);
  const modules = [...(await loadToolModules(specifiers)), ...hosted.modules];
  const log = openDevLog(data);
  const topics = topicNames();
  log.provisionTopics(topics, { partitions: 4, resumeWindowMs });
  const keyring = keyringOf(devSecret(data));
  const worker = new Worker({
    log,
    topics,
    modules,
    keyring,
    // Signal URLs (`ex.signal`) name this server, as its clients reach it.
    publicUrl: str(values['public-url']) ?? `http://${urlHost(host)}:${listenPort}/mcp`,
    ...ttls,
    ...handoff,
    ...workerLimitsOf(values),
    ...eventOptionsOf(values),
    ...serverIdentityOf(values, WORKER_DEFAULTS.serverInfo),
    ...observe(io.logger),
  });
  // A tool module that cannot start stops startup here, named (Worker.start probes them all).
  await startOrClose(worker, { close: () => hosted.close().then(() => log.close()) });
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
      ? watchToolModules(specifiers, worker, { ...io, say: io.out }, hosted.modules)
      : undefined;
  await io.stopSignal;
  watching?.close();
  console?.close();
  await gateway.drain();
  await worker.stop();
  await hosted.close();
  await log.close();
}

/** A host as a URL names it (an IPv6 address in brackets). */
function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
