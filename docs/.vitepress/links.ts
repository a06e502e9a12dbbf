import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { MarkdownRenderer } from 'vitepress';

type Token = ReturnType<MarkdownRenderer['parse']>[number];

// The docs are Markdown that reads the same on a code host and on the site, so their links are
// relative file links. A link that leaves `docs/` names a file of the repository: a package's
// README shown on the site (it becomes a link to its page), or a source file (shown as its path,
// or linked to `sourceUrl` when the repository has one). A link to a file that does not exist
// fails the build, as VitePress's own check does for links between pages.

/** Files outside `docs/` that the site shows as pages, by their path in the repository. */
const SITE_PAGES: Readonly<Record<string, string>> = {
  'README.md': 'docs/index.md',
  'packages/tools/README.md': 'docs/how-to/write-tools.md',
  'packages/gateway/README.md': 'docs/reference/wire.md',
  'packages/client/README.md': 'docs/reference/client.md',
  'packages/testing/README.md': 'docs/how-to/test-tools.md',
};

interface Env {
  path?: string;
  relativePath?: string;
}

/** A markdown-it plugin: rewrites links that leave `docs/` (see above). */
export function repositoryLinks(root: string, sourceUrl: string | undefined) {
  const docs = join(root, 'docs');
  return (md: MarkdownRenderer): void => {
    md.core.ruler.push('tidemark-repository-links', (state) => {
      const env = state.env as Env;
      if (env.path === undefined) return;
      const page = dirname(env.path);
      for (const block of state.tokens) {
        const children = block.children ?? [];
        children.forEach((token, i) => {
          if (token.type !== 'link_open') return;
          const href = token.attrGet('href');
          if (href === null || /^([a-z]+:|#|\/)/i.test(href)) return;
          const [path = '', fragment] = href.split('#', 2);
          const target = resolve(page, decodeURIComponent(path));
          if (!relative(docs, target).startsWith('..')) return;
          const file = relative(root, target);
          if (file.startsWith('..'))
            throw new Error(`${env.relativePath}: the link ${href} leaves the repository`);
          const shown = SITE_PAGES[file];
          if (shown !== undefined) {
            const to = relative(page, join(root, shown));
            return void token.attrSet('href', fragment === undefined ? to : `${to}#${fragment}`);
          }
          if (!existsSync(target))
            throw new Error(
              `${env.relativePath}: the link ${href} names ${file}, which does not exist`,
            );
          if (sourceUrl !== undefined) return void token.attrSet('href', `${sourceUrl}/${file}`);
          asPath(token, children, i, file);
        });
      }
    });
  };
}

/** Turns a link into a span that names the file (there is no public source to link to). */
function asPath(open: Token, tokens: Token[], at: number, file: string) {
  const close = tokens.slice(at).find((token) => token.type === 'link_close');
  open.tag = 'span';
  open.attrs = [
    ['class', 'source-path'],
    ['title', file],
  ];
  if (close !== undefined) close.tag = 'span';
}
