import { readFileSync } from 'node:fs';
import { parseDocument, isMap, isScalar, type Node, type Pair } from 'yaml';
import { cell, prose } from './source.ts';

// The chart's values: each key of values.yaml with its default and the comment written above it
// (as helm-docs reads them), its type and constraints from values.schema.json. A value left null
// takes the server's own default: shown from the server's defaults table, never restated in
// values.yaml (test/docs/reference.test.ts holds it to that).

/** The servers' defaults a null chart value falls back to, by the chart's section. */
export type ServerDefaults = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

const DAY = 86_400_000;
const UNITS: ReadonlyArray<[number, string]> = [
  [DAY, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];

/** A default as the chart writes such a value: durations as 20s, 1h, 1d; numbers as they are. */
function shown(key: string, value: unknown): string {
  if (typeof value !== 'number' || !key.endsWith('Ms')) return JSON.stringify(value);
  const [unit, suffix] = UNITS.find(([u]) => value % u === 0) ?? [1, 'ms'];
  return `${value / unit}${suffix}`;
}

/** The server default a null value at `path` falls back to: the same name, or the name + `Ms`. */
function serverDefault(defaults: ServerDefaults, path: readonly string[]): string | undefined {
  const table = defaults[path[0]!];
  const name = path.at(-1)!;
  if (table === undefined) return undefined;
  for (const key of [name, `${name}Ms`]) if (key in table) return shown(key, table[key]);
  return undefined;
}

interface Schema {
  type?: string | string[];
  enum?: unknown[];
  pattern?: string;
  description?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
}

interface Row {
  key: string;
  value: string;
  type: string;
  what: string;
}

function schemaAt(schema: Schema | undefined, path: readonly string[]): Schema | undefined {
  return path.reduce<Schema | undefined>((s, key) => s?.properties?.[key], schema);
}

function typeOf(schema: Schema | undefined): string {
  if (schema === undefined) return '—';
  if (schema.enum !== undefined) return schema.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  const type = Array.isArray(schema.type) ? schema.type.join(' \\| ') : (schema.type ?? '—');
  const range =
    schema.minimum !== undefined || schema.maximum !== undefined
      ? ` (${schema.minimum ?? ''}…${schema.maximum ?? ''})`
      : '';
  return type + range;
}

const comment = (text: string | null | undefined): string =>
  (text ?? '')
    .split('\n')
    .map((l) => l.replace(/^\s?/, ''))
    .join(' ')
    .trim();

function rows(
  node: Node | null,
  path: string[],
  context: { schema: Schema; defaults: ServerDefaults },
  out: Row[],
): void {
  const { schema } = context;
  if (!isMap(node)) return;
  for (const pair of node.items as Pair<Node, Node>[]) {
    const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
    const at = [...path, key];
    const s = schemaAt(schema, at);
    const what = [
      comment(pair.key?.commentBefore),
      comment(pair.value?.comment),
      s?.description ?? '',
    ]
      .filter((t) => t !== '')
      .join(' ');
    if (isMap(pair.value) && (pair.value.items.length > 0 || s?.properties !== undefined)) {
      if (what !== '') out.push({ key: at.join('.'), value: '', type: 'object', what });
      rows(pair.value, at, context, out);
      continue;
    }
    const json = pair.value === null ? null : (pair.value.toJSON() as unknown);
    const fallback = json === null ? serverDefault(context.defaults, at) : undefined;
    const value = fallback === undefined ? JSON.stringify(json) : `null → ${fallback}`;
    out.push({ key: at.join('.'), value, type: typeOf(s), what });
  }
}

export function chartReference(chartDir: string, defaults: ServerDefaults): string {
  const doc = parseDocument(readFileSync(`${chartDir}/values.yaml`, 'utf8'));
  const schema = JSON.parse(readFileSync(`${chartDir}/values.schema.json`, 'utf8')) as Schema;
  const out: Row[] = [];
  rows(doc.contents, [], { schema, defaults }, out);
  return [
    '| value | default | type | what |',
    '| --- | --- | --- | --- |',
    ...out.map(
      (r) =>
        `| \`${r.key}\` | ${r.value === '' ? '' : `\`${cell(r.value)}\``} | ${r.type} | ${prose(r.what)} |`,
    ),
    '',
  ].join('\n');
}
