// The ceiling of live delivery on this machine: a process that speaks just enough Streamable HTTP
// for the load generator (initialize, then `ticker` calls) and writes each of the same events as
// pre-framed SSE bytes — no MCP server, no store, no JSON serialiser: a template with the event's
// numbers spliced in, one write per event, the same yield between events as the `ticker` tool.
// Every live figure of `npm run bench` has this one beside it. Prints {"port": N} when listening.
//
//   node test/bench/raw-socket.ts
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { nowMs } from './bench-tools.ts';

/** As long as the event ids Tidemark mints (base64url of about 60 bytes). */
const ID_PREFIX = 'x'.repeat(72);

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

interface Call {
  id: number;
  method: string;
  params?: { arguments?: { n?: number; intervalMs?: number }; _meta?: { progressToken?: number } };
}

async function ticker(call: Call, res: ServerResponse): Promise<void> {
  const n = call.params?.arguments?.n ?? 1;
  const intervalMs = call.params?.arguments?.intervalMs ?? 0;
  const token = JSON.stringify(call.params?._meta?.progressToken ?? call.id);
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  const head = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${token},"progress":`;
  for (let i = 1; i <= n && !res.destroyed; i++) {
    res.write(
      `id: ${ID_PREFIX}${i}\n${head}${i},"total":${n},"message":"${nowMs()}"}}\n\n`,
      'latin1',
    );
    await new Promise((resolve) =>
      intervalMs === 0 ? setImmediate(resolve) : setTimeout(resolve, intervalMs),
    );
  }
  res.end(
    `id: ${ID_PREFIX}0\nevent: message\ndata: {"jsonrpc":"2.0","id":${call.id},"result":{"content":[{"type":"text","text":"ticked ${n}"}]}}\n\n`,
  );
}

const server = createServer((req, res) => {
  void readBody(req).then(async (body) => {
    const call = JSON.parse(body) as Call;
    if (call.method === 'initialize') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': randomUUID() });
      res.end(
        `{"jsonrpc":"2.0","id":${call.id},"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw-socket","version":"1"}}}`,
      );
    } else if (call.method === 'tools/call') await ticker(call, res);
    else res.writeHead(202).end();
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (typeof address === 'object' && address !== null)
    console.log(JSON.stringify({ port: address.port }));
});
process.on('SIGTERM', () => process.exit(0));
