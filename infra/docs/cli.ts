import { execFileSync } from 'node:child_process';

// The CLI's reference is its `--help`, run: every command `tidemark --help` lists, with the text the
// command prints (flags and their defaults come from the options' own tables, in help.ts).

export function cliReference(bin: string): string {
  const run = (...args: string[]) =>
    execFileSync(process.execPath, [bin, ...args], { encoding: 'utf8' }).trimEnd();
  const main = run('--help');
  const commands = [...main.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
  if (commands.length === 0) throw new Error('tidemark --help lists no commands');
  return [
    '## `tidemark --help`',
    '',
    '```text',
    main,
    '```',
    '',
    ...commands.flatMap((command) => [
      `## \`tidemark ${command}\``,
      '',
      '```text',
      run(command, '--help'),
      '```',
      '',
    ]),
  ].join('\n');
}
