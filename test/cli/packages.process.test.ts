import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import { startDevServer } from '../support/dev-server.js';
import { markedBlock } from '../docs/blocks.js';

// The packages as a user gets them: every workspace package packed with `npm pack`, installed from
// the tarballs into an empty project outside this repository, and a tool module of the user's own
// run by `npx tidemark dev`. Catches a dependency that is imported but not declared, a file left
// out of a package, a bin that npm cannot link.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

// The module a user writes in their own repository: plain JavaScript, importing @tidemark/tools.
const MODULE = `
import { defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export default defineToolModule({
  name: 'mine',
  register(server) {
    server.registerTool(
      'shout',
      { description: 'Repeats a word, louder each time.', inputSchema: z.object({ word: z.string(), times: z.number().int() }) },
      async ({ word, times }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        const out = [];
        for (let i = 1; i <= times; i++) {
          out.push(word.toUpperCase() + '!'.repeat(i));
          if (token !== undefined) {
            await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: times } });
          }
        }
        return { content: [{ type: 'text', text: out.join(' ') }] };
      },
    );
  },
});
`;

describe('the published packages, outside this repository', () => {
  it('npm run install-into packs every workspace into a new project; npx tidemark dev --tools ./module.mjs there serves it to the official client', async () => {
    const work = mkdtempSync(join(tmpdir(), 'tidemark-user-'));
    onTestFinished(() => rmSync(work, { recursive: true, force: true }));
    const project = join(work, 'project');
    // The user's npm runs on the same Node as this test (the repository's own Node 24).
    const env = {
      ...process.env,
      PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };

    // The README's own-repository path, as written: one command from the clone.
    await run('npm', ['run', 'install-into', '--silent', '--', project], {
      cwd: root,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(readdirSync(join(project, 'node_modules/@tidemark')).sort()).toEqual([
      'cli',
      'client',
      'console',
      'embedded-log',
      'examples',
      'gateway',
      'kafka',
      'log',
      'otel',
      'protocol',
      'testing',
      'tools',
      'webhooks',
      'worker',
    ]);
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))).toMatchObject({
      type: 'module',
      dependencies: { zod: expect.any(String) as unknown },
    });
    writeFileSync(join(project, 'module.mjs'), MODULE);

    const port = await reservePorts();
    const server = startDevServer(
      'npx',
      ['tidemark', 'dev', '--tools', './module.mjs', '--port', String(port), '--data', './state'],
      { cwd: project, env },
    );
    const client = await connectResumingClient(await server.url, { name: 'outsider' });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['shout']);
    const progress: number[] = [];
    const result = await client.callTool(
      { name: 'shout', arguments: { word: 'tide', times: 5 } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(progress).toEqual(numbers(5));
    expect(result.content).toEqual([
      { type: 'text', text: 'TIDE! TIDE!! TIDE!!! TIDE!!!! TIDE!!!!!' },
    ]);
    // The console comes with its page script and stylesheet (files outside dist).
    const console = `http://127.0.0.1:${port}/console`;
    expect((await fetch(console)).status).toBe(200);
    expect((await fetch(`${console}/assets/console.js`)).status).toBe(200);
    expect((await fetch(`${console}/assets/console.css`)).status).toBe(200);
    // Stopping npx (its process alone, as a process manager or `kill <pid>` would) stops the
    // server: npm does not pass SIGTERM on, the server notices it was left and drains.
    process.kill(server.child.pid!, 'SIGTERM');
    await expect
      .poll(
        () =>
          fetch(console).then(
            () => 'serving',
            () => 'stopped',
          ),
        { timeout: 15_000 },
      )
      .toBe('stopped');

    // `tidemark init` there: a TypeScript module, its test, npm start and npm test on Node 24.
    // `npm install` again works (the packages stay in the project: its package.json names them).
    // The tutorial's first two blocks (tutorial-init, tutorial-run) are what runs here.
    expect(markedBlock('docs/tutorial/index.md', 'tutorial-init')).toBe(
      'npx tidemark init\nnpm install\n',
    );
    expect(markedBlock('docs/tutorial/index.md', 'tutorial-run')).toMatch(
      /^npm start .*\nnpm test /,
    );
    await run('npx', ['tidemark', 'init'], { cwd: project, env });
    await run('npm', ['install', '--prefer-offline'], { cwd: project, env, maxBuffer: 16 << 20 });
    const tested = await run('npm', ['test'], { cwd: project, env });
    expect(tested.stdout).toMatch(/^ℹ pass 1$/m);
    const startPort = await reservePorts();
    const started = startDevServer('npm', ['start', '--', '--port', String(startPort)], {
      cwd: project,
      env,
    });
    const greeter = await connectResumingClient(await started.url, { name: 'initialized' });
    expect(await greeter.callTool({ name: 'greet', arguments: { name: 'Ada' } })).toMatchObject({
      content: [{ type: 'text', text: 'Hello, Ada!' }],
    });
    // The README's tool is the one init wrote, and its `curl` is answered as the README shows.
    expect(readFileSync(join(project, 'tools.ts'), 'utf8')).toBe(
      markedBlock('README.md', 'readme-tool'),
    );
    const curl = markedBlock('README.md', 'readme-call').replace(
      '127.0.0.1:3000',
      `127.0.0.1:${startPort}`,
    );
    const answered = await run('bash', ['-euo', 'pipefail', '-c', curl]);
    expect(answered.stdout.trim()).toBe(markedBlock('README.md', 'readme-call-output').trim());
  }, 360_000);
});
