import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The fenced blocks the README and the tutorial show, found by the `<!-- name -->` marker above
// each: the tests that run a block read it from the page, so the page cannot drift from the test.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The pages whose every command block must be run by a test. */
export const RUN_PAGES = ['README.md', 'docs/tutorial/index.md'] as const;

export interface Block {
  readonly marker: string | undefined;
  readonly lang: string;
  readonly body: string;
}

/** Every fenced block of a page, with the marker comment right above it (if any). */
export function blocksOf(page: string): Block[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  return [...text.matchAll(/(?:<!-- ([a-z0-9-]+) -->\s*\n)?```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    marker: m[1],
    lang: m[2]!,
    body: m[3]!,
  }));
}

/** The body of the block under `<!-- marker -->` on a page. */
export function markedBlock(page: string, marker: string): string {
  const block = blocksOf(page).find((b) => b.marker === marker);
  if (block === undefined) throw new Error(`${page}: no block under <!-- ${marker} -->`);
  return block.body;
}
