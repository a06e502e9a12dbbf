import type { AddressInfo } from 'node:net';
import { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import {
  createGateway,
  tokenFileAuthenticator,
  type Gateway,
  type GatewayOptions,
} from '@tidemark/gateway';
import {
  createKeyring,
  topicNames,
  type Keyring,
  type LogPort,
  type TopicNames,
} from '@tidemark/protocol';
import { Worker, type ToolModule, type WorkerOptions } from '@tidemark/worker';

export interface EmbeddedStack {
  readonly log: EmbeddedLog;
  readonly topics: TopicNames;
  readonly worker: Worker;
  /** The keyring the gateways mint and verify event ids with. */
  readonly keyring: Keyring;
  /** The gateway replicas, all on the one log. */
  readonly gateways: ReadonlyArray<{ gateway: Gateway; url: string; port: number }>;
  stop(): Promise<void>;
}

export interface EmbeddedStackOptions {
  partitions?: number;
  replicas?: number;
  modules?: ToolModule[];
  gateway?: Partial<GatewayOptions>;
  worker?: Partial<WorkerOptions>;
  /** Bearer tokens the gateways accept, each for its subject (a tokens file's lines). */
  bearerTokens?: Readonly<Record<string, string>>;
  /** The log a gateway replica sees (to count what it reads); default the stack's log. */
  gatewayLog?: (log: LogPort, replica: number) => LogPort;
  /** A gateway replica's keyring (a rotation half done); default the stack's. */
  gatewayKeyring?: (replica: number) => Keyring;
}

/** Tidemark in one test process on the embedded (in-memory) log: a worker and gateway replicas. */
export async function embeddedStack(options: EmbeddedStackOptions = {}): Promise<EmbeddedStack> {
  const log = new EmbeddedLog({ path: ':memory:' });
  const topics = topicNames('t.');
  log.provisionTopics(topics, { partitions: options.partitions ?? 2 });
  const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
  // The worker holds the gateways' keyring: it takes only records a gateway sealed.
  const worker = new Worker({
    log,
    topics,
    modules: options.modules ?? [counting],
    pollMs: 20,
    onProblem: () => {},
    keyring,
    ...options.worker,
  });
  await worker.start();
  const gateways = await Promise.all(
    Array.from({ length: options.replicas ?? 1 }, async (_, replica) => {
      const gateway = await createGateway({
        log: options.gatewayLog?.(log, replica) ?? log,
        topics,
        keyring: options.gatewayKeyring?.(replica) ?? keyring,
        tailWaitMs: 50,
        onError: () => {},
        ...(options.bearerTokens === undefined
          ? {}
          : { authenticate: tokenFileAuthenticator(tokensFile(options.bearerTokens)) }),
        ...options.gateway,
      });
      const server = await gateway.listen(0, '127.0.0.1');
      const port = (server.address() as AddressInfo).port;
      return { gateway, server, port, url: `http://127.0.0.1:${port}/mcp` };
    }),
  );
  return {
    log,
    topics,
    worker,
    keyring,
    gateways,
    stop: async () => {
      // A drain waits for idle kept-alive connections to expire (about 4 s: a client's request
      // written as one closed would fail with nothing to resume). At a test's end no request is
      // coming: the idle ones are closed at once, and the drain waits only for what is in flight.
      for (const { gateway, server } of gateways) {
        const drained = gateway.drain();
        server.closeIdleConnections();
        await drained;
      }
      await worker.stop();
      await log.close();
    },
  };
}

function tokensFile(tokens: Readonly<Record<string, string>>): string {
  return Object.entries(tokens)
    .map(([token, subject]) => `${token} ${subject}\n`)
    .join('');
}
