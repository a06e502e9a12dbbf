import { createKeyring, keyringFromSecrets } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';

// Rotating the event-id secret while clients hold ids mid-stream (issue #33): a replica that
// signs with the new secret and keeps the old one as previous resumes a stream whose ids the old
// secret signed — exactly, not reset — and a replica that knows only the new one refuses them.

const OLD = new Uint8Array(32).fill(3);
const NEW = new Uint8Array(32).fill(4);

describe('rotating the event-id secret', () => {
  it('ids the old secret signed resume on a replica that rotated; its own ids are signed by the new one', async () => {
    const rotated = keyringFromSecrets(NEW, [OLD]);
    const keyrings = [keyringFromSecrets(OLD), rotated, keyringFromSecrets(NEW)];
    const stack = await embeddedStack({
      partitions: 1,
      replicas: 3,
      gatewayKeyring: (replica) => keyrings[replica]!,
      // The workers take the seals of either secret.
      worker: { keyring: rotated },
    });
    onTestFinished(() => stack.stop());
    const [before, after, newOnly] = stack.gateways.map((g) => g.url);
    const client = new RawMcpClient(before!);
    await client.initialize();
    // Three progress events read on the replica that has not rotated, then the stream drops.
    const { ids } = await client.callCount(1, 6, 100, 3);
    const last = ids.at(-1)!;
    // The replica that knows only the new secret cannot verify it: an explicit 400.
    const refused = await new RawMcpClient(newOnly!, client.session).resume(last);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { data: { reason: 'unknown-key' } } });
    // The rotated replica resumes it exactly: the events after it, no reset.
    const resumed = await new RawMcpClient(after!, client.session).resume(last);
    expect(resumed.status).toBe(200);
    const messages: Array<Record<string, unknown>> = [];
    const newIds: string[] = [];
    await readSse(resumed, (event) => {
      if (event.id !== undefined && event.data !== '') newIds.push(event.id);
      if (event.data === '') return;
      const message = JSON.parse(event.data) as Record<string, unknown>;
      messages.push(message);
      if ('result' in message || 'error' in message) return false;
    });
    expect(messages.some((m) => m['method'] === 'notifications/tidemark/reset')).toBe(false);
    const progress = messages
      .filter((m) => m['method'] === 'notifications/progress')
      .map((m) => (m['params'] as { progress: number }).progress);
    expect(progress).toEqual([4, 5, 6]);
    expect(messages.at(-1)).toMatchObject({ id: 1, result: {} });
    // Ids it mints now verify on a replica with the new secret alone.
    const onNew = await new RawMcpClient(newOnly!, client.session).resume(newIds[0]!);
    expect(onNew.status).toBe(200);
    await onNew.body?.cancel();
  });

  it('ids from before key ids (key 1) verify until the first rotation', async () => {
    const legacy = createKeyring({ current: { id: 1, secret: OLD } });
    const stack = await embeddedStack({
      partitions: 1,
      replicas: 2,
      gatewayKeyring: (replica) => (replica === 0 ? legacy : keyringFromSecrets(OLD)),
      worker: { keyring: keyringFromSecrets(OLD) },
    });
    onTestFinished(() => stack.stop());
    const [old, upgraded] = stack.gateways.map((g) => g.url);
    const client = new RawMcpClient(old!);
    await client.initialize();
    const { ids } = await client.callCount(1, 4, 50, 2);
    const resumed = await new RawMcpClient(upgraded!, client.session).resume(ids.at(-1)!);
    expect(resumed.status).toBe(200);
    await resumed.body?.cancel();
  });
});
