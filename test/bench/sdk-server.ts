// The baseline users have today: the official SDK's StreamableHTTPServerTransport in one process,
// one transport per session, with its example in-memory event store — or with a Redis-backed
// event store (Redis Streams, one per MCP stream). Prints {"port": N} when listening.
//
//   node test/bench/sdk-server.ts memory
//   node test/bench/sdk-server.ts redis redis://127.0.0.1:6379
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  StreamableHTTPServerTransport,
  type EventStore,
} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createClient } from 'redis';
import { tick, tickerInput } from './bench-tools.ts';

const [kind = 'memory', redisUrl = 'redis://127.0.0.1:6379'] = process.argv.slice(2);

/** An event store on Redis Streams: XADD per event, XRANGE after the claimed id to replay. */
class RedisEventStore implements EventStore {
  private readonly redis: ReturnType<typeof createClient>;

  constructor(redis: ReturnType<typeof createClient>) {
    this.redis = redis;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = await this.redis.xAdd(`mcp:${streamId}`, '*', { m: JSON.stringify(message) });
    return `${streamId}|${id}`;
  }

  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const at = eventId.lastIndexOf('|');
    return Promise.resolve(at < 0 ? undefined : eventId.slice(0, at));
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const at = lastEventId.lastIndexOf('|');
    if (at < 0) return '';
    const streamId = lastEventId.slice(0, at);
    let from = `(${lastEventId.slice(at + 1)}`;
    for (;;) {
      const batch = (await this.redis.xRange(`mcp:${streamId}`, from, '+', { COUNT: 1000 })) ?? [];
      for (const entry of batch)
        await send(`${streamId}|${entry.id}`, JSON.parse(entry.message['m']!) as JSONRPCMessage);
      if (batch.length < 1000) return streamId;
      from = `(${batch.at(-1)!.id}`;
    }
  }
}

let redis: ReturnType<typeof createClient> | undefined;
if (kind === 'redis') {
  redis = createClient({ url: redisUrl });
  await redis.connect();
}
const eventStore = (): EventStore =>
  redis === undefined ? new InMemoryEventStore() : new RedisEventStore(redis);

function serverFor(): McpServer {
  const server = new McpServer({ name: 'sdk-baseline', version: '1.0.0' });
  server.registerTool(
    'ticker',
    { description: 'n stamped progress notifications, then a result', inputSchema: tickerInput },
    ({ n, intervalMs }, extra) =>
      tick(n, intervalMs, extra._meta?.progressToken, (params) =>
        extra.sendNotification({
          method: 'notifications/progress',
          params: params as { progressToken: string; progress: number },
        }),
      ),
  );
  return server;
}

const transports = new Map<string, StreamableHTTPServerTransport>();

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0
    ? undefined
    : (JSON.parse(Buffer.concat(chunks).toString()) as unknown);
}

const http = createServer((req, res) => {
  void (async () => {
    const session = req.headers['mcp-session-id'];
    const parsed = req.method === 'POST' ? await body(req) : undefined;
    let transport = typeof session === 'string' ? transports.get(session) : undefined;
    if (transport === undefined && req.method === 'POST' && isInitializeRequest(parsed)) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: eventStore(),
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) transports.delete(created.sessionId);
      };
      await serverFor().connect(created);
      transport = created;
    }
    if (transport === undefined) {
      res.writeHead(404).end();
      return;
    }
    await transport.handleRequest(req, res, parsed);
  })().catch((error: unknown) => {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  });
});
http.listen(0, '127.0.0.1', () => {
  const address = http.address();
  console.log(
    JSON.stringify({ port: typeof address === 'object' && address !== null ? address.port : 0 }),
  );
});
process.on('SIGTERM', () => {
  http.close();
  void redis?.quit();
  process.exit(0);
});
