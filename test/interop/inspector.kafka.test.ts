// The MCP Inspector's CLI (`@modelcontextprotocol/inspector`, pinned in test/interop/inspector),
// unmodified: one request per run, as a developer pokes at a server from a shell.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectorCli } from '../support/prerequisites.js';
import { useDeployment } from './deployments.js';
import { recorder, type Deployment } from './matrix.js';

// Its state (~/.mcp-inspector) goes to a directory of the run's own, not the user's home.
const home = mkdtempSync(join(tmpdir(), 'tidemark-inspector-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** One `inspector --cli` run: its JSON output and exit code. */
function inspect(
  url: string,
  args: string[],
): Promise<{ out: Record<string, unknown>; code: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [inspectorCli(), '--cli', url, '--format', 'json', ...args],
      { env: { ...process.env, HOME: home }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        const text = (stdout.trim() || stderr.trim()).split('\n')[0] ?? '';
        try {
          resolve({ out: JSON.parse(text) as Record<string, unknown>, code });
        } catch {
          reject(new Error(`inspector ${args.join(' ')}: exit ${code}\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

const result = (out: Record<string, unknown>) => out['result'] as Record<string, unknown>;

describe.each<Deployment>(['dev', 'kafka'])('the MCP Inspector CLI on %s', (deployment) => {
  const current = useDeployment(deployment);
  const saw = recorder('inspector', deployment);

  it('initializes in each protocol era it offers and lists the tools', async () => {
    const url = current().urls[0];
    const revisions: string[] = [];
    for (const era of ['legacy', 'modern', 'auto']) {
      const { out } = await inspect(url, ['--protocol-era', era, '--method', 'initialize']);
      revisions.push(`${String(result(out)['protocolVersion'])} (${era})`);
      const { out: listed } = await inspect(url, ['--protocol-era', era, '--method', 'tools/list']);
      const names = (result(listed)['tools'] as Array<{ name: string }>).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['count', 'confirm_deploy', 'flaky_count']));
    }
    expect(revisions).toEqual(['2025-11-25 (legacy)', '2026-07-28 (modern)', '2026-07-28 (auto)']);
    saw('handshake', 'initialized in each era, listed the tools', { revisions });
  });

  it('calls a tool: the exact result (the CLI prints no progress)', async () => {
    const { out, code } = await inspect(current().urls[0], [
      '--method',
      'tools/call',
      '--tool-name',
      'count',
      '--tool-args-json',
      JSON.stringify({ to: 8, delayMs: 10 }),
    ]);
    expect(code).toBe(0);
    expect(result(out)['content']).toEqual([{ type: 'text', text: '1,2,3,4,5,6,7,8' }]);
    saw('progress', 'the exact result; progress is not shown (the CLI prints the result only)', {
      outcome: 'limit',
      instead: 'to watch progress, use the Inspector’s web UI or TUI (`--web`, `--tui`).',
    });
  });

  it('errors: an unknown tool and bad arguments end the run non-zero with the reason', async () => {
    const url = current().urls[0];
    const unknown = await inspect(url, ['--method', 'tools/call', '--tool-name', 'no_such_tool']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.out['error']).toMatchObject({ code: 'tool_not_found' });
    const bad = await inspect(url, [
      '--method',
      'tools/call',
      '--tool-name',
      'count',
      '--tool-args-json',
      JSON.stringify({ to: 'many' }),
    ]);
    expect(bad.code).not.toBe(0);
    expect(JSON.stringify(bad.out)).toMatch(/Input validation error|isError/);
    saw(
      'errors',
      'unknown tool: refused by the CLI (tool_not_found); bad arguments: a tool error result, exit non-zero',
    );
  });
});
