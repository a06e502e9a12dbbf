import events from '@tidemark/examples/events';
import { defineEventType, defineToolModule } from '@tidemark/tools';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import * as z from 'zod';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';

// Whose event streams are whose (security review M1): a type is scoped per subject unless its
// author says it is shared, so what a tool emits under Alice's call only Alice reads; `authorize`
// narrows who reads at all; a source is told whose stream it reads.

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

/** A shared type only alice may read (its hook throws for anyone it does not know). */
const audit = defineEventType({
  name: 'audit',
  inputSchema: z.object({ team: z.string() }),
  payloadSchema: z.object({ n: z.number() }),
  scope: 'shared',
  authorize: ({ subject, arguments: args, delivery }) => {
    if (subject === 'alice') return args.team === 'billing' && delivery === 'poll';
    throw new Error(`who is ${subject}?`);
  },
  async *source() {},
});

/** A per-subject type read from an upstream: each subject's stream says whose it is. */
const inbox = defineEventType({
  name: 'inbox',
  inputSchema: z.object({}),
  payloadSchema: z.object({ owner: z.string() }),
  async *source({ subject, signal }) {
    yield { data: { owner: subject ?? 'nobody' }, position: '1' };
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  },
});

async function setup() {
  const stack = await embeddedStack({
    modules: [events, defineToolModule({ name: 'scoped', events: [audit, inbox], register() {} })],
    worker: { eventScanMs: 50 },
    bearerTokens: { [ALICE]: 'alice', [BOB]: 'bob' },
  });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!.url;
}

describe('event streams bound to their subject (security review M1)', () => {
  it('what a tool emits under alice’s call only alice reads: bob’s poll of the same arguments reads his own, empty stream', async () => {
    const url = await setup();
    const billing = { name: 'deployments', arguments: { service: 'alice-billing' } };
    const cursors = {
      alice: (await rpc(url, 'events/poll', billing, { token: ALICE })).body.result!['cursor'],
      bob: (await rpc(url, 'events/poll', billing, { token: BOB })).body.result!['cursor'],
    };
    const called = await rpc(
      url,
      'tools/call',
      {
        name: 'record_deployment',
        arguments: { service: 'alice-billing', version: 'v-secret-42' },
      },
      { tasks: false, token: ALICE },
    );
    expect(JSON.stringify(called.body.result)).toContain('recorded');
    const alice = await rpc(
      url,
      'events/poll',
      { ...billing, cursor: cursors.alice },
      { token: ALICE },
    );
    expect(alice.body.result).toMatchObject({
      events: [{ data: { version: 'v-secret-42', by: 'alice' } }],
    });
    const bob = await rpc(url, 'events/poll', { ...billing, cursor: cursors.bob }, { token: BOB });
    expect(bob.body.result).toMatchObject({ events: [] });
    // Nor can bob read alice's stream with her cursor: it names another stream.
    const stolen = await rpc(
      url,
      'events/poll',
      { ...billing, cursor: cursors.alice },
      { token: BOB },
    );
    expect(stolen.body.error?.code).toBe(-32602);
    expect(JSON.stringify(stolen.body)).not.toContain('v-secret-42');
  });

  it('authorize refuses before anything is read (-32003), and a hook that throws refuses too', async () => {
    const url = await setup();
    const billing = { name: 'audit', arguments: { team: 'billing' } };
    expect((await rpc(url, 'events/poll', billing, { token: ALICE })).body.result).toBeDefined();
    const other = await rpc(
      url,
      'events/poll',
      { ...billing, arguments: { team: 'hr' } },
      { token: ALICE },
    );
    expect(other.body.error).toMatchObject({
      code: -32003,
      message: 'not authorized to read event type audit with these arguments',
    });
    const bob = await rpc(url, 'events/poll', billing, { token: BOB });
    expect(bob.body.error?.code).toBe(-32003);
    expect(bob.body.error?.message).not.toContain('who is');
  });

  it('a per-subject source is told whose stream it reads', async () => {
    const url = await setup();
    const owners = async (token: string) => {
      let cursor: unknown = null;
      return vi.waitFor(
        async () => {
          const { body } = await rpc(
            url,
            'events/poll',
            { name: 'inbox', arguments: {}, cursor },
            { token },
          );
          const page = body.result as {
            events: Array<{ data: { owner: string } }>;
            cursor: string;
          };
          cursor = page.cursor;
          expect(page.events).toHaveLength(1);
          return page.events.map((event) => event.data.owner);
        },
        { timeout: 5_000, interval: 100 },
      );
    };
    expect(await owners(ALICE)).toEqual(['alice']);
    expect(await owners(BOB)).toEqual(['bob']);
  });
});
