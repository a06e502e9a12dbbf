// The session-lane scenarios every general-purpose client runs, on both deployments: the same
// expectations for each, only the driver (how that client is told what to do) differs.
import { describe, expect, it, onTestFinished } from 'vitest';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';
import { useDeployment } from './deployments.js';
import { recorder, type ClientId, type Deployment, type Observation } from './matrix.js';

export interface CallOutcome {
  readonly progress: readonly number[];
  /** The result's first text, when there was a result. */
  readonly text?: string;
  readonly isError?: boolean;
  /** A protocol error or the client giving up (its message). */
  readonly error?: string;
}

export interface SessionDriver {
  /** The revisions (or modes, such as `legacy`) it can be pinned to; `undefined`: its own choice. */
  readonly revisions: readonly (string | undefined)[];
  handshake(
    url: string,
    revision: string | undefined,
  ): Promise<{ negotiated: string; tools: string[] }>;
  call(
    url: string,
    tool: string,
    args: Record<string, unknown>,
    onProgress?: (progress: number) => void,
    revision?: string,
  ): Promise<CallOutcome>;
  /** Calls confirm_deploy, accepting the elicitation it is asked. */
  input(url: string): Promise<{ asked: readonly string[]; outcome: CallOutcome }>;
  /**
   * What the client does about a cut connection when it is not a plain resume: what its default
   * does (`expect` checks it), and the revision (or mode) under which it resumes, checked too.
   */
  readonly cut?: Pick<Observation, 'outcome' | 'owner' | 'upstream' | 'instead'> & {
    readonly expect: (outcome: CallOutcome) => void;
    readonly seen: string;
    readonly resumesWith?: string;
  };
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const TOOLS = ['confirm_delete', 'confirm_deploy', 'count', 'export_report', 'flaky_count'];

export function sessionSuite(client: ClientId, driver: SessionDriver): void {
  describe.each<Deployment>(['dev', 'kafka'])(`${client} on %s`, (deployment) => {
    const current = useDeployment(deployment);
    const saw = recorder(client, deployment);

    it('handshake and discovery on every revision it can pin', async () => {
      const negotiated: string[] = [];
      for (const revision of driver.revisions) {
        const { negotiated: agreed, tools } = await driver.handshake(current().urls[0], revision);
        const pinned = revision !== undefined && /^\d{4}-\d\d-\d\d$/.test(revision);
        if (pinned) expect(agreed).toBe(revision);
        expect([...tools].sort()).toEqual(expect.arrayContaining(TOOLS));
        negotiated.push(pinned ? agreed : `${agreed} (${revision ?? 'default'})`);
      }
      saw('handshake', 'negotiated each revision, listed the tools', { revisions: negotiated });
    });

    it('a call with progress: every progress update and the exact result', async () => {
      const outcome = await driver.call(current().urls[0], 'count', { to: 8, delayMs: 0 });
      expect(outcome.error).toBeUndefined();
      expect(outcome.progress).toEqual(numbers(8));
      expect(outcome.text).toBe(numbers(8).join(','));
      saw('progress', 'every progress update in order, exact result');
    });

    /** count to 30, the connection cut at 10 and the proxy sent on to the other replica. */
    async function cutCall(revision?: string) {
      const proxy = await TcpProxy.start(Number(new URL(current().urls[0]).port));
      onTestFinished(() => proxy.close());
      let cut = false;
      const outcome = await driver.call(
        `http://127.0.0.1:${proxy.port}/mcp`,
        'count',
        { to: 30, delayMs: 30 },
        (progress) => {
          if (cut || progress !== 10) return;
          cut = true;
          proxy.target = Number(new URL(current().urls[1]).port);
          proxy.cut();
        },
        revision,
      );
      expect(cut).toBe(true);
      return outcome;
    }
    const exact = (outcome: CallOutcome) => {
      expect(outcome.error).toBeUndefined();
      expect(outcome.progress).toEqual(numbers(30));
      expect(outcome.text).toBe(numbers(30).join(','));
    };

    it('a connection cut mid-call, the client sent on to the other replica', async () => {
      if (driver.cut === undefined) {
        exact(await cutCall());
        return saw('cut', 'resumed with Last-Event-ID: every update once, exact result');
      }
      const { expect: check, seen, resumesWith, ...rest } = driver.cut;
      check(await cutCall());
      if (resumesWith !== undefined) exact(await cutCall(resumesWith));
      saw('cut', seen, rest);
    });

    it('a tool the runtime retries: the reset is absorbed, the result exact', async () => {
      const outcome = await driver.call(current().urls[0], 'flaky_count', {
        to: 6,
        delayMs: 20,
        failAt: 3,
      });
      expect(outcome.error).toBeUndefined();
      expect(outcome.text).toBe(numbers(6).join(','));
      const rising = outcome.progress.every((p, i) => i === 0 || p > outcome.progress[i - 1]!);
      expect(rising).toBe(true);
      saw('retry', 'result of the new generation; progress never went back');
    });

    it('input: the elicitation a tool asks is answered, the call completes', async () => {
      const { asked, outcome } = await driver.input(current().urls[0]);
      expect(asked).toEqual(['Deploy to staging?']);
      expect(outcome.text).toBe('deployed to staging');
      saw('input', 'asked once, answered, result');
    });

    it('errors: an unknown tool and bad arguments are answered as errors', async () => {
      const unknown = await driver.call(current().urls[0], 'no_such_tool', {});
      expect(unknown.error ?? (unknown.isError === true ? unknown.text : undefined)).toMatch(
        /no_such_tool/,
      );
      const bad = await driver.call(current().urls[0], 'count', { to: 'many' });
      expect(bad.error ?? (bad.isError === true ? bad.text : undefined)).toMatch(/to|invalid/i);
      const kind = (o: CallOutcome) => (o.error === undefined ? 'a tool error result' : 'an error');
      saw('errors', `unknown tool: ${kind(unknown)}; bad arguments: ${kind(bad)}`);
    });
  });
}
