import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { slug } from 'github-slugger';
import { defineConfig } from 'vitepress';
import { repositoryLinks } from './links.ts';

// The site: VitePress (Markdown in, a static site out, local search built in, and a build that
// fails on a link to a page that does not exist). `npm run docs` serves it, `npm run docs:build`
// builds it into docs/.vitepress/dist.

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
  repository?: { url?: string };
};
/** Where a source file can be read, when the repository is public: `<url>/blob/main`. */
const sourceUrl = pkg.repository?.url?.replace(/^git\+/, '').replace(/\.git$/, '') + '/blob/main';

export default defineConfig({
  title: 'Tidemark',
  description: 'MCP servers on many machines at once, with Apache Kafka as the source of truth.',
  lang: 'en',
  cleanUrls: false,
  head: [['link', { rel: 'icon', href: '/favicon.svg', type: 'image/svg+xml' }]],
  markdown: {
    // Anchors as a code host writes them, so one `page.md#anchor` link works in both places.
    anchor: { slugify: slug },
    config: (md) => md.use(repositoryLinks(root, pkg.repository?.url ? sourceUrl : undefined)),
  },
  themeConfig: {
    search: { provider: 'local' },
    outline: 'deep',
    nav: [
      { text: 'Tutorial', link: '/tutorial/' },
      { text: 'How-to', link: '/how-to/write-tools' },
      { text: 'Explanation', link: '/architecture' },
      { text: 'Reference', link: '/reference/' },
      { text: 'Benchmarks', link: '/benchmarks/' },
      { text: 'Clients', link: '/interop/' },
    ],
    sidebar: [
      {
        text: 'Tutorial',
        items: [{ text: 'From a first tool to Kubernetes', link: '/tutorial/' }],
      },
      {
        text: 'How-to guides',
        items: [
          { text: 'Write tools', link: '/how-to/write-tools' },
          { text: 'Test tools', link: '/how-to/test-tools' },
          { text: 'Tools in your own repository', link: '/how-to/tools-in-your-repository' },
          { text: 'Serve MCP servers in any language', link: '/hosted-servers' },
          { text: 'Idempotency keys and durable steps', link: '/how-to/idempotency' },
          {
            text: 'Wait for minutes, days or a person',
            link: '/how-to/write-tools#waiting-for-minutes-or-days-exsleep',
          },
          { text: 'Durable tasks', link: '/how-to/tasks' },
          { text: 'Events and webhooks', link: '/how-to/events' },
          { text: 'Security, auth and tenants', link: '/how-to/security' },
          { text: 'Sign-in and tokens', link: '/auth' },
          { text: 'Deploy on Kubernetes', link: '/how-to/kubernetes' },
          { text: 'Scale and roll out', link: '/how-to/scaling-and-rollouts' },
          { text: 'Upgrade', link: '/upgrades' },
          { text: 'Observe', link: '/how-to/observability' },
        ],
      },
      {
        text: 'Explanation',
        items: [
          { text: 'Architecture', link: '/architecture' },
          { text: 'The resume decision', link: '/explanation/resume' },
          { text: 'The words', link: '/explanation/words' },
          { text: 'When a worker dies: failures we cause', link: '/explanation/failures' },
          { text: 'Runs for months', link: '/explanation/runs-for-months' },
          { text: 'Gateways read their share', link: '/scaling' },
          { text: 'Capacity', link: '/capacity' },
          { text: 'Trust boundary: Kafka', link: '/kafka-trust' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Overview', link: '/reference/' },
          { text: 'CLI', link: '/reference/cli' },
          { text: 'Helm chart values', link: '/reference/chart' },
          { text: 'API: @tidemark/tools, @tidemark/client', link: '/reference/api' },
          { text: 'Metrics and span attributes', link: '/reference/telemetry' },
          { text: 'Errors and refusals', link: '/reference/errors' },
          { text: 'On the wire', link: '/reference/wire' },
          { text: '@tidemark/client', link: '/reference/client' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'Benchmarks', link: '/benchmarks/' },
          { text: 'Clients that work with it', link: '/interop/' },
          { text: 'Status', link: '/status' },
          { text: 'Developing Tidemark', link: '/development' },
        ],
      },
    ],
  },
});
