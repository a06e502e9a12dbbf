import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonText } from '@tidemark/protocol';
import { SseStream } from '../src/http/sse.js';

const OPTIONS = { keepAliveMs: 60_000, maxBufferedBytes: 1 << 20, retryMs: undefined };

let server: Server | undefined;
afterEach(() => server?.close());

/** Writes to the response since its headers, one entry per `res.write` (the body's syscalls). */
let writes: number;

/** Serves one SSE response written by `write`; returns the HTTP chunks of its body, raw. */
async function chunksOf(write: (sse: SseStream) => void): Promise<string[]> {
  writes = 0;
  server = createServer((_req, res) => {
    const sse = new SseStream(res as Response, OPTIONS, {});
    const original = res.write.bind(res) as (...args: unknown[]) => boolean;
    res.write = ((...args: unknown[]) => {
      writes++;
      return original(...args);
    }) as typeof res.write;
    write(sse);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => (text += data));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  // The body in chunked transfer encoding: size line, bytes, CRLF; a zero size ends it.
  let body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const chunks: string[] = [];
  for (;;) {
    const line = body.indexOf('\r\n');
    const size = parseInt(body.slice(0, line), 16);
    if (size === 0) return chunks;
    chunks.push(Buffer.from(body.slice(line + 2, line + 2 + size), 'latin1').toString('utf8'));
    body = body.slice(line + 2 + size + 2);
  }
}

describe('SseStream', () => {
  it('writes a batch as one write: a log message as its bytes, untouched, beside a serialised one', async () => {
    const fromLog = '{"jsonrpc":"2.0","method":"m","params":{"note":"é\\u2028"}}';
    const chunks = await chunksOf((sse) => {
      sse.batch(() => {
        sse.event('a1', new JsonText(Buffer.from(fromLog)));
        sse.event(undefined, { jsonrpc: '2.0', id: 7, result: {} });
      });
      sse.end();
    });
    expect(chunks).toEqual([
      `id: a1\nevent: message\ndata: ${fromLog}\n\n` +
        'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n',
    ]);
    expect(writes).toBe(1);
  });

  it('a stream ended inside a batch writes what the batch wrote first (the final message)', async () => {
    const chunks = await chunksOf((sse) =>
      sse.batch(() => {
        sse.event('a1', new JsonText(Buffer.from('{"n":1}')));
        sse.event('a2', new JsonText(Buffer.from('{"n":2}')));
        sse.end();
        sse.event('a3', new JsonText(Buffer.from('{"n":3}')));
      }),
    );
    expect(chunks.join('')).toBe(
      'id: a1\nevent: message\ndata: {"n":1}\n\nid: a2\nevent: message\ndata: {"n":2}\n\n',
    );
  });
});
