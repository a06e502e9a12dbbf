import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { devInProcess } from '../support/dev-in-process.js';
import { initializeRequest, MCP_HEADERS } from '@tidemark/fixtures/sse';

// A tokens file is read again when it changes and on SIGHUP (issue #33): a token revoked in the
// file stops working without a restart. It fails closed (security review L3): what the file says
// now holds — a bad line skipped, an empty file refusing every token — and a file that no longer
// reads refuses every token until it does; a removed token is never kept.

const ALICE = 'alice-token-0123456789-0123456789-abcdef';
const BOB = 'bob-token-0123456789-0123456789-abcdefgh';

async function devWithTokens(tokens: string) {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-auth-'));
  const file = join(dir, 'tokens.txt');
  writeFileSync(file, tokens);
  const dev = await devInProcess(dir, [
    '--port',
    '0',
    '--data',
    join(dir, 'data'),
    '--auth-tokens',
    file,
    '--console',
    'off',
  ]);
  onTestFinished(() => dev.stop());
  const url = dev.url;
  const status = async (token: string) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, Authorization: `Bearer ${token}` },
      body: JSON.stringify(initializeRequest()),
    });
    await response.body?.cancel();
    return response.status;
  };
  return { file, status, logged: () => dev.lines.join('\n') };
}

describe('reloading the tokens file', () => {
  it('a changed file is read again: a removed token gets 401, an added one works', async () => {
    const { file, status } = await devWithTokens(`${ALICE} alice\n`);
    expect(await status(ALICE)).toBe(200);
    expect(await status(BOB)).toBe(401);
    writeFileSync(file, `${BOB} bob\n`);
    await vi.waitFor(async () => expect(await status(BOB)).toBe(200), { timeout: 10_000 });
    expect(await status(ALICE)).toBe(401);
  });

  it('fails closed: a bad line is skipped (the rest holds), an empty file and a deleted one refuse every token (security review L3)', async () => {
    const { file, status, logged } = await devWithTokens(`${ALICE} alice\n${BOB} bob\n`);
    expect(await status(BOB)).toBe(200);
    // Bob's line broken while alice's stays: alice goes on, bob is not kept from before.
    writeFileSync(file, `${ALICE} alice\n${BOB}\n`);
    process.emit('SIGHUP');
    expect(await status(BOB)).toBe(401);
    expect(await status(ALICE)).toBe(200);
    expect(logged()).toContain('tokens line skipped');
    writeFileSync(file, '# nobody for now\n');
    process.emit('SIGHUP');
    expect(await status(ALICE)).toBe(401);
    rmSync(file);
    process.emit('SIGHUP');
    expect(await status(ALICE)).toBe(401);
    expect(logged()).toContain('every credential is refused until it does');
    writeFileSync(file, `${ALICE} alice\n`);
    process.emit('SIGHUP');
    expect(await status(ALICE)).toBe(200);
    expect(logged()).not.toContain(BOB.slice(0, 12));
  });

  it('SIGHUP reads it again at once; a short token is taken with a warning that never shows it', async () => {
    const short = 'short-token-0123456';
    const { file, status, logged } = await devWithTokens(`${ALICE} alice\n`);
    writeFileSync(file, `${short} carol\n`);
    process.emit('SIGHUP');
    expect(await status(short)).toBe(200);
    expect(await status(ALICE)).toBe(401);
    expect(logged()).toContain('a token shorter than 32 characters can be guessed');
    expect(logged()).not.toContain(short);
  });
});
