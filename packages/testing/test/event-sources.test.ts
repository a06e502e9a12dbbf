import events, { deployments } from '@tidemark/examples/events';
import { currentExecution, defineEventType, defineToolModule } from '@tidemark/tools';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runEventSource, runTool } from '../src/index.js';

// Event sources run as the worker runs them (#35): arguments and data checked, occurrences given
// ids that a re-read of the same position gives again — so a source restarted from its recorded
// position after a crash produces what receivers can deduplicate.

describe('running an event source', () => {
  it('ticks counts from 1 in a stream, and continues the count from a recorded position', async () => {
    const first = await runEventSource(events, 'ticks', { everyMs: 10 }, { count: 3 });
    expect(first.occurrences.map((o) => o.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(first.position).toBe('3');
    expect(first.occurrences[0]).toMatchObject({ name: 'ticks', position: '1' });
    expect(Date.parse(first.occurrences[0]!.timestamp)).not.toBeNaN();

    const again = await runEventSource(
      events,
      'ticks',
      { everyMs: 10 },
      { count: 2, position: '1' },
    );
    expect(again.occurrences.map((o) => o.data)).toEqual([{ n: 2 }, { n: 3 }]);
    // The same positions of the same stream: the same ids.
    expect(again.occurrences.map((o) => o.eventId)).toEqual(
      first.occurrences.slice(1).map((o) => o.eventId),
    );
    // Another stream (other arguments): other ids for the same positions.
    const other = await runEventSource(events, 'ticks', { everyMs: 11 }, { count: 1 });
    expect(other.occurrences[0]!.eventId).not.toBe(first.occurrences[0]!.eventId);
  });

  it('refuses arguments that do not match, as the client’s mistake', async () => {
    const refused = runEventSource(events, 'ticks', { everyMs: 1 });
    await expect(refused).rejects.toMatchObject({ code: 'TIDEMARK_INVALID_ARGUMENT' });
    await expect(refused).rejects.toThrow(
      /^arguments of ticks do not match its inputSchema: everyMs: /,
    );
    await expect(runEventSource(events, 'tocks', {})).rejects.toThrow(
      /events has no event type tocks/,
    );
  });

  it('stops a source whose data is wrong or too large, as the module’s mistake, naming the position', async () => {
    const broken = defineToolModule({
      name: 'broken',
      register: () => undefined,
      events: [
        defineEventType({
          name: 'bad',
          inputSchema: z.object({}),
          payloadSchema: z.object({ n: z.number() }),
          async *source() {
            await Promise.resolve();
            yield { data: { n: 1 }, position: 'p1' };
            yield { data: { n: 'two' } as never, position: 'p2' };
          },
        }),
        defineEventType({
          name: 'huge',
          inputSchema: z.object({}),
          payloadSchema: z.object({ blob: z.string() }),
          async *source() {
            await Promise.resolve();
            yield { data: { blob: 'x'.repeat(300 * 1024) }, position: 'p1' };
          },
        }),
      ],
    });
    const bad = runEventSource(broken, 'bad', {}, { count: 2 });
    await expect(bad).rejects.toMatchObject({ code: 'TIDEMARK_TOOL_MODULE' });
    await expect(bad).rejects.toThrow(
      /event type bad, position "p2": data does not match payloadSchema: n: /,
    );
    await expect(runEventSource(broken, 'huge', {})).rejects.toThrow(
      /data is \d+ bytes, over 258048/,
    );
  });

  it('fails a source that yields too few in time, even one that ignores its signal', async () => {
    const stuck = defineToolModule({
      name: 'stuck',
      register: () => undefined,
      events: [
        defineEventType({
          name: 'never',
          inputSchema: z.object({}),
          payloadSchema: z.object({}),
          source: () => ({
            [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }),
          }),
        }),
        defineEventType({
          name: 'once',
          inputSchema: z.object({}),
          payloadSchema: z.object({}),
          async *source() {
            await Promise.resolve();
            yield { data: {}, position: '1' };
          },
        }),
      ],
    });
    await expect(runEventSource(stuck, 'never', {}, { timeoutMs: 100 })).rejects.toThrow(
      /never: fewer than 1 occurrences in 100 ms/,
    );
    await expect(runEventSource(stuck, 'once', {}, { count: 2 })).rejects.toThrow(
      /once: the source ended after 1 of 2 occurrences/,
    );
  });
});

describe('emitting from a tool (currentExecution().emit) in runTool', () => {
  it('records what the tool emitted, checked against the event type', async () => {
    const run = await runTool(events, 'record_deployment', { service: 'api', version: '2.0.0' });
    expect(run.result.isError).not.toBe(true);
    expect(run.emitted).toMatchObject([
      {
        name: 'deployments',
        arguments: { service: 'api' },
        data: { version: '2.0.0', by: 'anonymous' },
        eventId: expect.stringMatching(/^evt_/) as unknown,
      },
    ]);
  });

  it('refuses an emit of data that does not match, as the module’s mistake', async () => {
    const broken = defineToolModule({
      name: 'broken',
      events: [deployments],
      register(server) {
        server.registerTool('emit_bad', { description: 'emits bad data' }, async () => {
          await currentExecution()!.emit!(deployments, { service: 'api' }, { version: 7 } as never);
          return { content: [] };
        });
      },
    });
    const run = await runTool(broken, 'emit_bad', {});
    expect(run.result).toMatchObject({ isError: true });
    expect(JSON.stringify(run.result.content)).toMatch(/data does not match payloadSchema/);
    expect(run.emitted).toEqual([]);
  });
});
