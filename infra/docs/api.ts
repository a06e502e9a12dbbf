import ts from 'typescript';
import { CHECK_OPTIONS, cell, docOf, prose } from './source.ts';

// The public API of a package from its entry point and TSDoc: every export, its kind, its
// signature and what its comment says; an interface's or a class's members with theirs.

const FORMAT =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope |
  ts.TypeFormatFlags.WriteArrowStyleSignature;

export function apiReference(packages: ReadonlyArray<{ name: string; entry: string }>): string {
  const program = ts.createProgram(
    packages.map((p) => p.entry),
    CHECK_OPTIONS,
  );
  const checker = program.getTypeChecker();
  const out: string[] = [];
  for (const pkg of packages) {
    const source = program.getSourceFile(pkg.entry);
    const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`${pkg.entry}: not a module`);
    out.push(`## \`${pkg.name}\``, '');
    const exports = checker.getExportsOfModule(module).sort((a, b) => a.name.localeCompare(b.name));
    for (const symbol of exports) out.push(...describe(checker, symbol));
  }
  return out.join('\n');
}

function resolved(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

function describe(checker: ts.TypeChecker, exported: ts.Symbol): string[] {
  const symbol = resolved(checker, exported);
  const declaration = symbol.declarations?.[0];
  if (declaration === undefined) return [];
  const doc = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const head = `### \`${exported.name}\``;
  const kind = kindOf(declaration);
  const signature = signatureOf(checker, symbol, declaration);
  const lines = [head, '', `*${kind}*${signature === '' ? '' : ` — \`${cell(signature)}\``}`, ''];
  if (doc !== '') lines.push(doc, '');
  const members = membersOf(checker, symbol, declaration);
  if (members.length > 0)
    lines.push('| member | type | what |', '| --- | --- | --- |', ...members, '');
  return lines;
}

function kindOf(node: ts.Declaration): string {
  if (ts.isFunctionDeclaration(node)) return 'function';
  if (ts.isClassDeclaration(node)) return 'class';
  if (ts.isInterfaceDeclaration(node)) return 'interface';
  if (ts.isTypeAliasDeclaration(node)) return 'type';
  if (ts.isVariableDeclaration(node)) return 'constant';
  if (ts.isEnumDeclaration(node)) return 'enum';
  return 'export';
}

function signatureOf(checker: ts.TypeChecker, symbol: ts.Symbol, node: ts.Declaration): string {
  if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) return '';
  if (ts.isTypeAliasDeclaration(node))
    return checker.typeToString(checker.getDeclaredTypeOfSymbol(symbol), undefined, FORMAT);
  const type = checker.getTypeOfSymbolAtLocation(symbol, node);
  const calls = type.getCallSignatures();
  if (ts.isFunctionDeclaration(node) && calls.length > 0)
    return calls.map((s) => checker.signatureToString(s, undefined, FORMAT)).join('; ');
  return checker.typeToString(type, undefined, FORMAT);
}

/** An interface's or class's public members: name, type, TSDoc. */
function membersOf(checker: ts.TypeChecker, symbol: ts.Symbol, node: ts.Declaration): string[] {
  if (!ts.isInterfaceDeclaration(node) && !ts.isClassDeclaration(node)) return [];
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  return type
    .getProperties()
    .filter((member) => !member.name.startsWith('#') && !member.name.startsWith('_'))
    .filter((member) => {
      const d = member.declarations?.[0];
      if (d === undefined) return false;
      const modifiers = ts.canHaveModifiers(d) ? (ts.getModifiers(d) ?? []) : [];
      return !modifiers.some(
        (m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword,
      );
    })
    .map((member) => {
      const d = member.declarations![0]!;
      const memberType = checker.typeToString(
        checker.getTypeOfSymbolAtLocation(member, d),
        undefined,
        FORMAT,
      );
      const what = ts.displayPartsToString(member.getDocumentationComment(checker)) || docOf(d);
      return `| \`${member.name}\` | \`${cell(memberType)}\` | ${prose(what)} |`;
    });
}
