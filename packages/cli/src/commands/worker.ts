import { createServer, type Server } from 'node:http';
import { KafkaLog } from '@tidemark/kafka';
import { topicNames } from '@tidemark/protocol';
import { loadToolModules, Worker, WORKER_DEFAULTS } from '@tidemark/worker';
import { SERVER_IDENTITY_FLAGS, serverIdentityOf } from '../flags/server-identity.js';
import { sayTools } from '../banner.js';
import { topicsProbe } from '../health.js';
import { workerKeyringOf } from '../flags/event-id-secret.js';
import { observe, problemLogger } from '../worker-log.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from '../flags/kafka.js';
import { WORKER_LIMIT_FLAGS, workerLimitsOf } from '../flags/limits.js';
import type { Io } from '../io.js';
import { list, parseFlags, port, str, UsageError } from '../options.js';
import { applyTelemetryFlags, TELEMETRY_FLAGS } from '../flags/telemetry.js';
import { TTL_FLAGS, ttlsOf } from '../flags/ttl.js';
import { EVENT_FLAGS, eventOptionsOf } from '../flags/events.js';
import { GROUP_FLAGS, groupLogOptionsOf, handoffOf, SLEEP_FLAGS, sleepOf } from '../flags/group.js';
import { toolSpecifiers, announce, startOrClose } from './shared.js';
import { hostedModules, MCP_SERVER_FLAGS } from '../flags/mcp-servers.js';

/** `tidemark worker`'s flags, as its help lists them. */
export const WORKER_FLAGS = {
  ...KAFKA_FLAGS,
  tools: { type: 'string', multiple: true },
  ...SERVER_IDENTITY_FLAGS,
  ...GROUP_FLAGS,
  ...SLEEP_FLAGS,
  'health-port': { type: 'string' },
  'secret-file': { type: 'string' },
  'previous-secret-file': { type: 'string', multiple: true },
  'accept-unsealed': { type: 'boolean' },
  'public-url': { type: 'string' },
  ...TELEMETRY_FLAGS,
  ...TTL_FLAGS,
  ...WORKER_LIMIT_FLAGS,
  ...EVENT_FLAGS,
  ...MCP_SERVER_FLAGS,
} as const;

export async function worker(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, WORKER_FLAGS);
  const metrics = applyTelemetryFlags(values);
  const tools = list(values['tools']);
  const hosted = hostedModules(values, io.cwd);
  if (tools.length === 0 && hosted.modules.length === 0)
    throw new UsageError(
      '--tools or --mcp-server: required (a tool module path or package, or a stdio MCP server to host; repeatable)',
    );
  const kafka = kafkaOptions(values, io);
  const topics = topicNames(prefixOf(values));
  const events = eventOptionsOf(values);
  const group = groupLogOptionsOf(values);
  const handoff = handoffOf(values);
  const sleep = sleepOf(values);
  const modules = [
    ...(await loadToolModules(toolSpecifiers(tools, io.cwd, []))),
    ...hosted.modules,
  ];
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
    ...(str(values['public-url']) === undefined ? {} : { publicUrl: str(values['public-url'])! }),
    ...ttlsOf(values),
    ...handoff,
    ...sleep,
    ...workerLimitsOf(values),
    ...events,
    ...serverIdentityOf(values, WORKER_DEFAULTS.serverInfo),
    ...observe(io.logger),
  });
  // A start that fails ends the hosted servers' processes that did start, too.
  await startOrClose(w, { close: () => hosted.close().then(() => log.close()) });
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
  await hosted.close();
  await probe.close();
  await log.close();
}
