import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { messageOf } from '@tidemark/protocol';

// Why a tool module could not be imported, said so that it points at the line: Node's SyntaxError
// from a dynamic import has no location for JavaScript (only TypeScript's type stripping puts
// `file:line` and the source line in the stack), and a `.ts` module in a CommonJS package fails
// in ways that do not say `"type": "module"`.

const run = promisify(execFile);

/** The import's error as a message: location and code frame for syntax errors, hints where known. */
export async function describeImportError(specifier: string, error: unknown): Promise<string> {
  const message = messageOf(error);
  if (!(error instanceof SyntaxError)) return withHint(specifier, message);
  const frame = frameOf(error.stack ?? '') ?? (await checkedFrame(specifier));
  return withHint(specifier, frame === undefined ? message : `${message}\n${frame}`);
}

/**
 * `path:line:col` and the source line with its caret, from Node's "arrow message" (the lines
 * before `SyntaxError:`), or undefined when there is none.
 */
function frameOf(text: string): string | undefined {
  const lines = text.split('\n');
  const end = lines.findIndex((line) => /^SyntaxError\b/.test(line));
  const location = /^(.+):(\d+)$/.exec(lines[0] ?? '');
  if (end < 2 || location === null) return undefined;
  const source = lines.slice(1, end).filter((line) => line.trim() !== '');
  const caret = source.findIndex((line) => /^\s*\^+\s*$/.test(line));
  if (caret < 1) return undefined;
  const code = source[caret - 1]!;
  const column = source[caret]!.indexOf('^') + 1;
  const [, path, line] = location;
  const gutter = ' '.repeat(line!.length);
  return `  at ${path}:${line}:${column}\n  ${line} | ${code}\n  ${gutter} | ${source[caret]}`;
}

/** Node's own syntax check of a JavaScript file, for the arrow message its import did not keep. */
async function checkedFrame(specifier: string): Promise<string | undefined> {
  if (!specifier.startsWith('file:') || /\.(c|m)?ts$/.test(specifier)) return undefined;
  try {
    await run(process.execPath, ['--check', fileURLToPath(specifier)], { timeout: 10_000 });
    return undefined;
  } catch (error) {
    const { stderr } = error as { stderr?: unknown };
    return typeof stderr === 'string' ? frameOf(stderr) : undefined;
  }
}

/** A TypeScript module that Node read as CommonJS: the package is missing `"type": "module"`. */
function withHint(specifier: string, message: string): string {
  const typescript = /\.ts$/.test(specifier);
  const commonJs =
    /Cannot use import statement outside a module|Unexpected token 'export'|require is not defined|exports is not defined/;
  if (typescript && commonJs.test(message))
    return `${message}\n  hint: a .ts tool module is loaded as an ES module: add "type": "module" to the nearest package.json (or name the file .mts)`;
  return message;
}
