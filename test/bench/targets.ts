// The servers a benchmark compares, each started as its own processes on loopback:
//   sdk-memory         the SDK's StreamableHTTPServerTransport + its in-memory event store
//   sdk-redis          the same with a Redis Streams event store (redis-server started here)
//   tidemark-embedded  `tidemark dev`: gateway, worker and the embedded log in one process
//   tidemark-kafka-1   `tidemark gateway` + `tidemark worker` on Kafka
//   tidemark-kafka-2   the same with two gateways (clients spread over both)
//   raw-socket         the ceiling: the same events as pre-framed SSE bytes (live delivery only)
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchTopics, BIN, ROOT, startChild, startDev, type Child } from './support.ts';
import { redisServer } from '../support/prerequisites.ts';
import { reservePorts } from '@tidemark/kafka-fixtures';

export const TARGETS = [
  'sdk-memory',
  'sdk-redis',
  'tidemark-embedded',
  'tidemark-kafka-1',
  'tidemark-kafka-2',
] as const;
/** The ceiling beside every live figure; not a server to compare (no resume, no store). */
export const RAW_SOCKET = 'raw-socket';
export type TargetName = (typeof TARGETS)[number] | typeof RAW_SOCKET;

export interface Target {
  readonly name: TargetName;
  /** The MCP endpoints; clients are spread over them. */
  readonly urls: string[];
  /** The server processes (for CPU and memory readings). */
  readonly processes: Child[];
  /** Of those, the gateways (Kafka targets), for CPU per gateway core. */
  readonly gateways?: Child[];
  stop(): Promise<void>;
}

export interface TargetContext {
  /** Kafka bootstrap addresses, for the Kafka targets. */
  brokers?: readonly string[];
  /** NODE_OPTIONS for the Node server processes (the memory probe). */
  nodeOptions?: string;
  /** Tidemark's `--server-idle` (how soon an idle session's MCP server is dropped). */
  serverIdle?: string;
}

const TOOLS = join(ROOT, 'test/bench/bench-tools.ts');
const SDK_SERVER = join(ROOT, 'test/bench/sdk-server.ts');
const RAW_SERVER = join(ROOT, 'test/bench/raw-socket.ts');

export async function startTarget(name: TargetName, context: TargetContext): Promise<Target> {
  const processes: Child[] = [];
  const stop = async () => {
    for (const p of processes.reverse()) await p.stop();
  };
  const node = context.nodeOptions === undefined ? {} : { NODE_OPTIONS: context.nodeOptions };
  try {
    if (name === RAW_SOCKET) {
      const { process, match } = await startChild([RAW_SERVER], /"port":(\d+)/, node);
      processes.push(process);
      return { name, urls: [`http://127.0.0.1:${match[1]}/mcp`], processes, stop };
    }
    if (name === 'sdk-memory' || name === 'sdk-redis') {
      const args = [SDK_SERVER, name === 'sdk-memory' ? 'memory' : 'redis'];
      if (name === 'sdk-redis') {
        const port = await reservePorts();
        const redis = await startRedis(port);
        processes.push(redis);
        args.push(`redis://127.0.0.1:${port}`);
      }
      const { process, match } = await startChild(args, /"port":(\d+)/, node);
      processes.push(process);
      return { name, urls: [`http://127.0.0.1:${match[1]}/mcp`], processes, stop };
    }
    if (name === 'tidemark-embedded') {
      const idle = context.serverIdle === undefined ? [] : ['--server-idle', context.serverIdle];
      const dev = await startDev({ TIDEMARK_LOG_LEVEL: 'warn', ...node }, [
        '--tools',
        TOOLS,
        ...idle,
      ]);
      processes.push(dev.process);
      return { name, urls: [dev.url], processes, stop };
    }
    const brokers = context.brokers;
    if (brokers === undefined) throw new Error(`${name} needs Kafka brokers`);
    const kafka = await benchTopics(brokers);
    const env = { TIDEMARK_SECRET: randomBytes(32).toString('hex'), TIDEMARK_LOG_LEVEL: 'warn' };
    Object.assign(env, node);
    const idle = context.serverIdle === undefined ? [] : ['--server-idle', context.serverIdle];
    const worker = await startChild(
      [BIN, 'worker', '--tools', TOOLS, ...kafka, ...idle],
      /started/,
      env,
    );
    processes.push(worker.process);
    const urls: string[] = [];
    const gateways: Child[] = [];
    for (let i = 0; i < (name === 'tidemark-kafka-2' ? 2 : 1); i++) {
      // Event ids in the format a fleet mints once every gateway runs this release.
      const gateway = await startChild(
        [
          BIN,
          'gateway',
          '--auth',
          'none',
          '--port',
          '0',
          '--host',
          '127.0.0.1',
          '--event-id-version',
          '2',
          ...kafka,
        ],
        /listening on port (\d+)/,
        env,
      );
      processes.push(gateway.process);
      gateways.push(gateway.process);
      urls.push(`http://127.0.0.1:${gateway.match[1]}/mcp`);
    }
    return { name, urls, processes, gateways, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What a server process of a target is: `dev`, `gateway`, `worker`, or `server` (the SDK's, Redis). */
export function roleOf(target: Target, process: Child): string {
  if (target.name === 'tidemark-embedded') return 'dev';
  if (target.gateways?.includes(process)) return 'gateway';
  return target.name.startsWith('tidemark-kafka') ? 'worker' : 'server';
}

/** redis-server (Debian's package) on a port, without persistence. */
async function startRedis(port: number): Promise<Child> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const { process } = await startChild(args, /Ready to accept connections/, {}, redisServer());
  return process;
}

/** User + system CPU time of a process so far, in ms (Linux /proc). */
export function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ = 100
  } catch {
    return 0;
  }
}

/** Resident set size of a process, in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}
