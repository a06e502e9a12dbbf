import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { reservePorts } from './ports.js';

const run = promisify(execFile);

/** Where the broker of a test run came from, in the order they are tried. */
export type KafkaSource = 'env' | 'testcontainers' | 'local';

export interface KafkaBroker {
  /** Bootstrap addresses, `host:port`. */
  readonly brokers: readonly string[];
  readonly source: KafkaSource;
  /** Stops the broker if this fixture started it; a no-op for an existing cluster. */
  stop(): Promise<void>;
}

export interface ResolveKafkaOptions {
  /** The environment to read (`KAFKA_BROKERS`, `CI`, `DOCKER_HOST`); defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Directory to search upwards from for `infra/kafka/kafka.sh`; defaults to the working directory. */
  searchFrom?: string;
  /** Image for Testcontainers; defaults to {@link DEFAULT_KAFKA_IMAGE}. */
  image?: string;
  /** Unix socket probed for a Docker engine when `DOCKER_HOST` is unset. */
  dockerSocket?: string;
  /** Progress lines ("using the local broker at …"); defaults to stderr. */
  log?: (line: string) => void;
}

export const DEFAULT_KAFKA_IMAGE = 'apache/kafka:4.1.1';

/** No broker could be found or started; the message names the three ways to get one. */
export class KafkaUnavailableError extends Error {
  readonly code = 'TIDEMARK_TEST_KAFKA_UNAVAILABLE';
  constructor(reasons: readonly string[], inCi: boolean) {
    super(
      [
        inCi
          ? 'No Kafka broker for the tests, and CI=true requires one (tests that need Kafka never skip).'
          : 'No Kafka broker for the tests. Give them one of:',
        '  1. KAFKA_BROKERS=host:port[,host:port] pointing at an existing cluster;',
        '  2. a running Docker engine (Testcontainers starts apache/kafka);',
        '  3. Java 17+ and Maven on PATH (infra/kafka/kafka.sh fetches and starts a local broker).',
        'Tried:',
        ...reasons.map((reason) => `  - ${reason}`),
      ].join('\n'),
    );
    this.name = 'KafkaUnavailableError';
  }
}

/**
 * Finds or starts a real Kafka broker: `KAFKA_BROKERS` if set, else Testcontainers when a Docker
 * engine answers, else the local no-Docker broker of `infra/kafka`. Throws
 * {@link KafkaUnavailableError} when none works: a test that needs Kafka must fail, not skip.
 */
export async function resolveKafka(options: ResolveKafkaOptions = {}): Promise<KafkaBroker> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const reasons: string[] = [];

  const fromEnv = parseBrokerList(env['KAFKA_BROKERS']);
  if (fromEnv !== undefined) {
    log(`kafka: using KAFKA_BROKERS=${fromEnv.join(',')}`);
    return { brokers: fromEnv, source: 'env', stop: async () => {} };
  }
  reasons.push('KAFKA_BROKERS is not set');

  if (await dockerAnswers(env, options.dockerSocket ?? '/var/run/docker.sock')) {
    try {
      return await startTestcontainer(options.image ?? DEFAULT_KAFKA_IMAGE, log);
    } catch (error) {
      reasons.push(`Testcontainers failed: ${describe(error)}`);
    }
  } else {
    reasons.push('no Docker engine answers (DOCKER_HOST or /var/run/docker.sock)');
  }

  const script = findLocalBrokerScript(options.searchFrom ?? process.cwd());
  if (script === undefined) {
    reasons.push('infra/kafka/kafka.sh not found above the working directory');
  } else {
    const missing = (
      await Promise.all(
        ['java', 'mvn'].map(async (tool) => ((await onPath(tool)) ? undefined : tool)),
      )
    ).filter((tool) => tool !== undefined);
    if (missing.length > 0) {
      reasons.push(`local broker needs ${missing.join(' and ')} on PATH`);
    } else {
      try {
        return await startLocalBroker(script, env, log);
      } catch (error) {
        reasons.push(`local broker failed: ${describe(error)}`);
      }
    }
  }
  throw new KafkaUnavailableError(reasons, env['CI'] === 'true');
}

/** Parses `host:port,host:port`; undefined when unset or blank, TypeError when malformed. */
export function parseBrokerList(value: string | undefined): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const brokers = value.split(',').map((part) => part.trim());
  for (const broker of brokers) {
    if (!/^[^\s:]+:\d{1,5}$/.test(broker) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(broker)) {
      throw new TypeError(
        `KAFKA_BROKERS: "${broker}" is not host:port (expected host:port[,host:port])`,
      );
    }
  }
  return brokers;
}

/** The repository's `infra/kafka/kafka.sh`, searched upwards from `from`. */
export function findLocalBrokerScript(from: string): string | undefined {
  let dir = resolve(from);
  for (;;) {
    const candidate = join(dir, 'infra', 'kafka', 'kafka.sh');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

async function startLocalBroker(
  script: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<KafkaBroker> {
  // A broker someone started by hand (npm run kafka:start) is used and left running.
  const before = await run('bash', [script, 'status'], { env }).then(
    ({ stdout }) => stdout.trim(),
    () => undefined,
  );
  if (before !== undefined) {
    log(`kafka: using the running local broker at ${before}`);
    return { brokers: [before], source: 'local', stop: async () => {} };
  }
  // Otherwise a broker of this run's own: its own directory, and ports outside the ephemeral
  // range unless the environment names them (TIDEMARK_KAFKA_PORT, TIDEMARK_KAFKA_DIR).
  const own = env['TIDEMARK_KAFKA_DIR'] === undefined;
  const dir = env['TIDEMARK_KAFKA_DIR'] ?? mkdtempSync(join(tmpdir(), 'tidemark-kafka-'));
  const brokerEnv = {
    ...env,
    TIDEMARK_KAFKA_DIR: dir,
    TIDEMARK_KAFKA_PORT: env['TIDEMARK_KAFKA_PORT'] ?? String(await reservePorts({ count: 2 })),
    // The suites create a few hundred topics and run a chaos profile against this broker.
    TIDEMARK_KAFKA_HEAP: env['TIDEMARK_KAFKA_HEAP'] ?? '1g',
  };
  log(`kafka: starting a local broker (infra/kafka/kafka.sh start, in ${dir})`);
  const { stdout } = await run('bash', [script, 'start'], {
    env: brokerEnv,
    maxBuffer: 16 * 1024 * 1024,
  });
  const address = stdout.trim().split('\n').at(-1) ?? '';
  log(`kafka: local broker ready at ${address}`);
  return {
    brokers: [address],
    source: 'local',
    stop: async () => {
      // A directory the environment named keeps its data; the run's own is removed, except the
      // broker's log where CI asks for it (it prints the log when a run fails).
      await run('bash', [script, own ? 'reset' : 'stop'], { env: brokerEnv });
      if (own && env['TIDEMARK_KEEP_BROKER_LOG'] !== '1') {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function startTestcontainer(
  image: string,
  log: (line: string) => void,
): Promise<KafkaBroker> {
  log(`kafka: starting ${image} with Testcontainers`);
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const container = await new KafkaContainer(image).withKraft().start();
  const address = `${container.getHost()}:${container.getMappedPort(9093)}`;
  return {
    brokers: [address],
    source: 'testcontainers',
    stop: async () => {
      await container.stop();
    },
  };
}

async function dockerAnswers(env: NodeJS.ProcessEnv, socket: string): Promise<boolean> {
  const host = env['DOCKER_HOST'];
  if (host !== undefined && host !== '') return true; // Testcontainers will say if it does not answer.
  if (!existsSync(socket)) return false;
  return new Promise((resolvePromise) => {
    const connection = connect(socket);
    connection.once('connect', () => {
      connection.destroy();
      resolvePromise(true);
    });
    connection.once('error', () => resolvePromise(false));
  });
}

async function onPath(tool: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${tool}`]).then(
    () => true,
    () => false,
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
}
