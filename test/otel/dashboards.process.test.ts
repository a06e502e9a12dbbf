import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it, onTestFinished } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// The dashboard and the alerts ask only for what the processes really export: every metric and
// label they query is found in a scrape of a running `tidemark dev --metrics-port` (gateway and
// worker in one process) that served calls, a retry, a resume and a refusal.

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'packages/cli/dist/bin.js');
const dashboard = readFileSync(join(root, 'helm/tidemark/dashboards/tidemark.json'), 'utf8');
const rules = readFileSync(join(root, 'helm/tidemark/alerts/tidemark-rules.yaml'), 'utf8');

function queries(): string[] {
  const panels = (JSON.parse(dashboard) as { panels: Array<{ targets: Array<{ expr: string }> }> })
    .panels;
  const alerts = (
    parseYaml(rules) as { groups: Array<{ rules: Array<{ expr: string }> }> }
  ).groups.flatMap((g) => g.rules);
  return [...panels.flatMap((p) => p.targets.map((t) => t.expr)), ...alerts.map((r) => r.expr)];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

async function scrapeAfterTraffic(): Promise<string> {
  const metricsPort = await freePort();
  const child = spawn(
    process.execPath,
    [
      bin,
      'dev',
      '--port',
      '0',
      '--metrics-port',
      String(metricsPort),
      '--data',
      mkdtempSync(join(tmpdir(), 'tidemark-dash-')),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: undefined },
    },
  );
  onTestFinished(() => void (child.exitCode === null && child.kill('SIGKILL')));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  while (!/MCP endpoint: (\S+)/.test(output))
    await new Promise((resolve) => setTimeout(resolve, 50));
  const url = /MCP endpoint: (\S+)/.exec(output)![1]!;
  const client = new RawMcpClient(url);
  await client.initialize();
  const call = await client.callCount(1, 5, 0); // delivery, queue lag, tool duration, live streams
  await client.post({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'flaky_count', arguments: { to: 3, failAt: 2 } },
  }); // a retry
  await (await client.resume(call.ids.at(-1)!)).text(); // a resume
  await (await client.resume('not-an-event-id')).text(); // an invalid one
  await (
    await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: '{',
    })
  ).text(); // a refusal
  return (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
}

it('every metric and label the dashboard and the alerts query is one the processes export', async () => {
  const scrape = await scrapeAfterTraffic();
  const types = new Map([...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  const labelsOf = (metric: string) =>
    new Set(
      [
        ...scrape.matchAll(new RegExp(`^${metric}(?:_bucket|_sum|_count)?\\{([^}]*)\\}`, 'gm')),
      ].flatMap((m) => [...m[1]!.matchAll(/(\w+)="/g)].map((l) => l[1]!)),
    );
  const expressions = queries();
  expect(expressions.length).toBeGreaterThanOrEqual(15);
  for (const expr of expressions) {
    // Metric names: what is left once the label lists (`by (…)`, `{…}`) are taken out.
    const bare = expr.replace(/by \([^)]*\)/g, '').replace(/\{[^}]*\}/g, '');
    const metrics = [
      ...new Set(
        [...bare.matchAll(/\btidemark_[a-z_]+/g)].map((m) =>
          m[0].replace(/_(bucket|sum|count)$/, ''),
        ),
      ),
    ];
    expect(metrics.length, expr).toBeGreaterThan(0);
    for (const metric of metrics) {
      expect(types.has(metric), `${metric} (in ${expr}) is not exported`).toBe(true);
      const used = [
        ...[...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) =>
          m[1]!.split(',').map((l) => l.trim()),
        ),
        ...[...expr.matchAll(new RegExp(`${metric}\\{([^}]*)\\}`, 'g'))].flatMap((m) =>
          [...m[1]!.matchAll(/(\w+)\s*=/g)].map((l) => l[1]!),
        ),
      ].filter((label) => label !== 'le' && label !== 'job' && label !== '');
      const exported = labelsOf(metric);
      for (const label of used)
        expect(exported.has(label), `${metric} has no label ${label}`).toBe(true);
    }
  }
}, 60_000);

it('ships the same dashboard and alerts in the chart and in infra/grafana', () => {
  expect(readFileSync(join(root, 'infra/grafana/tidemark.json'), 'utf8')).toBe(dashboard);
  expect(readFileSync(join(root, 'infra/grafana/tidemark-rules.yaml'), 'utf8')).toBe(rules);
});
