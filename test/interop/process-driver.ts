// A session driver for a client in another language: one run of its program per scenario, read
// through the JSON lines it prints ({"negotiated"}, {"tools"}, {"progress"}, {"asked"}, then
// {"result", "isError"} or {"error"}).
import { onTestFinished } from 'vitest';
import { startProcess } from '../support/processes.js';
import type { CallOutcome, SessionDriver } from './session-suite.js';

type Event = Record<string, unknown>;
type Run = (
  args: readonly string[],
  onEvent?: (e: Event) => void,
  done?: (e: Event) => boolean,
) => Promise<Event[]>;

const finished = (e: Event) => 'result' in e || 'error' in e;

function runner(command: () => string, prefix: readonly string[]): Run {
  return async (args, onEvent, done = finished) => {
    const child = startProcess(onTestFinished, command(), [...prefix, ...args], {
      ...(onEvent === undefined ? {} : { onEvent }),
    });
    await child
      .waitFor((e) => done(e) || 'error' in e, 60_000)
      .catch((error: Error) => {
        throw new Error(`${error.message}\nstderr: ${child.stderr.join('').slice(-2000)}`);
      });
    return child.events;
  };
}

function outcome(events: ReadonlyArray<Record<string, unknown>>): CallOutcome {
  const progress = events.flatMap((e) =>
    typeof e['progress'] === 'number' ? [e['progress']] : [],
  );
  const last = events.find((e) => 'result' in e || 'error' in e)!;
  return 'error' in last
    ? { progress, error: String(last['error']) }
    : { progress, text: last['result'] as string, isError: last['isError'] === true };
}

export function processDriver(
  command: () => string,
  prefix: readonly string[],
  options: Pick<SessionDriver, 'revisions' | 'cut'>,
): SessionDriver {
  const run = runner(command, prefix);
  return {
    ...options,
    handshake: async (url, revision) => {
      const events = await run(
        ['handshake', url, revision ?? 'default'],
        undefined,
        (e) => 'tools' in e,
      );
      const negotiated = events.find((e) => 'negotiated' in e)?.['negotiated'];
      const tools = events.find((e) => 'tools' in e)?.['tools'];
      if (typeof negotiated !== 'string' || !Array.isArray(tools))
        throw new Error(`handshake: ${JSON.stringify(events)}`);
      return { negotiated, tools: tools as string[] };
    },
    call: async (url, tool, args, onProgress, revision) =>
      outcome(
        await run(['call', url, tool, JSON.stringify(args), revision ?? 'default'], (e) => {
          if (typeof e['progress'] === 'number') onProgress?.(e['progress']);
        }),
      ),
    input: async (url) => {
      const events = await run(['input', url]);
      const asked = events.flatMap((e) => (typeof e['asked'] === 'string' ? [e['asked']] : []));
      return { asked, outcome: outcome(events) };
    },
  };
}
