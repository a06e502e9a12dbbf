import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KafkaLog, provisionTopics } from '@tidemark/kafka';
import { topicNames } from '@tidemark/protocol';
import {
  startDedicatedBroker,
  uniqueTopicName,
  type DedicatedBroker,
} from '@tidemark/kafka-fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Managed clusters (Strimzi, MSK, Confluent) speak TLS with their own CA, often mutual TLS, and
// SASL. A broker of this test's own, with certificates made here by openssl (a CA, the broker's
// certificate for 127.0.0.1, a client certificate) and four listeners: PLAINTEXT (for the broker
// itself), SASL_SSL with SCRAM-SHA-512 and PLAIN, and SSL requiring a client certificate.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'packages/cli/dist/bin.js');
const USER = { name: 'alice', password: 'alice-secret-0123' };

async function makeCertificates(dir: string): Promise<void> {
  const ssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  await ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=tidemark-test-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  for (const [name, san] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    ['client', 'subjectAltName=DNS:tidemark-client'],
  ] as const) {
    await ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    writeFileSync(join(dir, `${name}.ext`), `${san}\n`);
    await ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    );
    // PKCS#8 key first, then the certificate: Kafka's PEM key store in one file.
    await ssl('pkcs8', '-topk8', '-nocrypt', '-in', `${name}.key`, '-out', `${name}.pk8`);
  }
  writeFileSync(
    join(dir, 'server-store.pem'),
    readFileSync(join(dir, 'server.pk8'), 'utf8') + readFileSync(join(dir, 'server.pem'), 'utf8'),
  );
}

let broker: DedicatedBroker;
let saslSsl = '';
let mtls = '';
const file = (name: string) => join(broker.dir, name);

beforeAll(async () => {
  broker = await startDedicatedBroker({
    ports: 4,
    prepare: (_port, dir) => makeCertificates(dir),
    formatArgs: ['--add-scram', `SCRAM-SHA-512=[name=${USER.name},password=${USER.password}]`],
    config: (port, dir) =>
      [
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 1},SASL_SSL://127.0.0.1:${port + 2},SSL://127.0.0.1:${port + 3}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port},SASL_SSL://127.0.0.1:${port + 2},SSL://127.0.0.1:${port + 3}`,
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL',
        'ssl.keystore.type=PEM',
        `ssl.keystore.location=${join(dir, 'server-store.pem')}`,
        'ssl.truststore.type=PEM',
        `ssl.truststore.location=${join(dir, 'ca.pem')}`,
        'listener.name.ssl.ssl.client.auth=required',
        'sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN',
        `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${USER.name}="${USER.password}";`,
        'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
        '',
      ].join('\n'),
  });
  saslSsl = `127.0.0.1:${broker.port + 2}`;
  mtls = `127.0.0.1:${broker.port + 3}`;
}, 180_000);
afterAll(() => broker?.destroy());

/** `tidemark topics create` with these flags; its exit code and output. */
async function topicsCreate(brokers: string, ...flags: string[]) {
  const prefix = `${uniqueTopicName('sec')}.`;
  const args = [bin, 'topics', 'create', '--brokers', brokers, '--prefix', prefix];
  return run(process.execPath, [
    ...args,
    '--partitions',
    '1',
    '--replication-factor',
    '1',
    ...flags,
  ]).then(
    ({ stdout }) => ({ code: 0, out: stdout }),
    (error: { code: number; stderr: string }) => ({ code: error.code, out: error.stderr }),
  );
}

describe('Kafka security: TLS with a private CA, mutual TLS, SASL', () => {
  it('SASL_SSL with SCRAM-SHA-512 and with PLAIN, trusting the cluster CA: tidemark topics create works', async () => {
    const sasl = [
      '--tls-ca',
      file('ca.pem'),
      '--sasl-username',
      USER.name,
      '--sasl-password',
      USER.password,
    ];
    for (const mechanism of ['SCRAM-SHA-512', 'PLAIN']) {
      const result = await topicsCreate(saslSsl, ...sasl, '--sasl-mechanism', mechanism);
      expect(result.code, `${mechanism}: ${result.out}`).toBe(0);
      expect(result.out).toMatch(/created: .*requests/);
    }
  });

  it('a wrong password or an untrusted CA fails with the reason, exit 1', async () => {
    const wrong = await topicsCreate(
      saslSsl,
      '--tls-ca',
      file('ca.pem'),
      '--sasl-mechanism',
      'SCRAM-SHA-512',
      '--sasl-username',
      USER.name,
      '--sasl-password',
      'wrong-password',
    );
    expect(wrong.code).toBe(1);
    expect(wrong.out).toMatch(/SASL_AUTHENTICATION_FAILED|[Aa]uthentication failed/);
    const untrusted = await topicsCreate(
      saslSsl,
      '--tls',
      '--sasl-mechanism',
      'SCRAM-SHA-512',
      '--sasl-username',
      USER.name,
      '--sasl-password',
      USER.password,
    );
    expect(untrusted.code).toBe(1);
    expect(untrusted.out).toMatch(/certificate/i);
  });

  it('mutual TLS: with a client certificate the log works end to end (append, fetch); without one the broker refuses', async () => {
    const withCert = await topicsCreate(
      mtls,
      '--tls-ca',
      file('ca.pem'),
      '--tls-cert',
      file('client.pem'),
      '--tls-key',
      file('client.key'),
    );
    expect(withCert).toMatchObject({ code: 0 });
    const prefix = `${uniqueTopicName('mtls')}.`;
    const connection = {
      tls: {
        ca: readFileSync(file('ca.pem')),
        cert: readFileSync(file('client.pem')),
        key: readFileSync(file('client.key')),
      },
    };
    await provisionTopics(
      { brokers: [mtls], connection },
      { prefix, partitions: 1, replicationFactor: 1 },
    );
    const log = new KafkaLog({ brokers: [mtls], connection });
    try {
      const topic = topicNames(prefix).requests;
      await log.append(topic, [
        { partition: 0, key: 'k', value: Buffer.from('over mutual TLS'), headers: [] },
      ]);
      const { records } = await log.fetch(topic, 0, 0n, { maxWaitMs: 100 });
      expect(records.map((r) => Buffer.from(r.value!).toString())).toEqual(['over mutual TLS']);
    } finally {
      await log.close();
    }
    const without = await topicsCreate(mtls, '--tls-ca', file('ca.pem'));
    expect(without.code).toBe(1);
  });
});
