import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  FileTaskStore,
  increasingProgress,
  MemoryTaskStore,
  onReset,
  TaskCancelledError,
  TaskClient,
  TaskFailedError,
  type TaskView,
} from '@tidemark/client';
import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack, type EmbeddedStackOptions } from '@tidemark/fixtures/embedded-stack';

async function setup(options: EmbeddedStackOptions = {}) {
  const stack = await embeddedStack({ replicas: 2, modules: [counting, interactive], ...options });
  onTestFinished(() => stack.stop());
  return stack.gateways.map((g) => g.url);
}

/** A TaskClient whose user gives `answer` to every input request; the keys it was asked. */
function answeringClient(url: string, answer: Record<string, unknown>) {
  const asked: string[][] = [];
  const client = new TaskClient({
    url,
    answerInput: (requests) => {
      asked.push(Object.keys(requests));
      return Promise.resolve(Object.fromEntries(Object.keys(requests).map((key) => [key, answer])));
    },
  });
  return { client, asked };
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('@tidemark/client: a task awaited as a result', () => {
  it('callTool waits for the task and resolves with the exact result; the store is empty after', async () => {
    const [url] = await setup();
    const store = new MemoryTaskStore();
    const statuses: string[] = [];
    const client = new TaskClient({
      url: url!,
      store,
      onStatus: (task) => void statuses.push(task.status),
    });
    const result = await client.callTool('count', { to: 8, delayMs: 20 });
    expect(result.content).toEqual([{ type: 'text', text: numbers(8).join(',') }]);
    expect(statuses[0]).toBe('working');
    expect(statuses.at(-1)).toBe('completed');
    expect(await store.list()).toEqual([]);
  });

  it('answers input requests through tasks/update, once per key', async () => {
    const [url] = await setup();
    const { client, asked } = answeringClient(url!, {
      action: 'accept',
      content: { confirm: true },
    });
    const result = await client.callTool('confirm_deploy', { env: 'staging' });
    expect(result.content).toEqual([{ type: 'text', text: 'deployed to staging' }]);
    expect(asked).toEqual([['1.1.confirm']]);
  });

  it('a task whose user declines completes with the tool’s answer after one question', async () => {
    const [url] = await setup();
    const { client, asked } = answeringClient(url!, { action: 'decline' });
    const result = await client.callTool('confirm_deploy', { env: 'prod' });
    expect(result.content).toEqual([{ type: 'text', text: 'not deployed to prod: declined' }]);
    expect(asked).toEqual([['1.1.confirm']]);
  });

  it('without answerInput the client does not declare elicitation: a tool that must ask fails its task with -32021', async () => {
    const [url] = await setup();
    const client = new TaskClient({ url: url! });
    const failure = await client
      .callTool('confirm_deploy', { env: 'prod' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TaskFailedError);
    expect(failure).toMatchObject({ code: -32021 });
  });

  it('a host that restarts follows its tasks again from a FileTaskStore', async () => {
    const [a, b] = await setup();
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-tasks-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'tasks.json');
    const stop = new AbortController();
    let seen: TaskView | undefined;
    const first = new TaskClient({
      url: a!,
      store: new FileTaskStore(path),
      onStatus: (task) => {
        seen = task;
        stop.abort(); // the host goes away while the task runs
      },
    });
    await expect(
      first.callTool('count', { to: 6, delayMs: 50 }, { signal: stop.signal }),
    ).rejects.toThrow();
    const stored = JSON.parse(readFileSync(path, 'utf8')) as Array<{ taskId: string }>;
    expect(stored.map((t) => t.taskId)).toEqual([seen!.taskId]);
    // The host comes back — through the other replica.
    const again = new TaskClient({ url: b!, store: new FileTaskStore(path) });
    const [outcome] = await again.resumePending();
    expect(outcome).toMatchObject({
      status: 'fulfilled',
      value: { content: [{ type: 'text', text: numbers(6).join(',') }] },
    });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual([]);
  });

  it('an answer cut off mid-body (its gateway died sending it) is asked again', async () => {
    const [url] = await setup();
    const { fetch, methods } = recordingFetch(
      (response, nth) => (nth === 1 ? cutAfterFirstChunk(response) : response),
      'tasks/get',
    );
    const client = new TaskClient({ url: url!, fetch, minPollIntervalMs: 20 });
    const result = await client.callTool('count', { to: 3, delayMs: 20 });
    expect(result.content).toEqual([{ type: 'text', text: numbers(3).join(',') }]);
    expect(methods.filter((m) => m === 'tasks/get').length).toBeGreaterThanOrEqual(2);
  });

  it('a tools/call whose answer is cut off is asked again with the same idempotency key: the tool runs once', async () => {
    const api = new PretendPayments(undefined);
    const [url] = await setup({ modules: [paymentsModule(api)] });
    const keys: Array<string | null> = [];
    let calls = 0;
    const fetchOnce: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (headers.get('mcp-method') !== 'tools/call') return fetch(input, init);
      keys.push(headers.get('idempotency-key'));
      const response = await fetch(input, init);
      return ++calls === 1 ? cutAfterFirstChunk(response) : response;
    };
    const client = new TaskClient({ url: url!, fetch: fetchOnce, minPollIntervalMs: 20 });
    const result = await client.callTool('pay', { to: 'ada@example.com', amountCents: 7 });
    expect(result.structuredContent).toMatchObject({ chargeId: api.entries()[0]!.id });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(api.entries().filter((e) => e.kind === 'charge')).toHaveLength(1);
    // A key of the host's own: the same call again (a restarted host) is the same call.
    const own = await client.callTool(
      'pay',
      { to: 'bo@example.com', amountCents: 8 },
      {
        idempotencyKey: 'order-42',
      },
    );
    const again = await client.callTool(
      'pay',
      { to: 'bo@example.com', amountCents: 8 },
      {
        idempotencyKey: 'order-42',
      },
    );
    expect(again).toEqual(own);
    expect(api.entries().filter((e) => e.kind === 'charge')).toHaveLength(2);
  });

  it('a cancelled task is a TaskCancelledError; an expired one a TaskFailedError', async () => {
    const [url] = await setup({ worker: { taskTtlMs: 300 } });
    const client = new TaskClient({
      url: url!,
      onStatus: (task) => void (task.status === 'working' && client.cancel(task.taskId)),
    });
    await expect(client.callTool('count', { to: 10_000, delayMs: 20 })).rejects.toBeInstanceOf(
      TaskCancelledError,
    );
    const patient = new TaskClient({ url: url! });
    const failure = await patient
      .callTool('count', { to: 10_000, delayMs: 20 })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TaskFailedError);
    expect((failure as TaskFailedError).message).toMatch(/expired/);
  });
});

/** A fetch that notes each request's `Mcp-Method`, and may change the answers to one method. */
function recordingFetch(
  change?: (response: Response, nth: number) => Response,
  changed = 'subscriptions/listen',
): { fetch: typeof fetch; methods: string[] } {
  const methods: string[] = [];
  let seen = 0;
  const recording: typeof fetch = async (input, init) => {
    const method = new Headers(init?.headers).get('mcp-method') ?? '?';
    methods.push(method);
    const response = await fetch(input, init);
    return method === changed && change ? change(response, ++seen) : response;
  };
  return { fetch: recording, methods };
}

/** The response with its body cut after its first chunk (a stream that drops mid-way). */
function cutAfterFirstChunk(response: Response): Response {
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body!.getReader();
  let chunks = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (chunks++ === 1) {
        await reader.cancel();
        controller.error(new TypeError('terminated'));
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

describe("@tidemark/client: follow: 'listen'", () => {
  it('is told of each change on one subscriptions/listen stream, never asking tasks/get', async () => {
    const [url] = await setup();
    const { fetch, methods } = recordingFetch();
    const statuses: string[] = [];
    const client = new TaskClient({
      url: url!,
      follow: 'listen',
      fetch,
      onStatus: (task) => void statuses.push(task.status),
      answerInput: (requests) =>
        Promise.resolve(
          Object.fromEntries(
            Object.keys(requests).map((key) => [
              key,
              { action: 'accept', content: { confirm: true } },
            ]),
          ),
        ),
    });
    const result = await client.callTool('count', { to: 8, delayMs: 20 });
    expect(result.content).toEqual([{ type: 'text', text: numbers(8).join(',') }]);
    expect(methods).toEqual(['tools/call', 'subscriptions/listen']);
    expect(statuses.at(-1)).toBe('completed');
    // Input asked mid-task arrives on the stream too and is answered through tasks/update.
    methods.length = 0;
    const deployed = await client.callTool('confirm_deploy', { env: 'staging' });
    expect(deployed.content).toEqual([{ type: 'text', text: 'deployed to staging' }]);
    expect(methods).toEqual(['tools/call', 'subscriptions/listen', 'tasks/update']);
  });

  it('a listen that drops is followed by one tasks/get and a new listen; the result is exact', async () => {
    const [url] = await setup();
    const { fetch, methods } = recordingFetch((response, nth) =>
      nth === 1 ? cutAfterFirstChunk(response) : response,
    );
    const client = new TaskClient({ url: url!, follow: 'listen', fetch, minPollIntervalMs: 20 });
    // Long enough to outlast the cut, the pause of one poll interval (1 s) and the tasks/get.
    const result = await client.callTool('count', { to: 80, delayMs: 25 });
    expect(result.content).toEqual([{ type: 'text', text: numbers(80).join(',') }]);
    expect(methods.slice(0, 4)).toEqual([
      'tools/call',
      'subscriptions/listen',
      'tasks/get',
      'subscriptions/listen',
    ]);
  });

  it('a server that answers the listen without a stream is polled instead', async () => {
    const [url] = await setup();
    const { fetch, methods } = recordingFetch(
      () =>
        new Response(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            error: { code: -32601, message: 'Method not found' },
          }),
          { headers: { 'content-type': 'application/json' } },
        ),
    );
    const client = new TaskClient({ url: url!, follow: 'listen', fetch, minPollIntervalMs: 20 });
    const result = await client.callTool('count', { to: 4, delayMs: 30 });
    expect(result.content).toEqual([{ type: 'text', text: numbers(4).join(',') }]);
    expect(methods.slice(0, 3)).toEqual(['tools/call', 'subscriptions/listen', 'tasks/get']);
    expect(methods.filter((m) => m === 'subscriptions/listen')).toHaveLength(1);
  });

  it('refuses an unknown follow mode', () => {
    expect(
      () => new TaskClient({ url: 'http://127.0.0.1:1/mcp', follow: 'push' as 'poll' }),
    ).toThrow(/follow must be 'poll' or 'listen'/);
  });
});

describe('@tidemark/client on the session lane, with the official SDK client', () => {
  it('onReset hears each reset; increasingProgress hands the application only increasing progress', async () => {
    const [url] = await setup();
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url!)));
    onTestFinished(() => client.close());
    const resets: string[] = [];
    onReset(client, (reset) => void resets.push(reset.reason));
    const progress: number[] = [];
    const result = await client.callTool(
      { name: 'flaky_count', arguments: { to: 5, delayMs: 0, failAt: 3, failAttempts: 2 } },
      { onprogress: increasingProgress((p) => void progress.push(p.progress)) },
    );
    expect(resets).toEqual(['generation-superseded', 'generation-superseded']);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(result.content).toEqual([{ type: 'text', text: '1,2,3,4,5' }]);
  });
});
