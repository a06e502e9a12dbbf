import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../src/failures.js';

describe('a runtime failure, said with the way out', () => {
  it('a port in use names the port and --port', () => {
    const error = Object.assign(new Error('listen EADDRINUSE: address already in use'), {
      code: 'EADDRINUSE',
      address: '127.0.0.1',
      port: 3000,
    });
    expect(describeFailure(error, [], {})).toBe(
      'port 3000 on 127.0.0.1 is taken by another process: stop it, or pick another port with --port <n> (0: any free port)',
    );
  });

  it('a broker that cannot be reached, from the flag or KAFKA_BROKERS, however deep the cause', () => {
    const refused = new Error('metadata failed 21 times', {
      cause: new AggregateError([Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })]),
    });
    expect(describeFailure(refused, ['--brokers', 'k:9092'], {})).toMatch(
      /^cannot reach Kafka at k:9092 \(metadata failed 21 times\): is the broker running/,
    );
    expect(describeFailure(refused, [], { KAFKA_BROKERS: 'a:1,b:2' })).toMatch(
      /^cannot reach Kafka at a:1,b:2 /,
    );
    // Without brokers it is not about Kafka: the message as it is.
    expect(describeFailure(refused, [], {})).toBe('metadata failed 21 times');
  });

  it('unknown topics point at tidemark topics create', () => {
    const error = new TidemarkError(ErrorCodes.unknownTopic, 'unknown topic tidemark.requests');
    expect(describeFailure(error, [], {})).toMatch(
      /^unknown topic tidemark.requests: create the topics first \(tidemark topics create/,
    );
  });
});
