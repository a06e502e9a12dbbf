import { readFileSync } from 'node:fs';
import ts from 'typescript';

// Reading definitions out of the source: an exported object table's entries with their TSDoc, and
// a module's exports with their signatures. The reference is written from what the code declares,
// so a name, a code or a comment changed in the code changes the page (and the staleness test).

export interface TableEntry {
  readonly key: string;
  /** The entry's TSDoc, or '' when it has none. */
  readonly doc: string;
  /** The entry's initializer as written. */
  readonly source: string;
  readonly node: ts.Expression;
}

/** How the docs' code is type-checked: as the packages are (Node's ESM resolution, strict). */
export const CHECK_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2024,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  allowImportingTsExtensions: true,
};

export function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

/** The TSDoc of a node (its `/** … *\/` comments joined), tags dropped. */
export function docOf(node: ts.Node): string {
  return ts
    .getJSDocCommentsAndTags(node)
    .filter((doc): doc is ts.JSDoc => ts.isJSDoc(doc))
    .map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '')
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The entries of `export const <name> = { … }` (through `as const`). */
export function objectTable(file: string, name: string): TableEntry[] {
  const source = parse(file);
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (!ts.isIdentifier(declaration.name) || declaration.name.text !== name) continue;
      let init = declaration.initializer;
      while (init !== undefined && (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)))
        init = init.expression;
      if (init === undefined || !ts.isObjectLiteralExpression(init)) break;
      return init.properties.filter(ts.isPropertyAssignment).map((property) => ({
        key: property.name.getText(source),
        doc: docOf(property),
        source: property.initializer.getText(source),
        node: property.initializer,
      }));
    }
  }
  throw new Error(`${file}: no exported object ${name}`);
}

/** Every `export const NAME = 'string'` of a file, with its TSDoc or the comment above it. */
export function stringConstants(file: string, prefix: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const statement of parse(file).statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const init = declaration.initializer;
      if (ts.isIdentifier(declaration.name) && declaration.name.text.startsWith(prefix))
        if (init !== undefined && ts.isStringLiteral(init))
          found.set(declaration.name.text, init.text);
    }
  }
  return found;
}

/** A Markdown table cell: one line, pipes escaped. */
export const cell = (text: string): string =>
  text.replace(/\s+/g, ' ').replaceAll('|', '\\|').trim();

/** Prose in a Markdown table cell: as `cell`, with `<` and `>` written as entities (not tags). */
export const prose = (text: string): string =>
  cell(text).replaceAll('<', '&lt;').replaceAll('>', '&gt;');
