import { readFileSync } from 'node:fs';
import { parseDocument, isMap, isScalar, type Node, type Pair } from 'yaml';
import { cell, prose } from './source.ts';

// The chart's values: each key of values.yaml with its default and the comment written above it
// (as helm-docs reads them), its type and constraints from values.schema.json.

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

function rows(node: Node | null, path: string[], schema: Schema, out: Row[]): void {
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
      rows(pair.value, at, schema, out);
      continue;
    }
    const value = pair.value === null ? 'null' : JSON.stringify(pair.value.toJSON());
    out.push({ key: at.join('.'), value, type: typeOf(s), what });
  }
}

export function chartReference(chartDir: string): string {
  const doc = parseDocument(readFileSync(`${chartDir}/values.yaml`, 'utf8'));
  const schema = JSON.parse(readFileSync(`${chartDir}/values.schema.json`, 'utf8')) as Schema;
  const out: Row[] = [];
  rows(doc.contents, [], schema, out);
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
