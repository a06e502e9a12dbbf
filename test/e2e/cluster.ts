// A Tidemark cluster of real processes for the failure suite and the chaos runner: gateway and
// worker processes on one broker, behind a TCP "load balancer" the test can cut, hold and move.
// (Runs under Node's type stripping too: the chaos runner imports it.)
import { randomBytes } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import { planTopics, provisionTopics, type TopicLayoutOptions } from '@tidemark/kafka';
import { topicNames, type TopicNames } from '@tidemark/protocol';
import type { CallStepReport } from '@tidemark/worker';
import { groupMembers, uniqueTopicName } from '@tidemark/kafka-fixtures';
import { join } from 'node:path';
import { startProcess, supportScript, type TestProcess } from '../support/processes.ts';
import { TestNetwork, type TestHost } from '../support/netns.ts';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';

export interface ClusterOptions {
  brokers: readonly string[];
  label: string;
  partitions?: number;
  gateways?: number;
  workers?: number;
  /** Topic configs beyond the defaults (e.g. a short retention of `events`). */
  layout?: Partial<TopicLayoutOptions>;
  /**
   * Configs of `events` that `provisionTopics` rightly refuses (a compacted events topic): the
   * topics are then created as planned but unchecked, to show what such a setup does.
   */
  misconfiguredEvents?: Record<string, string>;
  /** Workers offer the example event types (the Events extension), webhooks to loopback allowed. */
  events?: boolean;
  /** Workers hold the gateways' keyring (they sign signal URLs) without offering event types. */
  signals?: boolean;
  /** The workers' handoff timeout (default: the worker's). */
  handoffTimeoutMs?: number;
  /** The workers' consumer-group session timeout. @default 6 s */
  groupSessionTimeoutMs?: number;
  /**
   * A built checkout of another release (the rolling-upgrade test): the members started with the
   * cluster run its support scripts, on its own packages; later ones run this tree's by default.
   */
  release?: string;
  /** Each member on a host of its own in this network (partition tests); the brokers too. */
  network?: TestNetwork;
  /** The gateways' deadline for one operation on the log (their default: 20 s). */
  gatewayLogTimeoutMs?: number;
  /** The gateways' keep-alive interval on idle streams (their default: 15 s). */
  gatewayKeepAliveMs?: number;
  /**
   * The event-id format this tree's gateways mint (the library's default: 2). 1 where gateways of
   * 0.1.0, which verifies only 1, may be handed their ids — as the CLI's default does.
   */
  eventIdVersion?: 1 | 2;
}

export interface Member {
  readonly name: string;
  readonly process: TestProcess;
  /** A gateway's port. */
  readonly port: number;
  /** Its host, in a cluster on a test network. */
  readonly host?: TestHost;
}

/** A dead loopback port: a held balancer points here, so reconnects fail until released. */
const NOWHERE = 9;

export class Cluster {
  readonly brokers: readonly string[];
  readonly prefix: string;
  readonly names: TopicNames;
  readonly partitions: number;
  /** The gateways' event-id secret (hex), for tests that mint their own claims. */
  readonly secret: string;
  readonly gateways: Member[] = [];
  readonly workers: Member[] = [];
  /** Members that were killed or drained, kept for failure reports. */
  readonly retired: Member[] = [];
  readonly balancer: TcpProxy;
  private readonly events: boolean;
  private readonly signals: boolean;
  private readonly workerEnv: NodeJS.ProcessEnv;
  private readonly cleanups: Array<() => void> = [];
  private readonly network: TestNetwork | undefined;
  private readonly gatewayEnv: NodeJS.ProcessEnv;
  private counter = 0;

  private constructor(
    options: ClusterOptions,
    prefix: string,
    names: TopicNames,
    balancer: TcpProxy,
  ) {
    this.brokers = options.brokers;
    this.prefix = prefix;
    this.names = names;
    this.partitions = options.partitions ?? 2;
    this.secret = randomBytes(32).toString('hex');
    this.balancer = balancer;
    this.events = options.events === true;
    this.signals = options.signals === true;
    this.network = options.network;
    const { gatewayLogTimeoutMs: logTimeout, gatewayKeepAliveMs: keepAlive } = options;
    this.gatewayEnv = {
      ...process.env,
      ...(logTimeout === undefined ? {} : { TIDEMARK_TEST_LOG_TIMEOUT_MS: String(logTimeout) }),
      ...(keepAlive === undefined ? {} : { TIDEMARK_TEST_KEEP_ALIVE_MS: String(keepAlive) }),
      ...(options.eventIdVersion === undefined
        ? {}
        : { TIDEMARK_EVENT_ID_VERSION: String(options.eventIdVersion) }),
    };
    // On a test network each gateway listens on its own host's address.
    if (this.network !== undefined)
      balancer.hostOf = (port) =>
        this.gateways.find((g) => g.port === port)?.host?.address ?? '127.0.0.1';
    const { handoffTimeoutMs: handoff, groupSessionTimeoutMs: session } = options;
    this.workerEnv = {
      ...process.env,
      // Signal URLs name the balancer: a call that answers its own signal POSTs through it.
      ...(options.signals === true
        ? { TIDEMARK_TEST_PUBLIC_URL: `http://127.0.0.1:${balancer.port}/mcp` }
        : {}),
      ...(handoff === undefined ? {} : { TIDEMARK_TEST_HANDOFF_MS: String(handoff) }),
      ...(session === undefined ? {} : { TIDEMARK_TEST_GROUP_SESSION_MS: String(session) }),
    };
  }

  /** Provisions fresh topics and starts the gateways and workers asked for. */
  static async start(options: ClusterOptions): Promise<Cluster> {
    const prefix = `${uniqueTopicName(options.label)}.`;
    const layout = {
      prefix,
      partitions: options.partitions ?? 2,
      replicationFactor: 1,
      ...options.layout,
    };
    if (options.misconfiguredEvents !== undefined)
      await createUnchecked(options.brokers, layout, options.misconfiguredEvents);
    const names =
      options.misconfiguredEvents === undefined
        ? (await provisionTopics({ brokers: options.brokers }, layout)).names
        : topicNames(prefix);
    const cluster = new Cluster(options, prefix, names, await TcpProxy.start(NOWHERE));
    const from = options.release;
    for (let i = 0; i < (options.workers ?? 1); i++) await cluster.startWorker(from);
    for (let i = 0; i < (options.gateways ?? 1); i++) await cluster.startGateway(from);
    cluster.balancer.target = cluster.gateways[0]?.port ?? NOWHERE;
    await cluster.assigned();
    return cluster;
  }

  /** Where clients connect: the balancer. */
  get url(): string {
    return `http://127.0.0.1:${this.balancer.port}/mcp`;
  }

  /** Starts a gateway — of this tree, or of the release checked out at `from`. */
  async startGateway(from?: string): Promise<Member> {
    const host = this.network?.host();
    const [command, args] = this.onHost(host, [
      script('gateway-process.ts', from),
      this.brokers.join(','),
      this.prefix,
      this.secret,
    ]);
    const env = { ...this.gatewayEnv, TIDEMARK_TEST_HOST: host?.address ?? '127.0.0.1' };
    const process = startProcess((fn) => this.cleanups.push(fn), command, args, { env });
    const { port } = (await process.waitFor((e) => typeof e['port'] === 'number')) as {
      port: number;
    };
    const name = `gateway-${++this.counter}${from ? '-previous' : ''}`;
    const member = { name, process, port, ...(host === undefined ? {} : { host }) };
    this.gateways.push(member);
    return member;
  }

  /** A gateway's MCP endpoint, reached directly (not through the balancer). */
  urlOf(gateway: Member): string {
    return `http://${gateway.host?.address ?? '127.0.0.1'}:${gateway.port}/mcp`;
  }

  /** Node running `args`, on `host` when there is one. */
  private onHost(host: TestHost | undefined, args: string[]): [string, string[]] {
    const node = globalThis.process.execPath;
    return host === undefined ? [node, args] : TestNetwork.on(host, node, args);
  }

  /** Starts a worker — of this tree, or of the release checked out at `from`. */
  async startWorker(from?: string, env: NodeJS.ProcessEnv = {}): Promise<Member> {
    const host = this.network?.host();
    const [command, args] = this.onHost(host, [
      script('worker-process.ts', from),
      this.brokers.join(','),
      this.prefix,
      `${this.prefix}workers`,
      ...(this.events ? [this.secret, 'events'] : this.signals ? [this.secret, 'signals'] : []),
    ]);
    const process = startProcess((fn) => this.cleanups.push(fn), command, args, {
      env: { ...this.workerEnv, ...env },
    });
    await process.waitFor((e) => Array.isArray(e['assigned']));
    const name = `worker-${++this.counter}${from ? '-previous' : ''}`;
    const member = { name, process, port: 0, ...(host === undefined ? {} : { host }) };
    this.workers.push(member);
    return member;
  }

  /** Resolves when the live workers between them own every partition. */
  async assigned(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const owned = new Set<number>();
      for (const worker of this.workers) {
        const last = worker.process.events.findLast((e) => Array.isArray(e['assigned']));
        for (const p of (last?.['assigned'] as number[] | undefined) ?? []) owned.add(p);
      }
      if (owned.size === this.partitions) return;
      if (Date.now() > deadline)
        throw new Error(`partitions not assigned after ${timeoutMs} ms: ${[...owned].join(',')}`);
      await sleep(100);
    }
  }

  /**
   * The worker group's members as the broker reports them (sorted member ids): the oracle of
   * whether a partition could have moved. A worker that left, joined, or missed its heartbeats and
   * rejoined (under a new member id) changes it; a fault of the gateways alone does not.
   */
  async workerMembers(): Promise<string> {
    return (await groupMembers(this.brokers, `${this.prefix}workers`)).join(',');
  }

  /** Every execution the live workers started for a session: its cause and attempt. */
  executionsOf(session: string): Array<{ cause: string; attempt: number }> {
    return this.workers.flatMap((worker) =>
      worker.process.events.flatMap((e) => {
        const execution = e['execution'] as
          { session?: string; cause: string; attempt: number } | undefined;
        return execution?.session === session ? [execution] : [];
      }),
    );
  }

  /** Every durable step a worker printed (`onStep`), killed and drained workers included. */
  stepLines(): CallStepReport[] {
    return [...this.workers, ...this.retired].flatMap((worker) =>
      worker.process.events.flatMap((e) =>
        e['step'] === undefined ? [] : [e['step'] as CallStepReport],
      ),
    );
  }

  /** The worker that started the latest execution of a session's stream. */
  runnerOf(session: string): Member | undefined {
    let found: Member | undefined;
    let at = -1;
    for (const worker of this.workers) {
      worker.process.events.forEach((e, i) => {
        const execution = e['execution'] as { session?: string } | undefined;
        if (execution?.session === session && i > at) {
          found = worker;
          at = i;
        }
      });
    }
    return found;
  }

  /** Ends a member: SIGKILL (a crash) or SIGTERM (a drain); resolves when it exited. */
  async kill(member: Member, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    const { child } = member.process;
    const list = member.port === 0 ? this.workers : this.gateways;
    if (!list.includes(member)) return; // killed already
    list.splice(list.indexOf(member), 1);
    this.retired.push(member);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  /** What every member, live or retired, printed that mentions `text` (for failure reports). */
  linesMentioning(text: string): string[] {
    return [...this.gateways, ...this.workers, ...this.retired].flatMap((member) => [
      ...member.process.events
        .map((event) => JSON.stringify(event))
        .filter((line) => line.includes(text))
        .map((line) => `${member.name}: ${line}`),
      ...member.process.stderr
        .join('')
        .split('\n')
        .filter((line) => line.includes(text))
        .map((line) => `${member.name} (stderr): ${line}`),
    ]);
  }

  /** Cuts every client connection; new ones go to `to` (default: the current target). */
  cut(to?: Member): void {
    if (to !== undefined) this.balancer.target = to.port;
    this.balancer.cut();
  }

  /** Cuts every client connection and refuses new ones until `release`. */
  hold(): void {
    this.balancer.target = NOWHERE;
    this.balancer.cut();
  }

  release(to: Member | undefined = this.gateways[0]): void {
    this.balancer.target = to?.port ?? NOWHERE;
  }

  async stop(): Promise<void> {
    await this.balancer.close();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    const admin = new Admin({
      clientId: 'tidemark-e2e-cleanup',
      bootstrapBrokers: [...this.brokers],
    });
    try {
      await admin.deleteTopics({ topics: Object.values(this.names) });
    } catch {
      // A broker the test destroyed takes its topics with it.
    } finally {
      await admin.close();
    }
  }
}

/** A support script of this tree, or of the release checked out at `from`. */
function script(name: string, from: string | undefined): string {
  return from === undefined ? supportScript(name) : join(from, 'test', 'support', name);
}

/** The planned topics, created as planned except for the events configs given, and not checked. */
async function createUnchecked(
  brokers: readonly string[],
  layout: TopicLayoutOptions,
  eventsConfigs: Record<string, string>,
): Promise<void> {
  const admin = new Admin({ clientId: 'tidemark-e2e', bootstrapBrokers: [...brokers] });
  try {
    for (const topic of planTopics(layout)) {
      const configs =
        topic.role === 'events' ? { ...topic.configs, ...eventsConfigs } : topic.configs;
      await admin.createTopics({
        topics: [topic.name],
        partitions: topic.partitions,
        replicas: topic.replicationFactor,
        configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
      });
    }
  } finally {
    await admin.close();
  }
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
