import { metrics } from '@opentelemetry/api';
import pidusage from 'pidusage';

// The processes of the MCP servers a worker hosts (issue #60), in its metrics: how many run, their
// resident memory and the CPU time they used, per server — read when the metrics are collected.

export const METRIC_HOSTED_PROCESSES = 'tidemark.worker.hosted.processes';
export const METRIC_HOSTED_MEMORY = 'tidemark.worker.hosted.memory';
export const METRIC_HOSTED_CPU = 'tidemark.worker.hosted.cpu_time';
export const ATTR_HOSTED_SERVER = 'tidemark.hosted.server';

/** The pids of each hosted server's running processes, by server name. */
const servers = new Map<string, () => Promise<number[]>>();
let observedBy: unknown;

/**
 * Observes a hosted server's processes (`pids` says which run now) until the returned function is
 * called. A remote server (Streamable HTTP) has none.
 */
export function observeHostedServer(name: string, pids: () => Promise<number[]>): () => void {
  servers.set(name, pids);
  observe();
  return () => servers.delete(name);
}

/** The instruments, made once per meter provider (the SDK's may be set after this module loads). */
function observe(): void {
  const provider = metrics.getMeterProvider();
  if (observedBy === provider) return;
  observedBy = provider;
  const meter = provider.getMeter('tidemark', '0.1.0');
  const processes = meter.createObservableGauge(METRIC_HOSTED_PROCESSES, {
    description: 'Processes of a hosted MCP server running on the worker',
    unit: '{process}',
  });
  const memory = meter.createObservableGauge(METRIC_HOSTED_MEMORY, {
    description: 'Resident memory of a hosted MCP server’s processes on the worker',
    unit: 'By',
  });
  const cpu = meter.createObservableCounter(METRIC_HOSTED_CPU, {
    description: 'CPU time (user and system) used by a hosted MCP server’s running processes',
    unit: 's',
  });
  meter.addBatchObservableCallback(
    async (result) => {
      for (const [server, pidsOf] of servers) {
        const attributes = { [ATTR_HOSTED_SERVER]: server };
        const pids = await pidsOf().catch(() => []);
        // A process that exits between the two reads is left out (pidusage refuses it).
        const stats = pids.length === 0 ? {} : await pidusage(pids).catch(() => ({}));
        const live = Object.values(stats);
        result.observe(processes, live.length, attributes);
        result.observe(memory, sum(live.map((s) => s.memory)), attributes);
        result.observe(cpu, sum(live.map((s) => s.ctime)) / 1000, attributes);
      }
    },
    [processes, memory, cpu],
  );
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
