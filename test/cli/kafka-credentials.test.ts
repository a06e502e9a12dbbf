import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT, main } from '@tidemark/cli';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

// Kafka credentials are not given away (issue #33): PLAIN and OAUTHBEARER only inside TLS, and a
// password on the command line (which every user of the machine reads in `ps`) is said to be so.

async function run(args: string[]) {
  const out: string[] = [];
  const lines: string[] = [];
  const code = await main(args, {
    env: {},
    cwd: mkdtempSync(join(tmpdir(), 'tidemark-kafka-flags-')),
    out: (line) => out.push(line),
    err: (line) => out.push(line),
    stopSignal: new Promise<void>(() => undefined),
    logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }),
  });
  return { code, out: out.join('\n'), log: lines.join('\n') };
}

// Nothing listens on port 1: a command that gets past its flags fails to connect (exit 1).
const BROKER = ['topics', 'check', '--brokers', '127.0.0.1:1'];

describe('Kafka credentials', () => {
  it('PLAIN or OAUTHBEARER without TLS is a usage error, unless allowed in so many words', async () => {
    const plain = await run([
      ...BROKER,
      ...['--sasl-mechanism', 'PLAIN', '--sasl-username', 'u'],
      ...['--sasl-password', 'p'],
    ]);
    expect(plain.code).toBe(EXIT.usage);
    expect(plain.out).toContain('sends the password in clear without TLS');
    const token = join(mkdtempSync(join(tmpdir(), 'tidemark-token-')), 'token');
    writeFileSync(token, 'a-token');
    const bearer = await run([
      ...BROKER,
      ...['--sasl-mechanism', 'OAUTHBEARER', '--sasl-token-file', token],
    ]);
    expect(bearer.code).toBe(EXIT.usage);
    expect(bearer.out).toContain('sends the token in clear without TLS');
    const allowed = await run([
      ...BROKER,
      ...['--sasl-mechanism', 'OAUTHBEARER', '--sasl-token-file', token, '--sasl-allow-plaintext'],
    ]);
    expect(allowed.code).toBe(EXIT.failure); // past the flags: nothing to connect to
  }, 60_000);

  it('a password file is read; a password on the command line works, with a warning', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tidemark-password-')), 'password');
    writeFileSync(file, 'secret-password\n');
    const scram = ['--sasl-mechanism', 'SCRAM-SHA-512', '--sasl-username', 'u'];
    const fromFile = await run([...BROKER, ...scram, '--sasl-password-file', file]);
    expect(fromFile.code).toBe(EXIT.failure);
    expect(fromFile.log).not.toContain('process list');
    const inline = await run([...BROKER, ...scram, '--sasl-password', 'secret-password']);
    expect(inline.code).toBe(EXIT.failure);
    expect(inline.log).toContain('any user of this machine can read it in the process list');
    expect(inline.log).not.toContain('secret-password');
  }, 60_000);
});
