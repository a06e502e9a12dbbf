import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findLocalBrokerScript } from './kafka-broker.js';
import { reservePorts } from './ports.js';

const run = promisify(execFile);

/** A broker of one test's own, which the test may stop and start (a restart keeps its data). */
export interface DedicatedBroker {
  readonly brokers: readonly string[];
  /** The first of its ports: PLAINTEXT; the controller listens on the next one. */
  readonly port: number;
  /** Its own directory (data, log): certificates and the like may live here too. */
  readonly dir: string;
  /** Stops the broker (SIGTERM, then SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

/**
 * Starts a single-node broker with `infra/kafka/kafka.sh` on free loopback ports outside the
 * kernel's ephemeral range (so its own clients, reconnecting while it is down, cannot take its port
 * before it restarts), for tests that restart or kill the broker and must not disturb the shared
 * one. Needs Java and Maven; throws a clear error without them.
 */
export interface DedicatedBrokerOptions {
  searchFrom?: string;
  /** Consecutive ports to reserve (more listeners than PLAINTEXT and CONTROLLER). @default 2 */
  ports?: number;
  /**
   * Broker properties appended to the template's (later keys win), made from the first port and
   * the broker's directory: secured listeners, for example.
   */
  config?: (port: number, dir: string) => string;
  /** More arguments to the storage format (e.g. `--add-scram SCRAM-SHA-512=[name=u,password=p]`). */
  formatArgs?: readonly string[];
  /** Runs before the broker starts, with its ports and directory (e.g. to make certificates). */
  prepare?: (port: number, dir: string) => Promise<void> | void;
  /**
   * A network namespace of the test's own to run the broker in, listening on `address` there
   * (tests that cut the network between the broker and its clients); its controller stays on the
   * namespace's loopback.
   */
  netns?: { readonly ns: string; readonly address: string };
}

export async function startDedicatedBroker(
  options: DedicatedBrokerOptions = {},
): Promise<DedicatedBroker> {
  const script = findLocalBrokerScript(options.searchFrom ?? process.cwd());
  if (script === undefined)
    throw new Error(
      'infra/kafka/kafka.sh not found: a dedicated broker needs the repository checkout',
    );
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-dedicated-kafka-'));
  const port = await reservePorts({ count: options.ports ?? 2 });
  await options.prepare?.(port, dir);
  const extra = [options.config?.(port, dir), listenersIn(options.netns, port)]
    .filter((part) => part !== undefined)
    .join('\n');
  if (extra !== '') writeFileSync(join(dir, 'extra.properties'), extra);
  const env = {
    ...process.env,
    TIDEMARK_KAFKA_DIR: dir,
    TIDEMARK_KAFKA_PORT: String(port),
    TIDEMARK_KAFKA_HEAP: '384m',
    ...(extra === '' ? {} : { TIDEMARK_KAFKA_EXTRA_CONFIG: join(dir, 'extra.properties') }),
    ...(options.formatArgs === undefined
      ? {}
      : { TIDEMARK_KAFKA_FORMAT_ARGS: options.formatArgs.join(' ') }),
  };
  const { netns } = options;
  const kafka = (command: string) =>
    netns === undefined
      ? run('bash', [script, command], { env, maxBuffer: 16 * 1024 * 1024 })
      : run('ip', ['netns', 'exec', netns.ns, 'bash', script, command], {
          env,
          maxBuffer: 16 * 1024 * 1024,
        });
  await kafka('start');
  return {
    brokers: [`${netns?.address ?? '127.0.0.1'}:${port}`],
    port,
    dir,
    stop: async () => {
      await kafka('stop');
    },
    start: async () => {
      await kafka('start');
    },
    destroy: async () => {
      await kafka('reset');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The listeners of a broker in a namespace: clients on its address, the controller on loopback. */
function listenersIn(netns: DedicatedBrokerOptions['netns'], port: number): string | undefined {
  if (netns === undefined) return undefined;
  return [
    `listeners=PLAINTEXT://${netns.address}:${port},CONTROLLER://127.0.0.1:${port + 1}`,
    `advertised.listeners=PLAINTEXT://${netns.address}:${port}`,
    '',
  ].join('\n');
}
