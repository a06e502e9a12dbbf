import { describe, expect, it } from 'vitest';
import {
  CLASSIFICATION_HEADER,
  CONTROL_HEADER,
  decodeRequestRecord,
  encodeRequestRecord,
  newRoutingKey,
  newSessionId,
  REQUEST_RECORD_VERSION_HEADER,
  SESSION_ENDED,
  SESSION_TOUCHED,
  SUBJECT_HEADER,
  type RequestRecord,
} from '../src/index.js';

const session = newSessionId();
const key = newRoutingKey();
const message = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'count' } };

const roundTrip = (record: RequestRecord) => {
  const encoded = encodeRequestRecord(record);
  return decodeRequestRecord({ ...encoded, headers: encoded.headers });
};

describe('request records', () => {
  it('carry each lane through encode and decode unchanged', () => {
    const records: RequestRecord[] = [
      { lane: 'session', session, message },
      {
        lane: 'stateless',
        key,
        message,
        classification: { kind: 'request', revision: '2026-07-28' },
        subject: 'alice',
        tasks: 'always',
      },
      {
        lane: 'stateless',
        key,
        message,
        classification: {},
        subject: undefined,
        tasks: 'never',
      },
      { lane: 'stateless', key, message, classification: {}, subject: 'c', tasks: 'tool' },
      { lane: 'control', session, control: SESSION_ENDED },
      { lane: 'control', session, control: SESSION_TOUCHED },
      {
        lane: 'stateless',
        key,
        message,
        classification: {},
        subject: undefined,
        tasks: 'never',
        idempotent: true,
      },
      { lane: 'keyed-session', key: newRoutingKey(), session, message, subject: 'alice' },
      { lane: 'keyed-session', key: newRoutingKey(), session, message, subject: undefined },
      { lane: 'session', session, message, joins: { session: newSessionId(), stream: 'n7' } },
      // Each lane's share: what the worker's fair slots count the sender by.
      { lane: 'session', session, message, share: 'alice' },
      {
        lane: 'keyed-session',
        key: newRoutingKey(),
        session,
        message,
        subject: undefined,
        share: 'address:203.0.113.5',
      },
      {
        lane: 'stateless',
        key,
        message,
        classification: {},
        subject: 'bob',
        tasks: 'never',
        share: 'bob',
      },
      // What each lane's credential said beside the subject: its OAuth client and scopes.
      { lane: 'session', session, message, caller: { clientId: 'app-1', scopes: ['a', 'b:c'] } },
      { lane: 'session', session, message, caller: { scopes: [] } },
      {
        lane: 'keyed-session',
        key: newRoutingKey(),
        session,
        message,
        subject: 'alice',
        caller: { clientId: 'app-2' },
      },
      {
        lane: 'stateless',
        key,
        message,
        classification: {},
        subject: 'bob',
        tasks: 'never',
        caller: { clientId: 'app-3', scopes: ['files:read'] },
      },
    ];
    for (const record of records) expect(roundTrip(record)).toEqual({ ok: true, record });
  });

  it('name their format version and the headers the worker reads', () => {
    const encoded = encodeRequestRecord({
      lane: 'stateless',
      key,
      message,
      classification: { a: 1 },
      subject: 'bob',
    });
    expect(encoded.key).toBe(key);
    expect(encoded.headers).toEqual([
      [REQUEST_RECORD_VERSION_HEADER, '1'],
      [CLASSIFICATION_HEADER, '{"a":1}'],
      [SUBJECT_HEADER, 'bob'],
    ]);
    const control = encodeRequestRecord({ lane: 'control', session, control: SESSION_ENDED });
    expect(control.headers).toContainEqual([CONTROL_HEADER, SESSION_ENDED]);
  });

  it('read records of the first gateways, which had no version header', () => {
    const value = Buffer.from(JSON.stringify(message));
    expect(decodeRequestRecord({ key: session, value, headers: [] })).toEqual({
      ok: true,
      record: { lane: 'session', session, message },
    });
  });

  it('refuse what is not a request record, saying why, without throwing', () => {
    const value = Buffer.from(JSON.stringify(message));
    const problems = [
      decodeRequestRecord({ key: session, value, headers: [[REQUEST_RECORD_VERSION_HEADER, '2']] }),
      decodeRequestRecord({ key: null, value, headers: [] }),
      decodeRequestRecord({ key: 'not a session', value, headers: [] }),
      decodeRequestRecord({ key: session, value: null, headers: [] }),
      decodeRequestRecord({ key: session, value: Buffer.from('{'), headers: [] }),
      decodeRequestRecord({ key: session, value: Buffer.from('[1]'), headers: [] }),
      decodeRequestRecord({ key: session, value, headers: [[CLASSIFICATION_HEADER, '{']] }),
    ];
    for (const decoded of problems) {
      expect(decoded.ok).toBe(false);
      if (!decoded.ok) expect(decoded.problem).not.toBe('');
    }
  });
});
