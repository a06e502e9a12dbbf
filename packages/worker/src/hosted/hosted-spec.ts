import { invalidOption } from '@tidemark/protocol';
import * as z from 'zod';
import type { HostedServerSpec } from './child-pool.js';

// What a hosted server's description may say, checked before anything starts: from `--mcp-server`,
// a servers file (`--mcp-servers-file`), or the chart's `worker.mcpServers`.

const spec = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/, 'letters, digits, _ and -, from a letter'),
    command: z.string().min(1).optional(),
    url: z.string().min(1).optional(),
    allowLoopback: z.boolean().optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().min(1).optional(),
    processes: z.number().int().min(1).max(32).optional(),
    prefix: z.boolean().optional(),
    pingEveryMs: z.number().int().min(100).max(600_000).optional(),
  })
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: 'a command (a stdio server) or a url (a Streamable HTTP server), not both',
  });

/** The hosted servers a servers file lists (a JSON array), or a clear error naming what is wrong. */
export function hostedServerSpecs(value: unknown): HostedServerSpec[] {
  const parsed = z.array(spec).safeParse(value);
  if (!parsed.success)
    throw invalidOption(
      'mcpServers',
      `an array of { name, command | url, args?, env?, cwd?, processes?, prefix? } (${z.prettifyError(parsed.error).replace(/\n/g, '; ')})`,
      value,
    );
  const names = parsed.data.map((s) => s.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw invalidOption('mcpServers', 'distinct names', twice);
  return parsed.data;
}
