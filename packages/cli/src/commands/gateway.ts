import { hostname } from 'node:os';
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { topicNames } from '@tidemark/protocol';
import { CONSOLE_FLAGS, mountedConsoleOf } from '../console.js';
import { addHealth, topicsProbe } from '../health.js';
import {
  eventIdVersionOf,
  keyringOf,
  previousSecretsOf,
  secretOf,
} from '../flags/event-id-secret.js';
import { DRAIN_FLAGS, drainOf } from '../flags/drain.js';
import { problemLogger } from '../worker-log.js';
import { AUTH_FLAGS, authOf } from '../flags/auth.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from '../flags/kafka.js';
import { LIMIT_FLAGS, limitsOf } from '../flags/limits.js';
import type { Io } from '../io.js';
import { allOf, list, parseFlags, port, str, UsageError } from '../options.js';
import { applyTelemetryFlags, TELEMETRY_FLAGS } from '../flags/telemetry.js';
import { TASKS_FLAG, tasksOf } from '../flags/tasks.js';
import { TTL_FLAGS, ttlsOf } from '../flags/ttl.js';
import { GATEWAY_GROUP_FLAGS, gatewayGroupOf, groupLogOptionsOf } from '../flags/group.js';
import { announce, portOf } from './shared.js';

/** `tidemark gateway`'s flags, as its help lists them. */
export const GATEWAY_FLAGS = {
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
} as const;

export async function gateway(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, GATEWAY_FLAGS);
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
