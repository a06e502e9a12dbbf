import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostedServersOf } from '../src/flags/mcp-servers.js';

// `--mcp-server '<name>=<command line>'` and `--mcp-servers-file`: split as a shell splits words,
// run without one; anything a shell would have done for it refused, saying so.

const cwd = tmpdir();

describe('--mcp-server', () => {
  it('splits the command line as a shell does, quotes and escapes, and expands nothing', () => {
    expect(
      hostedServersOf(
        { 'mcp-server': [`weather=python -m "weather server" --key $API_KEY it\\'s`] },
        cwd,
      ),
    ).toEqual([
      {
        name: 'weather',
        command: 'python',
        args: ['-m', 'weather server', '--key', '$API_KEY', "it's"],
        processes: 2,
        prefix: false,
      },
    ]);
    expect(
      hostedServersOf(
        {
          'mcp-server': ['a=srv', 'b=srv --x'],
          'mcp-server-processes': '3',
          'mcp-server-prefix': true,
        },
        cwd,
      ).map((s) => [s.name, s.processes, s.prefix]),
    ).toEqual([
      ['a', 3, true],
      ['b', 3, true],
    ]);
  });

  it('a URL names a Streamable HTTP server; http to loopback only when allowed', () => {
    expect(hostedServersOf({ 'mcp-server': ['search=https://mcp.example.com/mcp'] }, cwd)).toEqual([
      { name: 'search', url: 'https://mcp.example.com/mcp', processes: 2, prefix: false },
    ]);
    expect(
      hostedServersOf(
        {
          'mcp-server': ['local=http://127.0.0.1:8080/mcp'],
          'allow-loopback-mcp-servers': true,
        },
        cwd,
      ),
    ).toMatchObject([{ name: 'local', url: 'http://127.0.0.1:8080/mcp', allowLoopback: true }]);
  });

  it('refuses what only a shell could do, a bad name, no command, a name twice', () => {
    const refused = (spec: string) => () => hostedServersOf({ 'mcp-server': [spec] }, cwd);
    expect(refused('w=srv | tee log')).toThrow(/run without a shell: no pipes/);
    expect(refused('w=srv > out')).toThrow(/run without a shell/);
    expect(refused('w=srv *.py')).toThrow(/run without a shell/);
    expect(refused('9w=srv')).toThrow(/<name>=<command line>/);
    expect(refused('srv --stdio')).toThrow(/<name>=<command line>/);
    expect(refused('w=')).toThrow(/no command given/);
    expect(() => hostedServersOf({ 'mcp-server': ['w=a', 'w=b'] }, cwd)).toThrow(/distinct names/);
  });

  it('reads a servers file (the chart’s worker.mcpServers), checked the same way', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-servers-'));
    const file = join(dir, 'servers.json');
    writeFileSync(
      file,
      JSON.stringify([
        { name: 'py', command: '/venv/bin/python', args: ['-m', 's'], env: { K: 'v' } },
      ]),
    );
    expect(hostedServersOf({ 'mcp-servers-file': 'servers.json' }, dir)).toEqual([
      { name: 'py', command: '/venv/bin/python', args: ['-m', 's'], env: { K: 'v' } },
    ]);
    writeFileSync(file, JSON.stringify([{ name: 'py', command: 'x', shell: true }]));
    expect(() => hostedServersOf({ 'mcp-servers-file': file }, dir)).toThrow(/mcpServers/);
    writeFileSync(file, '{ not json');
    expect(() => hostedServersOf({ 'mcp-servers-file': file }, dir)).toThrow(/--mcp-servers-file/);
  });
});
