import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// The capacity calculator (docs/capacity.md) over the benchmarks' own figures.

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../infra/capacity.mjs', import.meta.url));

interface Planned {
  figures: Record<string, unknown>;
  plan: {
    load: { eventsPerSecond: number; concurrentCalls: number };
    gateways: number;
    workers: number;
    partitions: number;
    memory: { gatewayMb: number; workerMb: number };
    resumeStormSeconds: number;
  };
}

async function planFor(...args: string[]): Promise<Planned> {
  const { stdout } = await run(process.execPath, [script, '--json', ...args]);
  return JSON.parse(stdout) as Planned;
}

describe('npm run capacity', () => {
  it('rests on measured figures only: every one a positive number', async () => {
    const { figures } = await planFor();
    const numbers = Object.entries(figures).flatMap(([name, value]) =>
      typeof value === 'object' && value !== null
        ? Object.entries(value).map(([inner, v]) => [`${name}.${inner}`, v] as const)
        : [[name, value] as const],
    );
    for (const [name, value] of numbers) expect([name, value]).toEqual([name, expect.any(Number)]);
    for (const [name, value] of numbers)
      expect([name, (value as number) > 0]).toEqual([name, true]);
  });

  it('grows with the load: ten times the sessions, ten times the events, never fewer machines', async () => {
    const small = await planFor('--sessions', '100000');
    const large = await planFor('--sessions', '1000000');
    expect(large.plan.load.eventsPerSecond).toBeCloseTo(small.plan.load.eventsPerSecond * 10, 3);
    expect(large.plan.gateways).toBeGreaterThanOrEqual(small.plan.gateways);
    expect(large.plan.workers).toBeGreaterThan(small.plan.workers);
    // Enough partitions for every worker (each reads at least one) and every gateway.
    expect(large.plan.partitions).toBeGreaterThanOrEqual(large.plan.workers);
    expect(large.plan.partitions).toBeGreaterThanOrEqual(large.plan.gateways);
    // Enough call slots (64 a worker) for the calls running at once.
    expect(large.plan.workers * 64).toBeGreaterThanOrEqual(large.plan.load.concurrentCalls);
  });

  it('refuses a bad number with exit 2 and the flag', async () => {
    const failed = await run(process.execPath, [script, '--sessions', 'many']).catch(
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(failed).toMatchObject({
      code: 2,
      stderr: 'capacity: --sessions: expected an integer ≥ 1, got "many"\n',
    });
    const unknown = await run(process.execPath, [script, '--session', '5']).catch(
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(unknown).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--session') as string,
    });
  });
});
