import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { KafkaLogOptions } from '@tidemark/kafka';
import { DEFAULT_TOPIC_PREFIX, topicNames } from '@tidemark/protocol';
import { brokers, str, UsageError, type FlagValues } from '../options.js';

/** How the gateway, the worker and `topics` reach Kafka: brokers, TLS, SASL. */
export const KAFKA_FLAGS = {
  brokers: { type: 'string' },
  prefix: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'sasl-mechanism': { type: 'string' },
  'sasl-token-file': { type: 'string' },
  'sasl-username': { type: 'string' },
  'sasl-password': { type: 'string' },
  'sasl-password-file': { type: 'string' },
  'sasl-allow-plaintext': { type: 'boolean' },
} as const;

/** The connection to Kafka from the flags and the environment (`KAFKA_*`). */
export function kafkaOptions(
  values: FlagValues,
  io: { env: NodeJS.ProcessEnv; cwd: string; logger: { warn: (message: string) => void } },
): KafkaLogOptions {
  const { env, cwd } = io;
  const list = brokers(str(values['brokers']), env);
  const connection: NonNullable<KafkaLogOptions['connection']> = {};
  const tls = tlsOf(values, cwd);
  if (tls !== undefined) connection.tls = tls;
  const sasl = saslOf(values, env, cwd);
  if (sasl !== undefined) connection.sasl = sasl;
  // PLAIN sends the password, OAUTHBEARER the token, as they are: only inside TLS.
  if (
    (sasl?.mechanism === 'PLAIN' || sasl?.mechanism === 'OAUTHBEARER') &&
    tls === undefined &&
    values['sasl-allow-plaintext'] !== true
  )
    throw new UsageError(
      `--sasl-mechanism ${sasl.mechanism}: it sends the ${sasl.mechanism === 'PLAIN' ? 'password' : 'token'} in clear without TLS; add --tls (or --tls-ca), or --sasl-allow-plaintext on a network you trust`,
    );
  if (str(values['sasl-password']) !== undefined)
    io.logger.warn(
      '--sasl-password: any user of this machine can read it in the process list; use --sasl-password-file or KAFKA_SASL_PASSWORD',
    );
  return { brokers: list, ...(Object.keys(connection).length > 0 ? { connection } : {}) };
}

/** TLS to the brokers: `--tls`, or a CA to trust and/or a client certificate (mutual TLS). */
function tlsOf(
  values: FlagValues,
  cwd: string,
): { ca?: Buffer; cert?: Buffer; key?: Buffer } | undefined {
  if ((str(values['tls-cert']) === undefined) !== (str(values['tls-key']) === undefined))
    throw new UsageError('--tls-cert and --tls-key: give both (a client certificate and its key)');
  const [ca, cert, key] = (['tls-ca', 'tls-cert', 'tls-key'] as const).map((flag) => {
    const path = str(values[flag]);
    return path === undefined ? undefined : readFlagFile(path, cwd, `--${flag}`);
  });
  if (values['tls'] !== true && ca === undefined && cert === undefined) return undefined;
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  };
}

const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

function saslOf(
  values: FlagValues,
  env: NodeJS.ProcessEnv,
  cwd: string,
): NonNullable<KafkaLogOptions['connection']>['sasl'] {
  const mechanism = str(values['sasl-mechanism']) ?? env['KAFKA_SASL_MECHANISM'];
  if (mechanism === undefined) return undefined;
  if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new UsageError(
      `--sasl-mechanism: expected ${SASL_MECHANISMS.slice(0, -1).join(', ')} or OAUTHBEARER, got "${mechanism}"`,
    );
  }
  if (mechanism === 'OAUTHBEARER') {
    const file = str(values['sasl-token-file']) ?? env['KAFKA_SASL_TOKEN_FILE'];
    if (file === undefined)
      throw new UsageError('--sasl-token-file: required with --sasl-mechanism OAUTHBEARER');
    readFlagFile(file, cwd, '--sasl-token-file');
    // Read again for every connection: a mounted token (Kubernetes, a sidecar) is rotated.
    return {
      mechanism: 'OAUTHBEARER',
      token: () => readFileSync(resolve(cwd, file), 'utf8').trim(),
    };
  }
  const username = str(values['sasl-username']) ?? env['KAFKA_SASL_USERNAME'];
  const passwordFile = str(values['sasl-password-file']);
  const password =
    str(values['sasl-password']) ??
    (passwordFile === undefined
      ? env['KAFKA_SASL_PASSWORD']
      : readFlagFile(passwordFile, cwd, '--sasl-password-file').toString('utf8').trim());
  if (username === undefined || password === undefined)
    throw new UsageError(
      '--sasl-username and --sasl-password-file (or KAFKA_SASL_PASSWORD): required with --sasl-mechanism',
    );
  return { mechanism: mechanism as 'PLAIN', username, password };
}

function readFlagFile(path: string, cwd: string, flag: string): Buffer {
  try {
    return readFileSync(resolve(cwd, path));
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** `--prefix`: the topic-name prefix, checked. */
export function prefixOf(values: FlagValues): string {
  const prefix = str(values['prefix']) ?? DEFAULT_TOPIC_PREFIX;
  try {
    topicNames(prefix);
  } catch (error) {
    throw new UsageError(`--prefix: ${(error as Error).message}`);
  }
  return prefix;
}
