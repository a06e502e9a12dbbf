import { Admin } from '@platformatic/kafka';
import { ErrorCodes, TOPIC_ROLES } from '@tidemark/protocol';
import { uniqueTopicName } from '@tidemark/kafka-fixtures';
import { describe, expect, inject, it, type TestContext } from 'vitest';
import { checkTopics, createTopicsProbe, planTopics, provisionTopics } from '../src/index.js';

const brokers = inject('kafkaBrokers');

function cleanupPrefix(ctx: TestContext, prefix: string) {
  ctx.onTestFinished(async () => {
    const admin = new Admin({ clientId: 'tidemark-test-cleanup', bootstrapBrokers: brokers });
    try {
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      if (mine.length > 0) await admin.deleteTopics({ topics: mine });
    } finally {
      await admin.close();
    }
  });
}

async function withAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Admin({ clientId: 'tidemark-test-admin', bootstrapBrokers: brokers });
  try {
    return await fn(admin);
  } finally {
    await admin.close();
  }
}

describe('topic provisioning', () => {
  it('creates the topics with explicit configs, and is idempotent', async (ctx) => {
    const prefix = `${uniqueTopicName('prov')}.`;
    cleanupPrefix(ctx, prefix);
    const first = await provisionTopics(
      { brokers },
      { prefix, partitions: 3, replicationFactor: 1, resumeWindowMs: 120_000 },
    );
    expect(first.created).toHaveLength(TOPIC_ROLES.length); // seven: calls, Events, the audit trail
    const again = await provisionTopics(
      { brokers },
      { prefix, partitions: 3, replicationFactor: 1 },
    );
    expect(again.created).toEqual([]);
    expect(again.existing).toHaveLength(TOPIC_ROLES.length);
    const configs = await withAdmin((admin) =>
      admin.describeConfigs({
        resources: [
          {
            resourceType: 2,
            resourceName: `${prefix}events`,
            configurationKeys: ['cleanup.policy', 'retention.ms', 'max.message.bytes'],
          },
        ],
      }),
    );
    const events = Object.fromEntries(configs[0]!.configs.map((c) => [c.name, c.value]));
    expect(events).toEqual({
      'cleanup.policy': 'delete',
      'retention.ms': '120000',
      // Explicit, above the gateway's 4 MiB body limit (the broker's default is 1 MiB).
      'max.message.bytes': String(4 * 1024 * 1024 + 64 * 1024),
    });
    expect(await checkTopics({ brokers }, { prefix })).toMatchObject({ events: `${prefix}events` });
    const policies = await withAdmin((admin) =>
      admin.describeConfigs({
        resources: ['occurrences', 'subscriptions'].map((role) => ({
          resourceType: 2,
          resourceName: `${prefix}${role}`,
          configurationKeys: ['cleanup.policy'],
        })),
      }),
    );
    expect(policies.map((r) => r.configs[0]!.value)).toEqual(['delete', 'compact']);
  });

  it('refuses a compacted events topic and unequal partition counts, naming each problem', async (ctx) => {
    const prefix = `${uniqueTopicName('bad')}.`;
    cleanupPrefix(ctx, prefix);
    await withAdmin(async (admin) => {
      for (const plan of planTopics({ prefix, partitions: 2, replicationFactor: 1 })) {
        const configs =
          plan.role === 'events' ? { ...plan.configs, 'cleanup.policy': 'compact' } : plan.configs;
        await admin.createTopics({
          topics: [plan.name],
          partitions: plan.role === 'requests' ? 3 : plan.partitions,
          replicas: 1,
          configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
        });
      }
    });
    const error = await checkTopics({ brokers }, { prefix }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ErrorCodes.topicMismatch });
    const message = (error as Error).message;
    expect(message).toMatch(/events is compacted/);
    expect(message).toMatch(/requests has 3 partitions but events has 2/);
    await expect(
      provisionTopics({ brokers }, { prefix, partitions: 2, replicationFactor: 1 }),
    ).rejects.toMatchObject({ code: ErrorCodes.topicMismatch });
  });

  it('refuses a replication factor above the brokers there are, before creating anything', async (ctx) => {
    const prefix = `${uniqueTopicName('rf')}.`;
    cleanupPrefix(ctx, prefix);
    const count = (await withAdmin((admin) => admin.metadata({ topics: [] }))).brokers.size;
    const error = await provisionTopics(
      { brokers },
      { prefix, replicationFactor: count + 1 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: ErrorCodes.invalidOptions,
      option: 'replicationFactor',
      limit: count,
    });
    expect((error as Error).message).toBe(
      `replicationFactor: expected at most the ${count} available broker${count === 1 ? '' : 's'}, got ${count + 1}`,
    );
    const left = await withAdmin((admin) => admin.listTopics());
    expect(left.filter((topic) => topic.startsWith(prefix))).toEqual([]);
  });

  it('a broker refusal says what the broker said, not the client’s summary', async (ctx) => {
    const prefix = `${uniqueTopicName('refused')}.`;
    cleanupPrefix(ctx, prefix);
    const error = await provisionTopics(
      { brokers },
      { prefix, replicationFactor: 1, overrides: { requests: { 'retention.ms': 'soon' } } },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ErrorCodes.brokerRefused, retryable: false });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^create topic ${prefix.replaceAll('.', '\\.')}requests: INVALID_CONFIG: .*retention\\.ms`,
      ),
    );
  });

  it('the readiness probe keeps one admin client and answers from a cache for cacheMs', async (ctx) => {
    const prefix = `${uniqueTopicName('probe')}.`;
    cleanupPrefix(ctx, prefix);
    const missing = createTopicsProbe({ brokers }, { prefix: `${prefix}none.` }, 0);
    ctx.onTestFinished(() => missing.close());
    expect(await missing.ready()).toBe(false);
    await provisionTopics({ brokers }, { prefix, partitions: 1, replicationFactor: 1 });
    const probe = createTopicsProbe({ brokers }, { prefix }, 60_000);
    ctx.onTestFinished(() => probe.close());
    expect(await probe.ready()).toBe(true);
    await withAdmin((admin) => admin.deleteTopics({ topics: [`${prefix}events`] }));
    // Within cacheMs the answer is the cached one: no broker round trip per probe.
    expect(await probe.ready()).toBe(true);
    const fresh = createTopicsProbe({ brokers }, { prefix }, 0);
    ctx.onTestFinished(() => fresh.close());
    for (let i = 0; i < 50 && (await fresh.ready()); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await fresh.ready()).toBe(false);
  });

  it('says which topics are missing', async () => {
    const prefix = `${uniqueTopicName('missing')}.`;
    const error = await checkTopics({ brokers }, { prefix }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      new RegExp(`${prefix.replaceAll('.', '\\.')}requests does not exist`),
    );
  });

  it('validates layout options before touching the cluster', () => {
    expect(() => planTopics({ partitions: 0 })).toThrow(/partitions: expected a positive integer/);
    expect(() => planTopics({ prefix: 'bad prefix' })).toThrow(/topic prefix/);
    expect(planTopics().map((t) => t.role)).toEqual(TOPIC_ROLES);
    expect(planTopics().find((t) => t.role === 'streams')?.configs['cleanup.policy']).toBe(
      'compact',
    );
  });
});
