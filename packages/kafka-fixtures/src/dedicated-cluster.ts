import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findLocalBrokerScript } from './kafka-broker.js';
import { reservePorts } from './ports.js';

const run = promisify(execFile);

/** One node (broker and controller) of a dedicated multi-node cluster. */
export interface ClusterNode {
  /** Its `node.id` (1, 2, 3, …): what metadata names as a partition's leader or the controller. */
  readonly id: number;
  /** Its PLAINTEXT port; the controller listens on the next one. */
  readonly port: number;
  /** kill -9: no shutdown, no leadership handed over. */
  kill(): void;
  /** Stops it (SIGTERM, then SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** Starts it again with its data; resolves once it serves. */
  start(): Promise<void>;
  readonly running: boolean;
}

export interface DedicatedCluster {
  /** Bootstrap addresses of every node. */
  readonly brokers: readonly string[];
  readonly nodes: readonly ClusterNode[];
  /** Stops every node and deletes the data. */
  destroy(): Promise<void>;
}

export interface DedicatedClusterOptions {
  /** Nodes, each a broker and a controller voter. @default 3 */
  nodes?: number;
  /** `min.insync.replicas` (and of the internal topics). @default 2 */
  minInsyncReplicas?: number;
  searchFrom?: string;
}

/**
 * A real multi-node KRaft cluster from the same broker jars as the single test broker: every node
 * a broker and a controller voter (a static quorum), replication factor = node count for the
 * internal topics and by default, `min.insync.replicas` 2, no unclean leader election. For the
 * failure suite's faults of a production cluster: a leader killed, the controller killed, the ISR
 * shrunk below `min.insync.replicas`. Needs Java and Maven.
 */
export async function startDedicatedCluster(
  options: DedicatedClusterOptions = {},
): Promise<DedicatedCluster> {
  const script = findLocalBrokerScript(options.searchFrom ?? process.cwd());
  if (script === undefined)
    throw new Error('infra/kafka/kafka.sh not found: a dedicated cluster needs the checkout');
  const count = options.nodes ?? 3;
  const minIsr = options.minInsyncReplicas ?? 2;
  const root = mkdtempSync(join(tmpdir(), 'tidemark-cluster-'));
  const base = await reservePorts({ count: 2 * count });
  const clusterId = newClusterId();
  const voters = Array.from(
    { length: count },
    (_, i) => `${i + 1}@127.0.0.1:${base + 2 * i + 1}`,
  ).join(',');
  const layout = { root, base, count, minIsr, voters, clusterId, script };
  const nodes = Array.from({ length: count }, (_, i) => clusterNode(layout, i + 1));
  const destroy = async () => {
    await Promise.all(nodes.map(({ reset }) => reset().catch(() => undefined)));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    // Together: a node's broker waits for the controller quorum, which needs a majority.
    await Promise.all(nodes.map(({ node }) => node.start()));
  } catch (error) {
    await destroy();
    throw error;
  }
  return {
    brokers: nodes.map(({ node }) => `127.0.0.1:${node.port}`),
    nodes: nodes.map(({ node }) => node),
    destroy,
  };
}

interface ClusterLayout {
  root: string;
  /** The first reserved port: node n listens on base + 2(n-1), its controller on the next. */
  base: number;
  count: number;
  minIsr: number;
  voters: string;
  clusterId: string;
  script: string;
}

/** One node's configuration and its handle, through the same `kafka.sh` as the single broker. */
function clusterNode(
  layout: ClusterLayout,
  id: number,
): { node: ClusterNode; reset: () => Promise<unknown> } {
  const port = layout.base + 2 * (id - 1);
  const dir = join(layout.root, `node-${id}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'node.properties'), nodeProperties(layout, id));
  const env = {
    ...process.env,
    TIDEMARK_KAFKA_DIR: dir,
    TIDEMARK_KAFKA_PORT: String(port),
    TIDEMARK_KAFKA_HEAP: '320m',
    TIDEMARK_KAFKA_CLUSTER_ID: layout.clusterId,
    TIDEMARK_KAFKA_EXTRA_CONFIG: join(dir, 'node.properties'),
  };
  const kafka = (command: string) =>
    run('bash', [layout.script, command], { env, maxBuffer: 16 * 1024 * 1024 });
  const pid = () => {
    try {
      return Number(readFileSync(join(dir, 'broker.pid'), 'utf8'));
    } catch {
      return undefined;
    }
  };
  const alive = () => {
    const p = pid();
    if (p === undefined) return false;
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  const node: ClusterNode = {
    id,
    port,
    kill: () => {
      const p = pid();
      if (p !== undefined && alive()) process.kill(p, 'SIGKILL');
    },
    stop: async () => {
      await kafka('stop');
    },
    start: async () => {
      await kafka('start');
    },
    get running() {
      return alive();
    },
  };
  return { node, reset: () => kafka('reset') };
}

function nodeProperties({ count, minIsr, voters }: ClusterLayout, id: number): string {
  return [
    `node.id=${id}`,
    `controller.quorum.voters=${voters}`,
    `default.replication.factor=${count}`,
    `min.insync.replicas=${minIsr}`,
    `offsets.topic.replication.factor=${count}`,
    `transaction.state.log.replication.factor=${count}`,
    `transaction.state.log.min.isr=${minIsr}`,
    `share.coordinator.state.topic.replication.factor=${count}`,
    `share.coordinator.state.topic.min.isr=${minIsr}`,
    'unclean.leader.election.enable=false',
    // A killed node is noticed within seconds, not the default 9 s / 18 s.
    'broker.session.timeout.ms=6000',
    'broker.heartbeat.interval.ms=1000',
    'replica.lag.time.max.ms=5000',
    '',
  ].join('\n');
}

/**
 * A Kafka cluster id (16 random bytes, URL-safe base64), never one starting with '-': the format
 * command would read it as a flag (one id in 64 did), as Kafka's own generator knows.
 */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}
