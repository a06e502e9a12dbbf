import { defineToolModule, type Worker } from '@tidemark/worker';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import * as z from 'zod';
import { embeddedStack, type EmbeddedStackOptions } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// One subject cannot take the worker's slots from the others (issue #33): tasks run in slots of
// their own, a subject's calls past its share wait behind other subjects', and a subject's line
// of waiting requests is bounded. The tools hold until the test lets them go, so every assertion
// is ordered by events, not by a clock.

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-01234567890';

/** Tools that run until released (then every later one runs through): `started` says who got a slot. */
function holdingTools() {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const started: string[] = [];
  const module = defineToolModule({
    name: 'holding',
    register: (server) => {
      const hold = async ({ label }: { label: string }) => {
        started.push(label);
        await released;
        return { content: [{ type: 'text' as const, text: `done ${label}` }] };
      };
      server.registerTool('hold', { inputSchema: z.object({ label: z.string() }) }, hold);
      server.registerTool('hold_task', { inputSchema: z.object({ label: z.string() }) }, hold);
      server.registerTool('quick', {}, () => ({ content: [{ type: 'text', text: 'quick' }] }));
    },
    taskSupport: { hold_task: 'required' },
  });
  return {
    module,
    started,
    releaseAll: () => release(),
  };
}

async function setup(worker: NonNullable<EmbeddedStackOptions['worker']>) {
  const tools = holdingTools();
  const stack = await embeddedStack({
    partitions: 1,
    modules: [tools.module],
    bearerTokens: { [ALICE]: 'alice', [BOB]: 'bob' },
    worker,
  });
  onTestFinished(() => {
    tools.releaseAll();
    return stack.stop();
  });
  return { ...tools, stack, url: stack.gateways[0]!.url };
}

/** Waits until `ready` holds (every step of the worker is event-driven; this only polls it). */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const call = (url: string, token: string, name: string, label: string, tasks = false) =>
  rpc(url, 'tools/call', { name, arguments: { label } }, { token, tasks });

const textOf = (answer: Awaited<ReturnType<typeof rpc>>) =>
  (answer.body.result?.['content'] as Array<{ text: string }> | undefined)?.[0]?.text;

function slots(worker: Worker) {
  return worker.slotReport();
}

describe('fair slots', () => {
  it("tasks run in slots of their own: one subject's long tasks leave another's calls their slots", async () => {
    const { url, started, stack, releaseAll } = await setup({
      maxConcurrentCalls: 2,
      maxConcurrentTasks: 2,
      maxTasksPerSubject: 2,
    });
    const tasks = await Promise.all(
      [1, 2, 3, 4].map((i) => call(url, ALICE, 'hold_task', `task ${i}`, true)),
    );
    const ids = tasks.map((task) => String(task.body.result?.['taskId']));
    expect(ids.every((id) => id.length > 0)).toBe(true);
    // Two run; the other two are `working`, waiting for a task slot — holding no call slot.
    await until(() => started.length === 2 && slots(stack.worker).tasks.waiting === 2, 'tasks');
    expect(slots(stack.worker).calls.busy).toBe(0);
    // Bob's calls are answered while every task slot is held.
    expect(textOf(await call(url, BOB, 'quick', 'q'))).toBe('quick');
    releaseAll();
    for (const id of ids)
      expect(await pollTask([url], id, ['completed'], { token: ALICE })).toMatchObject({
        status: 'completed',
      });
    expect(started).toHaveLength(4);
  });

  it("a subject past its share waits behind the others: another subject's call starts first", async () => {
    const { url, started, stack, releaseAll } = await setup({ maxConcurrentCalls: 4 });
    // Alice's share is half the slots: two run, three wait in her line.
    const alice = [1, 2, 3, 4, 5].map((i) => call(url, ALICE, 'hold', `alice ${i}`));
    await until(
      () => started.length === 2 && slots(stack.worker).queued >= 1,
      'alice at her share',
    );
    const bob = call(url, BOB, 'hold', 'bob');
    await until(() => started.includes('bob'), "bob's call to start");
    // Bob started while alice still waited: her line did not stand in front of him.
    expect(started.filter((label) => label.startsWith('alice'))).toHaveLength(2);
    expect(slots(stack.worker).calls.largest).toEqual({ share: 'alice', busy: 2 });
    // Readiness says so (without naming her): she holds half the call slots, three wait.
    expect(stack.worker.slotNotes()).toEqual([
      'one subject holds 2 of 4 call slots (3 busy)',
      '3 requests wait for a slot',
    ]);
    // Her calls fill her share, not what else she asks: her tools are listed at once.
    const listed = await rpc(url, 'tools/list', {}, { token: ALICE, tasks: false });
    expect(listed.body.result?.['tools']).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'hold' })]),
    );
    releaseAll();
    const answers = await Promise.all([...alice, bob]);
    expect(answers.map(textOf).sort()).toEqual(
      ['alice 1', 'alice 2', 'alice 3', 'alice 4', 'alice 5', 'bob'].map((l) => `done ${l}`),
    );
    // In log order within her share.
    expect(started.filter((label) => label.startsWith('alice'))).toEqual(
      ['alice 1', 'alice 2', 'alice 3', 'alice 4', 'alice 5'].filter((l) => started.includes(l)),
    );
  });

  it("a subject's line is bounded: past it, its request is answered 'retry later' and nothing else is lost", async () => {
    const { url, started, stack, releaseAll } = await setup({
      maxConcurrentCalls: 2,
      maxQueuedCallsPerSubject: 2,
    });
    const running = call(url, ALICE, 'hold', 'running');
    await until(() => started.length === 1, 'the first call');
    const waiting = [1, 2].map((i) => call(url, ALICE, 'hold', `waiting ${i}`));
    await until(() => slots(stack.worker).queued === 2, 'two in her line');
    const refused = await call(url, ALICE, 'hold', 'one too many');
    expect(refused.body.error).toEqual({
      code: -32000,
      message: 'Too many requests of this subject waiting on this worker (limit 2); retry later',
    });
    // Bob is not in alice's line.
    const bob = call(url, BOB, 'hold', 'bob');
    await until(() => started.includes('bob'), "bob's call");
    releaseAll();
    const answers = await Promise.all([running, ...waiting, bob]);
    expect(answers.map(textOf)).toEqual([
      'done running',
      'done waiting 1',
      'done waiting 2',
      'done bob',
    ]);
    expect(started).not.toContain('one too many');
  });
});
