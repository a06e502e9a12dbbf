import { describe, expect, it } from 'vitest';
import { RESET_NOTIFICATION_METHOD, resetNotification } from '../src/index.js';
import { epochA, gen } from './helpers.js';

describe('the reset notification', () => {
  it('builds the reset notification with the generation to discard towards', () => {
    expect(resetNotification('generation-superseded', gen(epochA, 2))).toEqual({
      jsonrpc: '2.0',
      method: RESET_NOTIFICATION_METHOD,
      params: { reason: 'generation-superseded', generation: `${epochA}.2` },
    });
    expect(resetNotification('evicted', undefined).params.generation).toBeNull();
  });
});
