import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ephemeralPortRange, reservePorts } from '../src/ports.js';

describe('reservePorts', () => {
  it('gives consecutive free ports outside the kernel’s ephemeral range', async () => {
    const ephemeral = ephemeralPortRange();
    for (let i = 0; i < 20; i++) {
      const first = await reservePorts({ count: 2 });
      for (const port of [first, first + 1]) {
        expect(port < ephemeral.low || port > ephemeral.high).toBe(true);
        // Free: a server can listen there now.
        await new Promise<void>((resolve, reject) => {
          const server = createServer().once('error', reject);
          server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
        });
      }
    }
  });

  it('stays out of a range it is given, and refuses a range that leaves no room', async () => {
    for (let i = 0; i < 20; i++) {
      const port = await reservePorts({ ephemeral: { low: 10_300, high: 65_000 } });
      expect((port >= 10_240 && port < 10_300) || port > 65_000).toBe(true);
    }
    await expect(reservePorts({ ephemeral: { low: 1024, high: 65535 } })).rejects.toThrow(
      /leaves no room/,
    );
    await expect(reservePorts({ count: 0 })).rejects.toThrow(TypeError);
  });

  it('reads the range from the kernel’s file, and falls back to Linux’s default', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tidemark-ports-')), 'range');
    writeFileSync(file, '40000\t50000\n');
    expect(ephemeralPortRange(file)).toEqual({ low: 40_000, high: 50_000 });
    expect(ephemeralPortRange(join(file, 'missing'))).toEqual({ low: 32_768, high: 60_999 });
  });
});
