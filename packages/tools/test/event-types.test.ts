import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { checkAgainst, defineEventType, defineToolModule } from '../src/index.js';

// Event types as a module declares them (#35): checked when the module loads, described as
// events/list answers (JSON Schema from the module's Zod schemas).

const inputSchema = z.object({ everyMs: z.number().int().min(10) });
const payloadSchema = z.object({ n: z.number().int() });

describe('defineEventType', () => {
  it('describes the type as events/list lists it, with defaults for delivery and replay', () => {
    const ticks = defineEventType({
      name: 'ticks',
      description: 'Counts.',
      inputSchema,
      payloadSchema,
    });
    expect(ticks.delivery).toEqual(['poll', 'push', 'webhook']);
    expect(ticks.replayWindowMs).toBe(3_600_000);
    // Each subject reads its own streams unless the author says they are shared.
    expect(ticks.scope).toBe('subject');
    expect(ticks.descriptor).not.toHaveProperty('scope');
    expect(ticks.descriptor).toMatchObject({
      name: 'ticks',
      description: 'Counts.',
      delivery: ['poll', 'push', 'webhook'],
      inputSchema: {
        type: 'object',
        properties: { everyMs: { type: 'integer', minimum: 10 } },
        required: ['everyMs'],
      },
      payloadSchema: { type: 'object', properties: { n: { type: 'integer' } } },
    });
    const webhookOnly = defineEventType({
      name: 'a.b/c-d_e',
      inputSchema,
      payloadSchema,
      delivery: ['webhook'],
    });
    expect(webhookOnly.descriptor.delivery).toEqual(['webhook']);
  });

  it('refuses a bad name, delivery, replay window, source or schema, naming the type', () => {
    const base = { name: 'ticks', inputSchema, payloadSchema };
    expect(() => defineEventType({ ...base, name: 'has space' })).toThrow(
      /defineEventType\("has space"\): name must be 1–128 letters/,
    );
    expect(() => defineEventType({ ...base, delivery: [] })).toThrow(
      /delivery must be a non-empty list/,
    );
    expect(() => defineEventType({ ...base, delivery: ['email' as never] })).toThrow(
      /of poll, push, webhook, got \["email"\]/,
    );
    expect(() => defineEventType({ ...base, replayWindowMs: 0 })).toThrow(
      /replayWindowMs: expected a positive integer/,
    );
    expect(() => defineEventType({ ...base, source: 'nope' as never })).toThrow(
      /source must be a function/,
    );
    expect(() => defineEventType({ ...base, scope: 'everyone' as never })).toThrow(
      /scope must be 'subject' or 'shared', got "everyone"/,
    );
    expect(() => defineEventType({ ...base, authorize: true as never })).toThrow(
      /authorize must be a function/,
    );
    expect(() => defineEventType({ ...base, payloadSchema: z.number() })).toThrow(
      /payloadSchema must describe an object/,
    );
    expect(() => defineEventType({ ...base, inputSchema: { type: 'object' } as never })).toThrow(
      /inputSchema must be a Standard Schema with JSON Schema/,
    );
  });

  it('a module lists its event types once each', () => {
    const ticks = defineEventType({ name: 'ticks', inputSchema, payloadSchema });
    const register = () => undefined;
    expect(defineToolModule({ name: 'events', events: [ticks], register }).events).toEqual([ticks]);
    expect(() => defineToolModule({ name: 'events', events: [ticks, ticks], register })).toThrow(
      /two event types are named ticks/,
    );
    expect(() =>
      defineToolModule({ name: 'events', events: [{ name: 'raw' } as never], register }),
    ).toThrow(/each of events must come from defineEventType/);
  });

  it('checks a value against a schema, naming the first issue and where it is', async () => {
    expect(await checkAgainst(inputSchema, { everyMs: 50 })).toEqual({
      ok: true,
      value: { everyMs: 50 },
    });
    const wrong = await checkAgainst(inputSchema, { everyMs: 5 });
    expect(wrong.ok).toBe(false);
    expect(!wrong.ok && wrong.message).toMatch(/^everyMs: /);
  });
});
