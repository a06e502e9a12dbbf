// The interop matrix: which clients the suite runs, what each is asked to do, and how a result is
// written down. Every test in test/interop records what it saw with `record`; `render.ts` turns
// the records into the interop matrix (docs/interop/index.md; `npm test` fails when it disagrees with them).
// A client's version is read from the one place that pins it, so an upgrade is one bump and a run.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Where the tests write what they saw; cleared by `npm test`'s prerequisites before a run. */
export const RESULTS_DIR = join(root, 'test-results', 'interop');

export const DEPLOYMENTS = {
  dev: '`tidemark dev` (one process, embedded log)',
  kafka: 'two gateway processes and worker processes on the real broker',
} as const;
export type Deployment = keyof typeof DEPLOYMENTS;

export const SCENARIOS = {
  handshake: 'handshake & discovery',
  progress: 'call with progress',
  cut: 'cut connection',
  retry: 'retried tool (reset)',
  input: 'elicitation / input',
  errors: 'errors',
  task: 'task: create → result',
  'task-input': 'task: input',
  'task-cancel': 'task: cancel',
  'task-handoff': 'task: host hands off, resumes',
  'task-kill': 'task: worker kill -9',
  events: 'events (webhook)',
} as const;
export type Scenario = keyof typeof SCENARIOS;

/** What a test saw. `works`: as a user expects. `limit`: works with a limit users will hit. */
export interface Observation {
  readonly client: ClientId;
  readonly scenario: Scenario;
  readonly deployment: Deployment;
  readonly outcome: 'works' | 'limit' | 'fails';
  /** What was seen, in words that do not change from run to run (no timings, no ids). */
  readonly seen: string;
  /** For handshake: the revisions it negotiated. */
  readonly revisions?: readonly string[];
  /** For `limit` and `fails`: whose it is, the upstream issue, what to do instead. */
  readonly owner?: 'client' | 'tidemark';
  readonly upstream?: string;
  readonly instead?: string;
}

const npmVersion = (name: string) =>
  (
    JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

const pinned = (file: string, pattern: RegExp) => {
  const match = pattern.exec(readFileSync(join(root, file), 'utf8'));
  if (match?.[1] === undefined) throw new Error(`interop: no version pin ${pattern} in ${file}`);
  return match[1];
};

/** The pins the Python clients install from (infra/test-prerequisites.mjs reads the same file). */
const PYTHON_REQUIREMENTS = 'test/interop/python/requirements.txt';

interface ClientEntry {
  readonly name: string;
  readonly package: string;
  readonly version: () => string;
  readonly language: string;
  /** The scenarios the suite runs it through, on every deployment unless `kafkaOnly`. */
  readonly scenarios: readonly Scenario[];
  readonly kafkaOnly?: readonly Scenario[];
  /** Scenarios it has no API for, and what to use instead (rendered as "—" with the reason). */
  readonly without?: Readonly<Partial<Record<Scenario, string>>>;
}

const SESSION_SCENARIOS = ['handshake', 'progress', 'cut', 'retry', 'input', 'errors'] as const;
const NO_TASKS = 'no Tasks API: use a task client (below) or `@tidemark/client`';
const TASKS_ONLY = {
  progress: 'a task client: a call is a task here',
  cut: 'polls: nothing streamed to cut',
  retry: 'a task client: see task rows',
} as const;

export const CLIENTS = {
  'ts-v2': {
    name: 'TypeScript SDK v2',
    package: '@modelcontextprotocol/client',
    version: () => npmVersion('@modelcontextprotocol/client'),
    language: 'TypeScript',
    scenarios: SESSION_SCENARIOS,
    without: { task: NO_TASKS },
  },
  'ts-v1': {
    name: 'TypeScript SDK v1',
    package: '@modelcontextprotocol/sdk',
    version: () => npmVersion('@modelcontextprotocol/sdk'),
    language: 'TypeScript',
    scenarios: SESSION_SCENARIOS,
    without: { task: NO_TASKS },
  },
  python: {
    name: 'Python SDK',
    package: 'mcp (PyPI)',
    version: () => pinned(PYTHON_REQUIREMENTS, /^mcp==(\S+)$/m),
    language: 'Python',
    scenarios: SESSION_SCENARIOS,
    without: { task: NO_TASKS },
  },
  go: {
    name: 'Go SDK',
    package: 'github.com/modelcontextprotocol/go-sdk',
    version: () => pinned('test/interop/go-client/go.mod', /go-sdk v(\S+)/),
    language: 'Go',
    scenarios: SESSION_SCENARIOS,
    without: { task: NO_TASKS },
  },
  rmcp: {
    name: 'Rust SDK (Tasks)',
    package: 'rmcp (crates.io)',
    version: () => pinned('test/interop/rmcp-tasks/Cargo.toml', /rmcp = \{ version = "=?([^"]+)"/),
    language: 'Rust',
    scenarios: ['handshake', 'task', 'task-input', 'task-cancel', 'task-handoff'],
    kafkaOnly: ['task-kill'],
    without: TASKS_ONLY,
  },
  'ext-tasks': {
    name: 'TypeScript Tasks client',
    package: '@modelcontextprotocol/ext-tasks',
    version: () => npmVersion('@modelcontextprotocol/ext-tasks'),
    language: 'TypeScript',
    scenarios: ['handshake', 'task', 'task-input', 'task-cancel', 'task-handoff'],
    kafkaOnly: ['task-kill'],
    without: TASKS_ONLY,
  },
  fastmcp: {
    name: 'FastMCP 4 client (Tasks)',
    package: 'fastmcp-tasks (PyPI)',
    version: () => pinned(PYTHON_REQUIREMENTS, /^fastmcp-tasks==(\S+)$/m),
    language: 'Python',
    scenarios: ['handshake', 'task', 'task-input', 'task-cancel', 'task-handoff'],
    kafkaOnly: ['task-kill'],
    without: TASKS_ONLY,
  },
  'ai-sdk': {
    name: 'Vercel AI SDK MCP client (Events)',
    package: '@ai-sdk/mcp',
    version: () => npmVersion('@ai-sdk/mcp'),
    language: 'TypeScript',
    scenarios: ['handshake', 'events'],
  },
  inspector: {
    name: 'MCP Inspector CLI',
    package: '@modelcontextprotocol/inspector',
    version: () =>
      pinned(
        'test/interop/inspector/package.json',
        /"@modelcontextprotocol\/inspector": "([^"]+)"/,
      ),
    language: 'CLI',
    scenarios: ['handshake', 'progress', 'errors'],
    without: {
      cut: 'one request per run: nothing to resume',
      retry: 'prints the final result only',
      input: 'the CLI answers no elicitation (the web UI does)',
    },
  },
} as const satisfies Record<string, ClientEntry>;
export type ClientId = keyof typeof CLIENTS;

/** The cells a full run must have recorded: every client × its scenarios × deployments. */
export function expectedCells(): Array<{
  client: ClientId;
  scenario: Scenario;
  deployment: Deployment;
}> {
  return Object.entries(CLIENTS).flatMap(([client, entry]) => {
    const e = entry as ClientEntry;
    const both = e.scenarios.flatMap((scenario) =>
      (['dev', 'kafka'] as const).map((deployment) => ({ scenario, deployment })),
    );
    const kafka = (e.kafkaOnly ?? []).map((scenario) => ({
      scenario,
      deployment: 'kafka' as const,
    }));
    return [...both, ...kafka].map((cell) => ({ client: client as ClientId, ...cell }));
  });
}

export const clientEntry = (id: ClientId): ClientEntry => CLIENTS[id];

/** Writes what a test saw, for the matrix. Call it after the test's assertions passed. */
export function record(observation: Observation): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const { client, scenario, deployment } = observation;
  writeFileSync(
    join(RESULTS_DIR, `${client}.${scenario}.${deployment}.json`),
    `${JSON.stringify(observation, null, 2)}\n`,
  );
}

/** `record` for one client on one deployment: `works` unless `more` says otherwise. */
export function recorder(client: ClientId, deployment: Deployment) {
  return (scenario: Scenario, seen: string, more: Partial<Observation> = {}): void =>
    record({ client, scenario, deployment, outcome: 'works', seen, ...more });
}

// The servers a worker hosts (issue #60), written down the same way: which servers, what each
// was put through on two gateway and two worker processes over Kafka, and what was seen.

export const HOSTED_SCENARIOS = {
  listed: 'listed & called',
  progress: 'progress',
  log: 'log messages',
  input: 'elicitation',
  'gateway-kill': 'gateway kill -9 → resumed',
  'worker-kill': 'worker kill -9 → reset',
  'child-kill': 'its process killed → run again',
  cancel: 'cancelled',
} as const;
export type HostedScenario = keyof typeof HOSTED_SCENARIOS;

/** What the hosted-servers test saw of one server in one scenario (on Kafka). */
export interface HostedObservation {
  readonly server: ServerId;
  readonly scenario: HostedScenario;
  readonly outcome: 'works' | 'limit' | 'fails';
  readonly seen: string;
  /** For `limit` and `fails`: whose it is (`server`: the hosted server's own). */
  readonly owner?: 'server' | 'tidemark';
}

interface ServerEntry {
  readonly name: string;
  readonly package: string;
  readonly version: () => string;
  readonly language: string;
  readonly scenarios: readonly HostedScenario[];
  /** Scenarios its tools cannot show, and why (rendered as "—" with the reason). */
  readonly without?: Readonly<Partial<Record<HostedScenario, string>>>;
}

const ANSWERS_AT_ONCE = 'its tools answer at once: nothing runs long enough to cut, kill or cancel';
const LONG_SCENARIOS = ['gateway-kill', 'worker-kill', 'child-kill', 'cancel'] as const;

export const SERVERS = {
  ts: {
    name: 'TypeScript reference server',
    package: '@modelcontextprotocol/server-everything',
    version: () => npmVersion('@modelcontextprotocol/server-everything'),
    language: 'TypeScript',
    scenarios: ['listed', 'progress', 'input', ...LONG_SCENARIOS],
    without: { log: 'logs nothing during a call (only on a timer it is asked to start)' },
  },
  go: {
    name: 'Go SDK example server',
    package: 'go-sdk examples/server/everything',
    version: () => pinned('test/interop/go-client/go.mod', /go-sdk v(\S+)/),
    language: 'Go',
    scenarios: ['listed', 'log', 'input'],
    without: {
      progress: 'no tool sends progress',
      ...Object.fromEntries(LONG_SCENARIOS.map((s) => [s, ANSWERS_AT_ONCE])),
    },
  },
  time: {
    name: 'Python time server (the Python SDK’s MCPServer)',
    package: 'mcp-server-time (PyPI)',
    version: () => pinned(PYTHON_REQUIREMENTS, /^mcp-server-time==(\S+)$/m),
    language: 'Python',
    scenarios: ['listed'],
    without: {
      progress: 'no tool sends progress',
      log: 'logs nothing to its client',
      input: 'asks nothing',
      ...Object.fromEntries(LONG_SCENARIOS.map((s) => [s, ANSWERS_AT_ONCE])),
    },
  },
  fast: {
    name: 'FastMCP 4 proxy server (`fastmcp run`) before the reference server',
    package: 'fastmcp-slim (PyPI)',
    version: () => pinned(PYTHON_REQUIREMENTS, /^fastmcp-slim\[client\]==(\S+)$/m),
    language: 'Python',
    scenarios: ['listed', 'progress', 'input', ...LONG_SCENARIOS],
    without: { log: 'the server it proxies logs nothing during a call' },
  },
} as const satisfies Record<string, ServerEntry>;
export type ServerId = keyof typeof SERVERS;

export const serverEntry = (id: ServerId): ServerEntry => SERVERS[id];

/** The hosted cells a full run must have recorded: every server × its scenarios. */
export function expectedHostedCells(): Array<{ server: ServerId; scenario: HostedScenario }> {
  return (Object.keys(SERVERS) as ServerId[]).flatMap((server) =>
    serverEntry(server).scenarios.map((scenario) => ({ server, scenario })),
  );
}

/** Writes what the hosted-servers test saw, for the matrix's table. After its assertions passed. */
export function recordHosted(observation: HostedObservation): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const { server, scenario } = observation;
  writeFileSync(
    join(RESULTS_DIR, `hosted.${server}.${scenario}.json`),
    `${JSON.stringify(observation, null, 2)}\n`,
  );
}
