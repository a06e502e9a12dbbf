import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { devInProcess } from '../support/dev-in-process.js';

/** `tidemark dev` in this process, with a module from `source`, a client, and the log lines. */
async function devWith(source: string, flags: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-dev-'));
  const module = join(dir, 'module.mjs');
  writeFileSync(module, source);
  const dev = await devInProcess(dir, [
    '--tools',
    module,
    '--port',
    '0',
    '--data',
    join(dir, 'data'),
    ...flags,
  ]);
  const client = new Client({ name: 'dev-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(dev.url)));
  const shutdown = async () => {
    await client.close();
    await dev.stop();
  };
  onTestFinished(shutdown);
  const entries = () => dev.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { client, entries, shutdown, module, out: dev.out };
}

describe('what an operator reads in the log', () => {
  it('one line per tool execution: a failing tool’s name, outcome, attempt and the error with its stack', async () => {
    const { client, entries, shutdown } = await devWith(`
      export default (server) => {
        server.registerTool('explode', { description: 'always fails' }, async () => {
          throw new Error('kaboom');
        });
      };
    `);
    const result = await client.callTool({ name: 'explode', arguments: {} });
    expect(result.isError).toBe(true);
    await shutdown();
    const ended = entries().filter((entry) => entry['tool'] === 'explode');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      level: 50,
      msg: 'tool explode: failed',
      outcome: 'failed',
      attempt: 1,
      err: { message: 'kaboom', stack: expect.stringContaining('Error: kaboom') as unknown },
    });
    expect(ended[0]!['duration_ms']).toEqual(expect.any(Number));
  });
});

describe('a cancelled call in the log', () => {
  it('is an outcome at info with its reason, not a failure with a stack', async () => {
    const { client, entries, shutdown } = await devWith(`
      export default (server) => {
        server.registerTool('wait', { description: 'waits to be cancelled' }, (ctx) =>
          new Promise((_, reject) =>
                        ctx.mcpReq.signal.addEventListener('abort', () => reject(new Error('stopped')))));
      };
    `);
    const controller = new AbortController();
    const call = client.callTool({ name: 'wait', arguments: {} }, { signal: controller.signal });
    // The call's execution (the first one is the session's initialize).
    const started = () => entries().filter((e) => e['msg'] === 'execution started');
    await vi.waitFor(() => expect(started()).toHaveLength(2));
    controller.abort();
    await expect(call).rejects.toThrow();
    await vi.waitFor(() =>
      expect(entries().map((e) => e['msg'])).toContain('tool wait: cancelled'),
    );
    await shutdown();
    const ended = entries().filter((entry) => entry['tool'] === 'wait');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      level: 30,
      msg: 'tool wait: cancelled',
      outcome: 'cancelled',
    });
    expect(ended[0]!['reason']).toEqual(expect.any(String));
    expect(ended[0]).not.toHaveProperty('err');
  });
});

describe('the banner', () => {
  it('lists each module’s tools, and warns about a module that registers none', async () => {
    const { out } = await devWith(`
      export default (server) => {
        server.registerTool('lookup', { description: 'looks up' }, async () => ({ content: [] }));
        server.registerTool('store', { description: 'stores' }, async () => ({ content: [] }));
      };
    `);
    expect(out).toContain('  ./module.mjs: lookup, store');
    const empty = await devWith('export default () => {};');
    expect(empty.out).toContain(
      '  warning: ./module.mjs registers no tools, resources or prompts — does its register call server.registerTool?',
    );
  });
});

describe('what clients are told', () => {
  it('the serverInfo and instructions of the deployment, then each module’s instructions', async () => {
    const { client } = await devWith(
      `export default {
        name: 'lookup',
        instructions: 'Call lookup before answering.',
        register(server) {
          server.registerTool('lookup', { description: 'looks up' }, async () => ({ content: [] }));
        },
      };`,
      ['--server-name', 'acme-tools', '--server-version', '2.3.0', '--instructions', 'Be brief.'],
    );
    expect(client.getServerVersion()).toMatchObject({ name: 'acme-tools', version: '2.3.0' });
    expect(client.getInstructions()).toBe('Be brief.\n\nCall lookup before answering.');
  });
});

describe('tidemark dev --watch', () => {
  const moduleWith = (tool: string) => `
    export default (server) => {
      server.registerTool('${tool}', { description: '${tool}' }, async () => ({
        content: [{ type: 'text', text: '${tool} ran' }],
      }));
    };
  `;

  it('reloads a changed module: the session lives on, its client is told the tools changed', async () => {
    const { client, module } = await devWith(moduleWith('first'), ['--watch']);
    const changed: string[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', (notification) => {
      changed.push(notification.method);
    });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['first']);
    writeFileSync(module, moduleWith('second'));
    await vi.waitFor(() => expect(changed).toEqual(['notifications/tools/list_changed']), {
      timeout: 10_000,
    });
    // The same session (no re-initialize), the new module's tools.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['second']);
    const result = await client.callTool({ name: 'second', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'second ran' }]);
  });

  it('a change that breaks the module leaves the old one serving, and says why', async () => {
    const { client, module, entries, out } = await devWith(moduleWith('steady'), ['--watch']);
    writeFileSync(module, 'export default () => { throw new Error("half-saved"); };');
    await vi.waitFor(
      () => expect(entries().some((e) => String(e['msg']).includes('not reloaded'))).toBe(true),
      { timeout: 10_000 },
    );
    const failure = entries().find((e) => String(e['msg']).includes('not reloaded'))!;
    expect(JSON.stringify(failure['err'])).toContain('half-saved');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['steady']);
    // Said once, in words, naming the file as the user knows it (no `?reload=N`) — and saving
    // the same broken file again does not say it again.
    const said = () => out.filter((line) => line.startsWith('not reloaded'));
    expect(said()).toEqual([
      `not reloaded (the previous modules keep serving): tool module ${pathToFileURL(module).href}: register failed: half-saved`,
    ]);
    const reloadsBefore = entries().filter((e) => String(e['msg']).includes('not reloaded')).length;
    writeFileSync(module, 'export default () => { throw new Error("half-saved"); }; ');
    await vi.waitFor(
      () =>
        expect(
          entries().filter((e) => String(e['msg']).includes('not reloaded')).length,
        ).toBeGreaterThan(reloadsBefore),
      { timeout: 10_000 },
    );
    expect(said()).toHaveLength(1);
    // Fixed: the tools now served, once.
    writeFileSync(module, moduleWith('mended'));
    await vi.waitFor(() => expect(out).toContain('  ./module.mjs: mended'), { timeout: 10_000 });
  });
});
