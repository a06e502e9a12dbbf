// The two places every interop client runs against: `tidemark dev` (the CLI's own command, in this
// process, on its embedded log) and a cluster on the real broker — two gateway processes sharing
// one worker process, which a test may kill -9 and replace.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, inject } from 'vitest';
import { provisionTopics } from '@tidemark/kafka';
import { uniqueTopicName } from '@tidemark/kafka-fixtures';
import { devInProcess } from '../support/dev-in-process.js';
import { startProcess, supportScript, type TestProcess } from '../support/processes.js';
import type { Deployment } from './matrix.js';

export interface InteropTarget {
  readonly deployment: Deployment;
  /** Two endpoints to alternate between; on dev both are its one endpoint. */
  readonly urls: readonly [string, string];
  /**
   * Kills the worker with SIGKILL and starts another in its place (the cluster only); with a task
   * or session id, once the worker has started running it — a kill mid-call, not before it.
   */
  replaceWorker(running?: string): Promise<void>;
  stop(): Promise<void>;
}

const EXAMPLES = ['counting', 'interactive', 'events'].map((name) => `@tidemark/examples/${name}`);

export async function startDev(): Promise<InteropTarget> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-interop-'));
  // The example tools and event types; webhooks may call back to the test's loopback receiver.
  const dev = await devInProcess(dir, [
    ...['--port', '0', '--data', join(dir, 'data'), '--console', 'off'],
    ...['--tools', EXAMPLES.join(','), '--allow-loopback-webhooks'],
  ]);
  return {
    deployment: 'dev',
    urls: [dev.url, dev.url],
    replaceWorker: () => Promise.reject(new Error('tidemark dev has no worker process to kill')),
    stop: () => dev.stop(),
  };
}

export async function startCluster(brokers: readonly string[]): Promise<InteropTarget> {
  const prefix = `${uniqueTopicName('interop')}.`;
  const { names } = await provisionTopics(
    { brokers: [...brokers] },
    { prefix, partitions: 2, replicationFactor: 1 },
  );
  const kills: Array<() => void> = [];
  const register = (fn: () => void) => kills.push(fn);
  const secret = randomBytes(32).toString('hex');
  const startWorker = async () => {
    // With the gateways' secret and `events`: the example event types, loopback webhooks allowed.
    const worker = startProcess(register, process.execPath, [
      supportScript('worker-process.ts'),
      brokers.join(','),
      prefix,
      `${prefix}workers`,
      secret,
      'events',
    ]);
    await worker.waitFor(
      (e) => Array.isArray(e['assigned']) && (e['assigned'] as number[]).length === 2,
      60_000,
    );
    return worker;
  };
  const gateways: TestProcess[] = [0, 1].map(() =>
    startProcess(register, process.execPath, [
      supportScript('gateway-process.ts'),
      brokers.join(','),
      prefix,
      secret,
    ]),
  );
  let worker = await startWorker();
  const ports = await Promise.all(
    gateways.map(async (g) => (await g.waitFor((e) => typeof e['port'] === 'number'))['port']),
  );
  const url = (port: unknown) => `http://127.0.0.1:${String(port)}/mcp`;
  return {
    deployment: 'kafka',
    urls: [url(ports[0]), url(ports[1])],
    replaceWorker: async (running) => {
      if (running !== undefined)
        await worker.waitFor(
          (e) => (e['execution'] as { session?: string } | undefined)?.session === running,
        );
      worker.child.kill('SIGKILL');
      worker = await startWorker();
    },
    stop: async () => {
      for (const kill of kills) kill();
      const admin = new Admin({
        clientId: 'tidemark-test-cleanup',
        bootstrapBrokers: [...brokers],
      });
      try {
        await admin.deleteTopics({ topics: Object.values(names) });
      } finally {
        await admin.close();
      }
    },
  };
}

/** Starts `deployment` before the suite's tests and stops it after: the running target. */
export function useDeployment(deployment: Deployment): () => InteropTarget {
  let target: InteropTarget | undefined;
  beforeAll(async () => {
    target = deployment === 'dev' ? await startDev() : await startCluster(inject('kafkaBrokers'));
  }, 120_000);
  afterAll(() => target?.stop());
  return () => {
    if (target === undefined) throw new Error(`interop: ${deployment} did not start`);
    return target;
  };
}
