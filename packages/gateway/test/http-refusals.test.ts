import { describe, expect, it } from 'vitest';
import { SESSION_PROTOCOL_VERSIONS } from '@tidemark/protocol';
import { HttpRefusals } from '../src/http/index.js';

describe('HTTP refusals', () => {
  const all = [
    HttpRefusals.logUnavailable(),
    HttpRefusals.origin(),
    HttpRefusals.host(),
    HttpRefusals.declaredBodyTooLarge(1_000),
    HttpRefusals.bodyTooLarge(1_000),
    HttpRefusals.notJson(),
    HttpRefusals.charset(),
    HttpRefusals.encoding(),
    HttpRefusals.badBody(418),
    HttpRefusals.methodNotAllowed(),
    HttpRefusals.statelessHasNoSessions(),
    HttpRefusals.contentType(),
    HttpRefusals.acceptPost(),
    HttpRefusals.acceptGet(),
    HttpRefusals.unauthorized('Bearer'),
    HttpRefusals.rateLimited(2),
    HttpRefusals.tooManyStreams(32),
    HttpRefusals.missingSession(),
    HttpRefusals.unknownSession(),
    HttpRefusals.unsupportedVersion('1999-01-01', SESSION_PROTOCOL_VERSIONS),
    HttpRefusals.initializeAlone(),
    HttpRefusals.initializeNotRequest(),
    HttpRefusals.initializeTooLarge(70_000, 65_536),
    HttpRefusals.batchNotAllowed(),
    HttpRefusals.batchWithRequests(),
    HttpRefusals.requestIdReused(3),
    HttpRefusals.invalidMessage(5, -32600, 'Invalid Request: x'),
  ];

  it('are client mistakes answered 4xx, except an unavailable log (503)', () => {
    for (const refusal of all) {
      const serverSide = refusal.message.startsWith('The log');
      expect(refusal.status >= 400 && refusal.status < (serverSide ? 600 : 500)).toBe(true);
      expect(refusal.code).toBeLessThanOrEqual(-32000);
      expect(refusal.reason).not.toBe('');
    }
  });

  it('carry the headers their status needs', () => {
    expect(HttpRefusals.methodNotAllowed().headers).toEqual({ Allow: 'GET, POST, DELETE' });
    expect(HttpRefusals.statelessHasNoSessions().headers).toEqual({ Allow: 'POST' });
    expect(HttpRefusals.rateLimited(2).headers).toEqual({ 'Retry-After': '2' });
    expect(HttpRefusals.unauthorized('Bearer x').headers).toEqual({
      'WWW-Authenticate': 'Bearer x',
    });
    expect(HttpRefusals.declaredBodyTooLarge(1).headers).toEqual({ Connection: 'close' });
  });

  it('answer sessions as the wire table says', () => {
    expect(HttpRefusals.unknownSession()).toMatchObject({
      status: 404,
      code: -32001,
    });
    expect(HttpRefusals.missingSession().status).toBe(400);
    expect(HttpRefusals.invalidMessage(5, -32600, 'm')).toMatchObject({ status: 400, id: 5 });
  });

  it('refuses an invalid claim naming the reason, and nothing of the log', () => {
    expect(HttpRefusals.invalidResume('beyond-tail')).toEqual({
      status: 400,
      code: -32600,
      message: 'Invalid Last-Event-ID: beyond-tail',
      reason: 'invalid-resume',
      data: { reason: 'beyond-tail' },
    });
  });
});
