import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { CHECK_OPTIONS } from '../../infra/docs/source.ts';
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
  it('close every fence they open, on every page (an unclosed one swallows the prose after it)', () => {
    const pages = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.md') && !f.startsWith('.vitepress'))
        .map((f) => `docs/${f}`),
    ];
    expect(pages.length).toBeGreaterThan(40);
    const odd = pages.filter(
      (page) => (readFileSync(join(ROOT, page), 'utf8').match(/^\s*```/gm) ?? []).length % 2 !== 0,
    );
    expect(odd).toEqual([]);
  });

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
      const program = ts.createProgram([file], CHECK_OPTIONS);
      const errors = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(errors).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
