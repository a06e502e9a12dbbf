import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GATEWAY_DEFAULTS } from '@tidemark/gateway';
import { WORKER_DEFAULTS } from '@tidemark/worker';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { referencePages } from '../../infra/docs/reference.ts';
import { ROOT } from './blocks.js';

// The reference pages are generated from the code (infra/docs/reference.ts); a page that differs
// from what the code says now fails here, naming the command that rewrites it. And where the chart
// repeats a default the servers have (it passes every value as a flag), the two must agree.

const ms = (value: string): number => {
  const m = /^(\d+)(ms|s|m|h)$/.exec(value);
  if (m === null) throw new Error(`not a duration: ${value}`);
  return (
    Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h']
  );
};

describe('the generated reference', () => {
  it('is what the code says now (node infra/docs/reference.ts rewrites it)', () => {
    for (const { path, text } of referencePages(ROOT))
      expect(readFileSync(join(ROOT, path), 'utf8'), `${path} is stale`).toBe(text);
  }, 60_000);

  it('shows every command of tidemark --help, each with its own help', () => {
    const cli = readFileSync(join(ROOT, 'docs/reference/cli.md'), 'utf8');
    for (const command of [
      'dev',
      'gateway',
      'worker',
      'topics',
      'calls',
      'audit',
      'console',
      'check',
      'init',
    ])
      expect(cli).toMatch(
        new RegExp(`## \`tidemark ${command}\`\\n\\n\`\`\`text\\nUsage: tidemark ${command}`),
      );
  });

  it('leaves a null chart value to the server’s default, never restating it in values.yaml', () => {
    const values = readFileSync(join(ROOT, 'helm/tidemark/values.yaml'), 'utf8').split('\n');
    expect(values.filter((line) => /:\s*null\s*#.*\d/.test(line))).toEqual([]);
    // The reference shows the default each one falls back to, read from the server's table.
    const chart = readFileSync(join(ROOT, 'docs/reference/chart.md'), 'utf8');
    expect(chart).toContain(
      `| \`gateway.limits.maxBodyBytes\` | \`null → ${GATEWAY_DEFAULTS.maxBodyBytes}\` |`,
    );
    expect(chart).toContain(
      `| \`worker.limits.maxConcurrentCalls\` | \`null → ${WORKER_DEFAULTS.maxConcurrentCalls}\` |`,
    );
  });

  it('gives the chart the servers’ defaults wherever the chart repeats one', () => {
    const values = parse(readFileSync(join(ROOT, 'helm/tidemark/values.yaml'), 'utf8')) as {
      gateway: Record<string, string>;
      worker: Record<string, string>;
      expiry: Record<string, string>;
    };
    expect(ms(values.gateway['drainTimeout']!)).toBe(GATEWAY_DEFAULTS.drainTimeoutMs);
    expect(ms(values.gateway['logTimeout']!)).toBe(GATEWAY_DEFAULTS.logTimeoutMs);
    expect(ms(values.worker['handoffTimeout']!)).toBe(WORKER_DEFAULTS.handoffTimeoutMs);
    expect(ms(values.expiry['sessionTtl']!)).toBe(GATEWAY_DEFAULTS.sessionTtlMs);
    expect(ms(values.expiry['resultTtl']!)).toBe(WORKER_DEFAULTS.resultTtlMs);
  });
});
