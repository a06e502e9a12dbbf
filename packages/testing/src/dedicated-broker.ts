import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findLocalBrokerScript } from './kafka-broker.js';
import { reservePorts } from './ports.js';

const run = promisify(execFile);

/** A broker of one test's own, which the test may stop and start (a restart keeps its data). */
export interface DedicatedBroker {
  readonly brokers: readonly string[];
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
export async function startDedicatedBroker(
  options: { searchFrom?: string } = {},
): Promise<DedicatedBroker> {
  const script = findLocalBrokerScript(options.searchFrom ?? process.cwd());
  if (script === undefined)
    throw new Error(
      'infra/kafka/kafka.sh not found: a dedicated broker needs the repository checkout',
    );
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-dedicated-kafka-'));
  const port = await reservePorts({ count: 2 });
  const env = {
    ...process.env,
    TIDEMARK_KAFKA_DIR: dir,
    TIDEMARK_KAFKA_PORT: String(port),
    TIDEMARK_KAFKA_HEAP: '384m',
  };
  const kafka = (command: string) =>
    run('bash', [script, command], { env, maxBuffer: 16 * 1024 * 1024 });
  await kafka('start');
  return {
    brokers: [`127.0.0.1:${port}`],
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
