// The Tasks scenarios every task client runs (the Tasks extension on 2026-07-28), on both
// deployments; a worker killed -9 mid-task on the cluster only (dev has no worker process).
import { describe, expect, it } from 'vitest';
import { useDeployment, type InteropTarget } from './deployments.js';
import { recorder, type ClientId, type Deployment, type Observation } from './matrix.js';

export interface TaskRun {
  readonly created: string;
  readonly asked: readonly string[];
  readonly result: string | null;
  readonly status: string;
  /** The methods the client sent, when the driver can see them. */
  readonly methods?: readonly string[];
}

export interface TaskDriver {
  handshake(url: string): Promise<{ negotiated: string; tasks: boolean }>;
  /** count to 5 (`task`) or confirm_deploy accepting its elicitation (`input`), as a task. */
  run(url: string, kind: 'task' | 'input'): Promise<TaskRun>;
  /** A long count as a task, cancelled. */
  cancel(url: string): Promise<TaskRun>;
  /** A long count as a task, left running: what the client keeps to resume it (id or reference). */
  start(url: string): Promise<string>;
  /** Drives a task this client did not start to its result. */
  resume(url: string, taskId: string): Promise<TaskRun>;
  /**
   * Hands a task off the way this client's API says (when that is not plain start/resume) and
   * checks what becomes of it; answers what to record.
   */
  handoff?(
    from: string,
    to: string,
  ): Promise<Pick<Observation, 'outcome' | 'seen'> & Partial<Observation>>;
  /** When the client only polls (the driver's `run` reports the methods it sent). */
  readonly pollsOnly?: Pick<Observation, 'instead'> & { seen: string };
  /** When the client asks the same input request more than once (a limit, with its reason). */
  readonly repeatsInput?: Pick<Observation, 'owner' | 'upstream' | 'instead'> & { seen: string };
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(',');

export function taskSuite(client: ClientId, driver: TaskDriver): void {
  describe.each<Deployment>(['dev', 'kafka'])(`${client} on %s`, (deployment) => {
    const current = useDeployment(deployment);
    const saw = recorder(client, deployment);

    it('discovers the Tasks extension on 2026-07-28', async () => {
      const { negotiated, tasks } = await driver.handshake(current().urls[0]);
      expect(negotiated).toBe('2026-07-28');
      expect(tasks).toBe(true);
      saw('handshake', 'server/discover: the Tasks extension found', { revisions: [negotiated] });
    });

    it('a task: created working, driven to the exact result', async () => {
      const run = await driver.run(current().urls[0], 'task');
      expect(run).toMatchObject({ created: 'working', result: numbers(5), status: 'completed' });
      if (driver.pollsOnly === undefined)
        return saw('task', 'created (working), driven to completed, exact result');
      expect(run.methods).toContain('tasks/get');
      expect(run.methods).not.toContain('subscriptions/listen');
      const { seen, ...rest } = driver.pollsOnly;
      saw('task', seen, { outcome: 'limit', ...rest });
    });

    it('a task that asks for input: the client answers, the task completes', async () => {
      const run = await driver.run(current().urls[0], 'input');
      expect(run).toMatchObject({ result: 'deployed to staging', status: 'completed' });
      if (driver.repeatsInput === undefined) {
        expect(run.asked).toEqual(['Deploy to staging?']);
        return saw('task-input', 'asked once, answered (tasks/update), completed');
      }
      // Asked once or, when it polls again before the worker took the answer, twice: never more.
      expect(run.asked.length).toBeGreaterThanOrEqual(1);
      expect(run.asked.length).toBeLessThanOrEqual(2);
      expect(new Set(run.asked)).toEqual(new Set(['Deploy to staging?']));
      const { seen, ...rest } = driver.repeatsInput;
      saw('task-input', seen, { outcome: 'limit', ...rest });
    });

    it('a task cancelled while it runs ends cancelled', async () => {
      const run = await driver.cancel(current().urls[0]);
      expect(run).toMatchObject({ created: 'working', status: 'cancelled' });
      saw('task-cancel', 'tasks/cancel: cancelled');
    });

    handoffTests(client, deployment, current, driver);
  });
}

/** The two scenarios that hand a task from one process to another: a host's handoff, a kill -9. */
export function handoffTests(
  client: ClientId,
  deployment: Deployment,
  current: () => InteropTarget,
  driver: Pick<TaskDriver, 'start' | 'resume' | 'handoff'>,
): void {
  const saw = recorder(client, deployment);

  it('a host that hands its task off and stops: another session resumes it on the other endpoint', async () => {
    const [from, to] = current().urls;
    if (driver.handoff !== undefined) {
      const { seen, ...rest } = await driver.handoff(from, to);
      return saw('task-handoff', seen, rest);
    }
    const kept = await driver.start(from);
    const run = await driver.resume(to, kept);
    expect(run).toMatchObject({ result: numbers(30), status: 'completed' });
    saw(
      'task-handoff',
      'resumed by what it kept, in a new session on the other endpoint: exact result',
    );
  });

  // dev has no worker process of its own to kill: the scenario exists on the cluster only.
  if (deployment === 'kafka')
    it('a task whose worker is killed -9 completes on the next worker, followed from the other gateway', async () => {
      const taskId = await driver.start(current().urls[0]);
      // Killed once the worker runs it (the task counts for about 3 s): mid-task, never before.
      // What a client keeps holds the task's id (a reference: the id among other fields).
      const id = /p[0-9a-z]{3}[A-Za-z0-9_-]{22}/.exec(taskId)?.[0];
      if (id === undefined) throw new Error(`no task id in what the client kept: ${taskId}`);
      await current().replaceWorker(id);
      const run = await driver.resume(current().urls[1], taskId);
      expect(run).toMatchObject({ result: numbers(30), status: 'completed' });
      saw(
        'task-kill',
        'the task ran again on the next worker; resumed from what the client kept, through the other gateway: exact result',
      );
    }, 90_000);
}
