import { tokenFileAuthenticator } from '@tidemark/gateway';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';
import { describeIdempotency } from '@tidemark/fixtures/idempotency-suite';

describeIdempotency('embedded', async () => {
  const api = new PretendPayments(undefined);
  const stack = await embeddedStack({ replicas: 2, modules: [paymentsModule(api)] });
  onTestFinished(() => stack.stop());
  return { urls: [stack.gateways[0]!.url, stack.gateways[1]!.url], api };
});

describe('idempotency keys and subjects', () => {
  it('a key is scoped to the authenticated subject: the same key of two subjects is two calls', async () => {
    const api = new PretendPayments(undefined);
    const stack = await embeddedStack({
      modules: [paymentsModule(api)],
      gateway: {
        authenticate: tokenFileAuthenticator(
          'alice-token-0123456789 alice\nbobby-token-0123456789 bob\n',
        ),
      },
    });
    onTestFinished(() => stack.stop());
    const key = randomUUID();
    const call = (token: string) =>
      rpc(
        stack.gateways[0]!.url,
        'tools/call',
        { name: 'pay', arguments: { to: 'a@b.c', amountCents: 1 } },
        {
          tasks: false,
          token,
          headers: { 'Idempotency-Key': key },
        },
      );
    const alice = await call('alice-token-0123456789');
    const bob = await call('bobby-token-0123456789');
    expect(alice.body.result).toBeDefined();
    expect(bob.body.result).not.toEqual(alice.body.result);
    expect(api.entries().filter((e) => e.kind === 'charge')).toHaveLength(2);
    expect((await call('alice-token-0123456789')).body.result).toEqual(alice.body.result);
  });
});
