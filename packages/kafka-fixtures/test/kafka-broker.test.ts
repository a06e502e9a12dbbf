import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  KafkaUnavailableError,
  findLocalBrokerScript,
  parseBrokerList,
  resolveKafka,
} from '../src/index.js';

describe('parseBrokerList', () => {
  it('reads a comma-separated host:port list', () => {
    expect(parseBrokerList('a:9092, b:9093')).toEqual(['a:9092', 'b:9093']);
    expect(parseBrokerList('[::1]:9092')).toEqual(['[::1]:9092']);
  });

  it('treats unset and blank as not configured', () => {
    expect(parseBrokerList(undefined)).toBeUndefined();
    expect(parseBrokerList('  ')).toBeUndefined();
  });

  it('rejects a value that is not host:port, naming it', () => {
    expect(() => parseBrokerList('localhost')).toThrow(/"localhost" is not host:port/);
    expect(() => parseBrokerList('a:9092,,b:1')).toThrow(TypeError);
  });
});

describe('resolveKafka', () => {
  const nowhere = mkdtempSync(join(tmpdir(), 'tidemark-no-infra-'));
  const quiet = () => {};

  it('uses KAFKA_BROKERS without starting anything', async () => {
    const kafka = await resolveKafka({ env: { KAFKA_BROKERS: 'k1:9092,k2:9092' }, log: quiet });
    expect(kafka.source).toBe('env');
    expect(kafka.brokers).toEqual(['k1:9092', 'k2:9092']);
    await kafka.stop();
  });

  it('fails in CI with a message naming the three ways to get a broker', async () => {
    const error = await resolveKafka({
      env: { CI: 'true', PATH: process.env['PATH'] ?? '' },
      searchFrom: nowhere,
      dockerSocket: join(nowhere, 'docker.sock'),
      log: quiet,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(KafkaUnavailableError);
    const message = (error as Error).message;
    expect(message).toMatch(/CI=true requires one/);
    expect(message).toMatch(/KAFKA_BROKERS/);
    expect(message).toMatch(/Docker/);
    expect(message).toMatch(/Java 17\+ and Maven/);
    expect(message).toMatch(/infra\/kafka\/kafka.sh not found/);
  });

  it('outside CI says what to install', async () => {
    const error = await resolveKafka({
      env: {},
      searchFrom: nowhere,
      dockerSocket: join(nowhere, 'docker.sock'),
      log: quiet,
    }).catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/^No Kafka broker for the tests. Give them one of:/);
  });
});

describe('findLocalBrokerScript', () => {
  it('finds infra/kafka/kafka.sh from inside the repository', () => {
    expect(findLocalBrokerScript(import.meta.dirname)).toMatch(/infra\/kafka\/kafka\.sh$/);
  });
});
