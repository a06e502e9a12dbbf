import { createGateway } from '@tidemark/gateway';
import { partitionForSession, type GroupPort } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

describe("a gateway that cannot join the gateways' group", () => {
  it('says so once and mints keys onto any partition: sessions still start and calls still run', async () => {
    const warnings: Array<{ message: string; fields: Readonly<Record<string, unknown>> }> = [];
    const refused: GroupPort = {
      joinGroup: () => Promise.reject(new Error('GROUP_AUTHORIZATION_FAILED')),
    };
    const stack = await embeddedStack({
      partitions: 4,
      gateway: {
        group: { groups: refused, name: 'tidemark-gateways' },
        onWarning: (message, fields) => warnings.push({ message, fields }),
      },
    });
    onTestFinished(() => stack.stop());
    const { gateway, url } = stack.gateways[0]!;
    const partitions = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const client = new RawMcpClient(url);
      await client.initialize();
      partitions.add(partitionForSession(client.session as never, 4));
    }
    expect(gateway.keyPartitions).toEqual([]);
    expect(partitions.size).toBeGreaterThan(1);
    const client = new RawMcpClient(url);
    await client.initialize();
    expect((await client.callCount(1, 3, 0)).messages.at(-1)).toHaveProperty('result');
    expect(warnings).toEqual([
      {
        message: expect.stringContaining("could not join the gateways' group") as string,
        fields: { group: 'tidemark-gateways', error: 'GROUP_AUTHORIZATION_FAILED' },
      },
    ]);
  });

  it('refuses a group without a name', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const { log, topics, keyring } = stack;
    await expect(
      createGateway({ log, topics, keyring, group: { groups: log, name: '' } }),
    ).rejects.toThrow(/group\.name/);
  });
});

it('partitions added after the gateway started are not minted onto: it routes by the count it started with', async () => {
  const grown: GroupPort = {
    joinGroup: (join) => {
      join.onAssigned([1, 5, 6]);
      return Promise.resolve({
        committed: () => Promise.resolve(undefined),
        commit: () => Promise.resolve(),
        leave: () => Promise.resolve(),
      } as never);
    },
  };
  const stack = await embeddedStack({
    partitions: 4,
    gateway: { group: { groups: grown, name: 'tidemark-gateways' } },
  });
  onTestFinished(() => stack.stop());
  const { gateway, url } = stack.gateways[0]!;
  await expect.poll(() => gateway.keyPartitions).toEqual([1]);
  for (let i = 0; i < 4; i++) {
    const client = new RawMcpClient(url);
    await client.initialize();
    expect(partitionForSession(client.session as never, 4)).toBe(1);
  }
});
