// Reading V8 CPU profiles (.cpuprofile): the hottest functions as a table, and a flame graph as a
// self-contained SVG (hover a frame for its name and share), so a profile can be read in a
// browser or on GitHub without a viewer.

export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    hitCount?: number;
    children?: number[];
  }>;
}

interface Frame {
  readonly name: string;
  self: number;
  total: number;
  readonly children: Map<string, Frame>;
}

/** A frame's readable name: the function and where it is, without the install paths. */
function frameName(callFrame: CpuProfile['nodes'][number]['callFrame']): string {
  const url = callFrame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*node_modules\//, '')
    .replace(/^.*\/packages\//, '')
    .replace(/^.*\/test\//, 'test/');
  const where = url === '' ? '' : ` ${url}:${callFrame.lineNumber + 1}`;
  return `${callFrame.functionName || '(anonymous)'}${where}`;
}

/** The profile as a tree of frames merged by name along each path, with self and total samples. */
function frameTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const root: Frame = { name: 'all', self: 0, total: 0, children: new Map() };
  const walk = (id: number, parent: Frame): number => {
    const node = byId.get(id)!;
    const name = frameName(node.callFrame);
    // The root's own node ("(root)") is the tree's root.
    const frame =
      name === '(root)'
        ? parent
        : (parent.children.get(name) ??
          (parent.children.set(name, { name, self: 0, total: 0, children: new Map() }),
          parent.children.get(name)!));
    const self = node.hitCount ?? 0;
    frame.self += self;
    let total = self;
    for (const child of node.children ?? []) total += walk(child, frame);
    if (frame !== parent) frame.total += total;
    return total;
  };
  root.total = walk(profile.nodes[0]!.id, root);
  // Loading the program is not the steady state a profile is taken for.
  const startup = [...root.children.values()].filter((f) => f.name.includes('run_main_module'));
  for (const frame of startup) {
    root.total -= frame.total;
    root.children.delete(frame.name);
  }
  return root;
}

/** The functions with the most self time and the most total time, as markdown tables. */
export function hotFunctions(profile: CpuProfile, count: number): string {
  const root = frameTree(profile);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const walk = (frame: Frame, onStack: Set<string>) => {
    self.set(frame.name, (self.get(frame.name) ?? 0) + frame.self);
    // A function counts once per stack, however deep its recursion.
    if (!onStack.has(frame.name)) total.set(frame.name, (total.get(frame.name) ?? 0) + frame.total);
    const next = new Set(onStack).add(frame.name);
    for (const child of frame.children.values()) walk(child, next);
  };
  for (const child of root.children.values()) walk(child, new Set());
  const idle = (self.get('(idle)') ?? 0) + (self.get('(program)') ?? 0);
  const busy = Math.max(1, root.total - idle);
  const rows = (map: Map<string, number>, plumbing = false) =>
    [...map]
      .filter(([name]) => name !== '(idle)' && name !== '(program)' && name !== '(root)')
      // In the total table, the event loop's own frames (every stack runs under them) say nothing.
      .filter(([name]) => plumbing || !(name.includes(' node:') || PLUMBING.has(name)))
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, hits]) => `| ${((hits / busy) * 100).toFixed(1)}% | \`${name}\` |`)
      .join('\n');
  return [
    `Shares of the busy samples (${busy} of ${root.total}; the rest idle).`,
    '',
    '**Self time**',
    '',
    '| share | function |',
    '| --- | --- |',
    rows(self, true),
    '',
    '**Total time** (the function and what it called)',
    '',
    '| share | function |',
    '| --- | --- |',
    rows(total),
  ].join('\n');
}

const PLUMBING = new Set(['runMicrotasks', '(anonymous)', '(garbage collector)']);

const WIDTH = 1200;
const ROW = 16;

/** A flame graph of the profile (idle time left out), one SVG with titles for hovering. */
export function flameGraphSvg(profile: CpuProfile, title: string): string {
  const root = frameTree(profile);
  for (const name of ['(idle)', '(program)']) {
    const frame = root.children.get(name);
    if (frame !== undefined) {
      root.total -= frame.total;
      root.children.delete(name);
    }
  }
  const rects: string[] = [];
  let depth = 0;
  const scale = WIDTH / Math.max(1, root.total);
  const draw = (frame: Frame, x: number, level: number) => {
    const width = frame.total * scale;
    if (width < 1) return; // narrower than a pixel: left out (the .cpuprofile has it)
    depth = Math.max(depth, level);
    const share = ((frame.total / Math.max(1, root.total)) * 100).toFixed(1);
    const label = width > 40 ? escape(frame.name.slice(0, Math.floor(width / 6.5))) : '';
    rects.push(
      `<g><title>${escape(frame.name)} (${share}%)</title>` +
        `<rect x="${x.toFixed(1)}" y="LEVEL${level}" width="${width.toFixed(1)}" height="${ROW - 1}" fill="${colour(frame.name)}"/>` +
        (label === '' ? '' : `<text x="${(x + 3).toFixed(1)}" y="TEXT${level}">${label}</text>`) +
        '</g>',
    );
    let childX = x;
    for (const child of [...frame.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      draw(child, childX, level + 1);
      childX += child.total * scale;
    }
  };
  draw(root, 0, 0);
  const height = (depth + 1) * ROW + 30;
  // Flames grow upwards: the root at the bottom.
  const body = rects
    .join('\n')
    .replace(/y="LEVEL(\d+)"/g, (_, l: string) => `y="${height - (Number(l) + 1) * ROW}"`)
    .replace(/y="TEXT(\d+)"/g, (_, l: string) => `y="${height - Number(l) * ROW - 4}"`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="4" y="16" font-size="13">${escape(title)}</text>`,
    body,
    '</svg>',
    '',
  ].join('\n');
}

/** Warm colours, a stable one per package: Tidemark's own code red, libraries orange, Node yellow. */
function colour(name: string): string {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  const jitter = Math.abs(hash) % 30;
  if (/ (gateway|worker|protocol|log|kafka|embedded-log|otel|cli)\/dist\//.test(name))
    return `hsl(${5 + (jitter % 10)}, 75%, ${60 + (jitter % 15)}%)`;
  if (name.includes(' node:') || !name.includes(' ')) return `hsl(50, 70%, ${60 + (jitter % 20)}%)`;
  return `hsl(${25 + (jitter % 15)}, 80%, ${58 + (jitter % 15)}%)`;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
