import type { AddressInfo } from 'node:net';
import { createGateway } from '@tidemark/gateway';
import { createKeyring, type TopicNames } from '@tidemark/protocol';
import { Worker, type ToolModule, type WorkerOptions } from '@tidemark/worker';

/** A worker and two gateways in this process on a log of the caller's (embedded or Kafka). */
export interface LogStack {
  /** The first gateway's endpoint. */
  readonly url: string;
  /** Every gateway's endpoint: a client may resume on another. */
  readonly urls: readonly string[];
  readonly worker: Worker;
  stop(): Promise<void>;
}

export async function startLogStack(
  log: WorkerOptions['log'] & { close(): Promise<void> },
  topics: TopicNames,
  modules: ToolModule[],
  worker: Partial<WorkerOptions> = {},
): Promise<LogStack> {
  const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
  const w = new Worker({
    log,
    topics,
    keyring,
    modules,
    pollMs: 20,
    onProblem: () => {},
    ...worker,
  });
  await w.start();
  const gateways = await Promise.all(
    [0, 1].map(async () => {
      const gateway = await createGateway({
        log,
        topics,
        keyring,
        tailWaitMs: 50,
        onError: () => {},
      });
      return { gateway, server: await gateway.listen(0, '127.0.0.1') };
    }),
  );
  const urls = gateways.map(
    ({ server }) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
  );
  return {
    url: urls[0]!,
    urls,
    worker: w,
    stop: async () => {
      await Promise.all(
        gateways.map(({ gateway, server }) => {
          const drained = gateway.drain();
          server.closeIdleConnections();
          return drained;
        }),
      );
      await w.stop();
      await log.close();
    },
  };
}
