import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GATEWAY_DEFAULTS } from '@tidemark/gateway';
import { WORKER_DEFAULTS } from '@tidemark/worker';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse } from '../../infra/docs/source.ts';
import { ROOT } from './blocks.js';

// An option's default lives in its server's defaults table (GATEWAY_DEFAULTS, WORKER_DEFAULTS);
// the `@default` tag on the option says it again for readers of the type. The two must agree:
// each tag is read as a value (20 s, 4 MiB, 1,000 ms, 3_600_000 (1 hour), 'tool', false) and
// compared with the table, so a default changed in one place only fails here. The packages'
// READMEs list the options with their defaults too: the same check holds them.

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  minutes: 60_000,
  hour: 3_600_000,
  hours: 3_600_000,
  KiB: 1024,
  MiB: 1024 * 1024,
};

/** A `@default` tag's value, or undefined when it states a rule (half of …, loopback only). */
function valueOf(tag: string): unknown {
  const text = tag
    .replace(/\s*\(.*\)\s*$/, '')
    .replace(/`/g, '')
    .trim();
  if (text === 'true' || text === 'false') return text === 'true';
  const quoted = /^'([^']*)'$/.exec(text);
  if (quoted !== null) return quoted[1];
  const number = /^([\d,_]+)\s*(ms|s|minutes|hours?|KiB|MiB)?$/.exec(text);
  if (number === null) return text.startsWith('/') ? text : undefined;
  return Number(number[1]!.replace(/[,_]/g, '')) * (UNITS[number[2] ?? ''] ?? 1);
}

function tags(file: string, name: string): Array<{ option: string; tag: string }> {
  const found: Array<{ option: string; tag: string }> = [];
  for (const statement of parse(file).statements)
    if (ts.isInterfaceDeclaration(statement) && statement.name.text === name)
      for (const member of statement.members)
        for (const tag of ts.getJSDocTags(member))
          if (tag.tagName.text === 'default' && member.name !== undefined)
            found.push({
              option: member.name.getText(),
              tag: ts.getTextOfJSDocComment(tag.comment) ?? '',
            });
  return found;
}

/** The README's options table: `| \`option\` | default | what |` rows. */
function readmeDefaults(readme: string): Array<{ option: string; tag: string }> {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  const table = text.slice(text.indexOf('| option | default |'));
  return [...table.slice(0, table.indexOf('\n\n')).matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)].map(
    (m) => ({ option: m[1]!, tag: m[2]!.trim() }),
  );
}

describe.each([
  [
    'GatewayOptions',
    'packages/gateway/src/gateway-options.ts',
    'packages/gateway/README.md',
    GATEWAY_DEFAULTS,
  ],
  [
    'WorkerOptions',
    'packages/worker/src/worker-options.ts',
    'packages/worker/README.md',
    WORKER_DEFAULTS,
  ],
] as const)('%s', (name, file, readme, table) => {
  const defaults = table as Readonly<Record<string, unknown>>;
  const disagreeing = (found: Array<{ option: string; tag: string }>, minimum: number) => {
    const compared = found.filter(
      ({ option, tag }) =>
        option in defaults && typeof defaults[option] !== 'object' && valueOf(tag) !== undefined,
    );
    expect(compared.length).toBeGreaterThan(minimum);
    return compared
      .filter(({ option, tag }) => valueOf(tag) !== defaults[option])
      .map(({ option, tag }) => `${option}: ${tag}, the table ${JSON.stringify(defaults[option])}`);
  };

  it('says in its @default tags what its defaults table holds', () => {
    expect(disagreeing(tags(join(ROOT, file), name), 12)).toEqual([]);
  });

  it('says in its README what its defaults table holds', () => {
    expect(disagreeing(readmeDefaults(readme), 6)).toEqual([]);
  });
});
