import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { blocksOf, markedBlock, ROOT, RUN_PAGES } from './blocks.js';

// Every command block the README and the tutorial show is run by a test (named here, and reading
// the block from the page by its marker), or is a template with <placeholders> in it. And the
// code they show compiles against the packages as they are.

/** Which test runs each marked block. */
const RUN_BY: Readonly<Record<string, string>> = {
  'readme-commands': 'test/cli/dev.process.test.ts',
  'readme-call': 'test/cli/packages.process.test.ts',
  'tutorial-init': 'test/cli/packages.process.test.ts',
  'tutorial-run': 'test/cli/packages.process.test.ts',
  'laptop-kafka': 'test/cli/readme-kafka.kafka.test.ts',
  'tutorial-helm': 'test/helm/chart.process.test.ts',
};

describe('the command blocks of the README and the tutorial', () => {
  it('are each run by a test that reads it from the page, or are templates', () => {
    for (const page of RUN_PAGES)
      for (const block of blocksOf(page).filter((b) => b.lang === 'sh')) {
        if (block.marker === 'template') {
          expect(block.body, `${page}: a template block names no <placeholder>`).toMatch(/<[^>]+>/);
          continue;
        }
        const runner = block.marker === undefined ? undefined : RUN_BY[block.marker];
        expect(
          runner,
          `${page}: the block ${JSON.stringify(block.body.slice(0, 60))} is run by no test`,
        ).toBeDefined();
        expect(readFileSync(join(ROOT, runner!), 'utf8')).toContain(block.marker);
      }
  });

  it('show one tool module, the one tidemark init writes, and it compiles', () => {
    const tool = markedBlock('README.md', 'readme-tool');
    expect(markedBlock('docs/tutorial/index.md', 'tutorial-tool')).toBe(tool);
    const dir = join(ROOT, 'test-results', `docs-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const file = join(dir, 'tools.ts');
      writeFileSync(file, tool);
      const program = ts.createProgram([file], {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2024,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
      });
      const errors = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(errors).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
