// Event types (the MCP Events extension) a module offers, from the three places occurrences come
// from:
// - `ticks` counts: its occurrences are { n } with n increasing by one in each stream (each
//   everyMs), and its position is n, so a source started again from a recorded position continues
//   the count instead of restarting it.
// - `incidents` reads an upstream by position: a JSON-lines file a monitoring system appends to
//   (one incident per line), read from the byte after the last line recorded — after a restart or
//   on another worker, the next incident is the next line, none twice and none skipped.
// - `deployments` is emitted from code: the `record_deployment` tool emits one per deployment.
import { open, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { currentExecution, defineEventType, defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export const ticks = defineEventType({
  name: 'ticks',
  description: 'A tick every everyMs milliseconds, counting from 1.',
  inputSchema: z.object({ everyMs: z.number().int().min(10).max(3_600_000) }),
  payloadSchema: z.object({ n: z.number().int().min(1) }),
  replayWindowMs: 60 * 60 * 1000,
  // A clock is no one's: every subject reads the one stream of an interval.
  scope: 'shared',
  async *source({ arguments: { everyMs }, position, signal }) {
    for (let n = position === undefined ? 1 : Number(position) + 1; ; n++) {
      await sleep(everyMs, undefined, { signal });
      yield { data: { n }, position: String(n) };
    }
  },
});

/** Where the incident feeds are: `<dir>/<feed>.jsonl` (`TIDEMARK_EXAMPLE_FEEDS`, default ./feeds). */
const feeds = () => resolve(process.env['TIDEMARK_EXAMPLE_FEEDS'] ?? 'feeds');
const Incident = z.object({
  id: z.string(),
  severity: z.enum(['P1', 'P2', 'P3']),
  service: z.string(),
  summary: z.string(),
});

export const incidents = defineEventType({
  name: 'incidents',
  description: 'Incidents a monitoring system appends to a feed, one JSON object per line.',
  inputSchema: z.object({ feed: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }),
  payloadSchema: Incident,
  // A monitoring feed every operator watches: one stream per feed, for every subject.
  scope: 'shared',
  async *source({ arguments: { feed }, position, signal }) {
    const path = join(feeds(), `${feed}.jsonl`);
    // From now on the first time (the feed's current end), else after the last line recorded.
    let offset = position === undefined ? await sizeOf(path) : Number(position);
    while (!signal.aborted) {
      const size = await sizeOf(path);
      if (size < offset) offset = 0; // the feed was rotated: a new file from its start
      if (size > offset) {
        const file = await open(path, 'r');
        const { bytesRead, buffer } = await file.read(
          Buffer.alloc(size - offset),
          0,
          size - offset,
          offset,
        );
        await file.close();
        const text = buffer.subarray(0, bytesRead).toString('utf8');
        const complete = text.slice(0, text.lastIndexOf('\n') + 1); // a line still being written waits
        for (const line of complete.split('\n').slice(0, -1)) {
          offset += Buffer.byteLength(line) + 1;
          const incident = Incident.safeParse(safeJson(line));
          // A line that is not an incident is skipped, its position recorded all the same.
          if (incident.success)
            yield {
              data: incident.data,
              position: String(offset),
              eventId: `inc_${incident.data.id}`,
            };
        }
      }
      await sleep(250, undefined, { signal }).catch(() => undefined);
    }
  },
});

export const deployments = defineEventType({
  name: 'deployments',
  // Scoped per subject (the default): what a call of Alice's records, only Alice reads.
  description:
    'A service was deployed (emitted by the record_deployment tool; each subject reads the deployments it recorded).',
  inputSchema: z.object({ service: z.string().min(1).max(100) }),
  payloadSchema: z.object({ version: z.string(), by: z.string() }),
});

export default defineToolModule({
  name: 'events',
  events: [ticks, incidents, deployments],
  register(server) {
    server.registerTool(
      'record_deployment',
      {
        description:
          'Records that a service was deployed; subscribers of its deployments hear of it.',
        inputSchema: z.object({ service: z.string().min(1).max(100), version: z.string().min(1) }),
      },
      async ({ service, version }) => {
        const execution = currentExecution();
        const by = execution?.subject ?? 'anonymous';
        // A step: a retried or taken-over call emits it once.
        const { eventId } = await execution!.step(
          'emit',
          async () =>
            (await execution!.emit?.(deployments, { service }, { version, by })) ?? {
              eventId: 'none',
            },
        );
        return {
          content: [
            { type: 'text', text: `deployment of ${service} ${version} recorded (${eventId})` },
          ],
        };
      },
    );
  },
});

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
