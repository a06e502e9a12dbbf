import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { parse, prose, stringConstants } from './source.ts';

// Metrics and span attributes from their definitions: every `meter.create…(NAME, { description,
// unit })` in the packages' sources, with NAME resolved through the `METRIC_*` constants, and every
// attribute name the `ATTR_*` constants define.

const INSTRUMENTS: Readonly<Record<string, string>> = {
  createCounter: 'counter',
  createUpDownCounter: 'up-down counter',
  createHistogram: 'histogram',
  createGauge: 'gauge',
  createObservableGauge: 'observable gauge',
  createObservableCounter: 'observable counter',
  createObservableUpDownCounter: 'observable up-down counter',
};

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f));
}

interface Instrument {
  name: string;
  kind: string;
  unit: string;
  description: string;
  file: string;
}

function instrumentsIn(file: string, names: ReadonlyMap<string, string>): Instrument[] {
  const found: Instrument[] = [];
  const source = parse(file);
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const kind = INSTRUMENTS[node.expression.name.text];
      const [nameArg, options] = node.arguments;
      const onMeter = /meter/i.test(node.expression.expression.getText(source));
      if (kind !== undefined && onMeter && nameArg !== undefined) {
        const name = ts.isStringLiteral(nameArg)
          ? nameArg.text
          : names.get(nameArg.getText(source));
        if (name === undefined)
          throw new Error(`${file}: cannot resolve ${nameArg.getText(source)}`);
        const option = (key: string): string => {
          if (options === undefined || !ts.isObjectLiteralExpression(options)) return '';
          const p = options.properties.find(
            (x): x is ts.PropertyAssignment =>
              ts.isPropertyAssignment(x) && x.name.getText(source) === key,
          );
          return p !== undefined && ts.isStringLiteralLike(p.initializer) ? p.initializer.text : '';
        };
        found.push({ name, kind, unit: option('unit'), description: option('description'), file });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function telemetryReference(root: string): string {
  const packages = join(root, 'packages');
  const files = readdirSync(packages).flatMap((p) => {
    try {
      return sources(join(packages, p, 'src'));
    } catch {
      return [];
    }
  });
  const names = new Map<string, string>();
  const attributes = new Map<string, string>();
  for (const file of files) {
    for (const [k, v] of stringConstants(file, 'METRIC_')) names.set(k, v);
    for (const [k, v] of stringConstants(file, 'ATTR_')) attributes.set(k, v);
  }
  const instruments = files
    .flatMap((file) => instrumentsIn(file, names))
    .sort((a, b) => a.name.localeCompare(b.name));
  return [
    '## Metrics',
    '',
    '| name | instrument | unit | what | defined in |',
    '| --- | --- | --- | --- | --- |',
    ...instruments.map(
      (i) =>
        `| \`${i.name}\` | ${i.kind} | ${i.unit === '' ? '—' : `\`${i.unit}\``} | ${prose(i.description)} | \`${i.file.slice(root.length)}\` |`,
    ),
    '',
    '## Span and metric attributes',
    '',
    'The attribute names Tidemark sets on its spans and metrics (the MCP, JSON-RPC, gen_ai and',
    "messaging ones follow OpenTelemetry's semantic conventions; `tidemark.*` are Tidemark's own).",
    '',
    '| attribute | constant |',
    '| --- | --- |',
    ...[...attributes]
      .sort(([, a], [, b]) => a.localeCompare(b))
      .map(([constant, name]) => `| \`${name}\` | \`${constant}\` |`),
    '',
  ].join('\n');
}
