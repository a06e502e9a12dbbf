import { describe, expect, it } from 'vitest';
import { RESET_NOTIFICATION_METHOD, resetNotification, WireAnswers } from '../src/index.js';
import { epochA, gen } from './helpers.js';

describe('wire answers', () => {
  it('maps each outcome to its status', () => {
    expect(WireAnswers.resume.httpStatus).toBe(200);
    expect(WireAnswers.reset.httpStatus).toBe(200);
    expect(WireAnswers.invalid.httpStatus).toBe(400);
    expect(WireAnswers.unknownSession.httpStatus).toBe(404);
    expect(WireAnswers.missingSession.httpStatus).toBe(400);
  });

  it('builds the reset notification with the generation to discard towards', () => {
    expect(resetNotification('generation-superseded', gen(epochA, 2))).toEqual({
      jsonrpc: '2.0',
      method: RESET_NOTIFICATION_METHOD,
      params: { reason: 'generation-superseded', generation: `${epochA}.2` },
    });
    expect(resetNotification('evicted', undefined).params.generation).toBeNull();
  });
});
