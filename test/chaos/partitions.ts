// The chaos runner's partitions profiles (issue #56): the broker, the two workers and the two
// gateways each on a host of its own (a network namespace), the runner — the clients and the
// balancer in front of the gateways — on the bridge between them. A fault cuts a host from a peer
// with iptables while every process keeps running: nothing closes, nothing refuses, timers must
// notice. The checker, the effect counts and the floors are the runner's own; only the cluster and
// the faults are these.
// (Runs under Node's type stripping: the chaos runner imports it.)
import { startDedicatedBroker } from '@tidemark/kafka-fixtures';
import { Cluster, sleep, type Member } from '../e2e/cluster.ts';
import { TestNetwork } from '../support/netns.ts';
import type { Fault } from './timeline.ts';

/** The workers' group session: a cut longer than this moves their partitions. */
const SESSION_TIMEOUT_MS = 6_000;
/** A gateway cut from the broker answers 503 after this long (its default is 20 s). */
const GATEWAY_LOG_TIMEOUT_MS = 5_000;
/**
 * The balancer closes a connection silent this long, as a load balancer's idle timeout does:
 * longer than undici's keep-alive (4 s), so it never closes a pooled connection a client is about
 * to reuse, and than the gateways' keep-alive comments on idle streams (every 2 s here).
 */
const BALANCER_IDLE_MS = 5_000;

export interface PartitionedCluster {
  readonly cluster: Cluster;
  readonly brokers: readonly string[];
  readonly faults: Record<string, Fault>;
  stop(): Promise<void>;
}

export interface FaultTools {
  readonly pick: <T>(items: readonly T[]) => T;
  /**
   * A process whose durable step may run again: its outcome may not have reached the journal
   * before the cut, as with a kill -9.
   */
  readonly excuse: (pid: number) => void;
}

/** Starts the network, the broker on a host of its own, and the cluster on hosts of theirs. */
export async function startPartitioned(
  label: string,
  tools: FaultTools,
): Promise<PartitionedCluster> {
  const network = TestNetwork.create();
  const brokerHost = network.host();
  const broker = await startDedicatedBroker({ netns: brokerHost }).catch((error: unknown) => {
    network.destroy();
    throw error;
  });
  let cluster: Cluster;
  try {
    cluster = await Cluster.start({
      brokers: broker.brokers,
      label,
      partitions: 4,
      gateways: 2,
      workers: 2,
      network,
      groupSessionTimeoutMs: SESSION_TIMEOUT_MS,
      handoffTimeoutMs: 2_000,
      gatewayLogTimeoutMs: GATEWAY_LOG_TIMEOUT_MS,
      gatewayKeepAliveMs: 2_000,
    });
  } catch (error) {
    await broker.destroy();
    network.destroy();
    throw error;
  }
  cluster.balancer.idleTimeoutMs = BALANCER_IDLE_MS;
  return {
    cluster,
    brokers: broker.brokers,
    faults: partitionFaults(cluster, network, brokerHost.address, tools),
    async stop() {
      await cluster.stop();
      await broker.destroy();
      network.destroy();
    },
  };
}

function partitionFaults(
  cluster: Cluster,
  network: TestNetwork,
  broker: string,
  { pick, excuse }: FaultTools,
): Record<string, Fault> {
  /** Cuts `host` from `peer` for `ms`, then heals it. */
  const cutFor = async (member: Member, peer: string, ms: number) => {
    network.cut(member.host!, peer);
    try {
      await sleep(ms);
    } finally {
      network.heal(member.host!, peer);
    }
  };
  /** A gateway, and the balancer pointed at the other: a gateway that fails its checks leaves the Service. */
  const gatewayAway = () => {
    const victim = pick(cluster.gateways);
    cluster.release(cluster.gateways.find((g) => g !== victim));
    return victim;
  };
  return {
    // The zombie: its partitions move and its call runs again on the other worker, replaying the
    // steps the zombie journaled; what the zombie still writes when it comes back is fenced.
    'worker cut from the broker past its session timeout': {
      kind: 'partition',
      run: async () => {
        const victim = pick(cluster.workers);
        excuse(victim.process.child.pid!);
        await cutFor(victim, broker, SESSION_TIMEOUT_MS * 2);
        await cluster.assigned();
      },
    },
    // Shorter than its session: nothing moves, nothing resets, nothing runs twice.
    'worker cut from the broker within its session timeout': {
      kind: 'partition',
      run: () => cutFor(pick(cluster.workers), broker, SESSION_TIMEOUT_MS / 3),
    },
    // Its clients' requests are answered 503 by its deadline; their streams wait and go on.
    'gateway cut from the broker': {
      kind: 'gateway',
      run: () => cutFor(gatewayAway(), broker, GATEWAY_LOG_TIMEOUT_MS + 2_000),
    },
    // Its clients' connections fall silent; the balancer closes them, and they resume elsewhere.
    'gateway cut from its clients': {
      kind: 'cut',
      run: () => cutFor(gatewayAway(), network.gatewayAddress, BALANCER_IDLE_MS + 3_000),
    },
  };
}
