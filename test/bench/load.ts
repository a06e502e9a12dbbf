// The load generator's MCP client: plain fetch and the tests' minimal SSE reader, so that the
// client costs as little CPU as possible and the figures are about the servers.
import { readSse } from '@tidemark/fixtures/sse';

export const HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2025-11-25',
} as const;

export interface Tick {
  /** Progress number. */
  readonly i: number;
  /** When the tool emitted it (ms, wall clock). */
  readonly emittedMs: number;
  /** When this client read it (ms, wall clock). */
  readonly receivedMs: number;
  readonly id: string | undefined;
}

/** How long a resumed stream may stay silent before the client gives up on it. */
const IDLE_MS = 2_000;

export const nowMs = (): number => performance.timeOrigin + performance.now();

/** One MCP session of the load generator. */
export class Session {
  readonly url: string;
  id = '';
  private nextId = 1;

  constructor(url: string) {
    this.url = url;
  }

  async initialize(): Promise<void> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'bench', version: '1' },
        },
      }),
    });
    if (!response.ok) throw new Error(`initialize: ${response.status} ${await response.text()}`);
    this.id = response.headers.get('mcp-session-id') ?? '';
    await response.text();
    const initialized = await fetch(this.url, {
      method: 'POST',
      headers: { ...HEADERS, 'Mcp-Session-Id': this.id },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await initialized.text();
  }

  /** Calls `ticker` and reads its stream to the result (or until `stopAfter` ticks). */
  async ticker(
    n: number,
    intervalMs: number,
    onTick?: (tick: Tick) => void,
    stopAfter = Infinity,
  ): Promise<{ ticks: number; ids: string[]; finished: boolean }> {
    const controller = new AbortController();
    const id = this.nextId++;
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { ...HEADERS, 'Mcp-Session-Id': this.id },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'ticker', arguments: { n, intervalMs }, _meta: { progressToken: id } },
      }),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(`ticker: ${response.status} ${await response.text()}`);
    return this.read(response, onTick, stopAfter, controller);
  }

  /** Resumes a stream with Last-Event-ID and reads it to its end. */
  async resume(lastEventId: string, onTick?: (tick: Tick) => void) {
    const controller = new AbortController();
    const response = await fetch(this.url, {
      signal: controller.signal,
      headers: {
        Accept: 'text/event-stream',
        'Mcp-Session-Id': this.id,
        'MCP-Protocol-Version': '2025-11-25',
        'Last-Event-ID': lastEventId,
      },
    });
    if (!response.ok) throw new Error(`resume: ${response.status} ${await response.text()}`);
    return this.read(response, onTick, Infinity, controller, IDLE_MS);
  }

  /** Opens the session's standalone GET stream (held open by the server); closes on abort. */
  async listen(signal: AbortSignal): Promise<void> {
    const response = await fetch(this.url, {
      headers: {
        Accept: 'text/event-stream',
        'Mcp-Session-Id': this.id,
        'MCP-Protocol-Version': '2025-11-25',
      },
      signal,
    });
    if (!response.ok) throw new Error(`listen: ${response.status} ${await response.text()}`);
    void readSse(response, () => undefined).catch(() => undefined);
  }

  /**
   * Resumes and reads to the stream's final response as a client does: when the server closes the
   * stream first (a slow reader), it resumes again from the last id it got.
   */
  async resumeToEnd(
    lastEventId: string,
    onTick?: (tick: Tick) => void,
  ): Promise<{ ticks: number; reconnects: number }> {
    let from = lastEventId;
    let ticks = 0;
    for (let reconnects = 0; ; reconnects++) {
      const read = await this.resume(from, onTick);
      ticks += read.ticks;
      if (read.finished) return { ticks, reconnects };
      // A server that replays nothing more and never ends the stream has lost the rest.
      if (read.ticks === 0) return { ticks, reconnects };
      if (reconnects >= 1_000) throw new Error('resume: the stream never reached its end');
      from = read.ids.at(-1) ?? from;
    }
  }

  private async read(
    response: Response,
    onTick: ((tick: Tick) => void) | undefined,
    stopAfter: number,
    controller: AbortController,
    idleMs?: number,
  ): Promise<{ ticks: number; ids: string[]; finished: boolean }> {
    let ticks = 0;
    let finished = false;
    const ids: string[] = [];
    // A replay that stays open with nothing more to say is given up after idleMs.
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      if (idleMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(), idleMs);
    };
    arm();
    await readSse(
      response,
      (event) => {
        arm();
        if (event.id !== undefined) ids.push(event.id);
        if (event.data === '') return;
        // Progress lines are recognised without a full parse; the result ends the stream.
        if (event.data.includes('"notifications/progress"')) {
          ticks++;
          if (onTick !== undefined) {
            const message = JSON.parse(event.data) as {
              params: { progress: number; message: string };
            };
            onTick({
              i: message.params.progress,
              emittedMs: Number(message.params.message),
              receivedMs: nowMs(),
              id: event.id,
            });
          }
          if (ticks >= stopAfter) return false;
          return;
        }
        if (event.data.includes('"result"') || event.data.includes('"error"')) {
          finished = true;
          return false;
        }
      },
      controller,
    );
    clearTimeout(idle);
    return { ticks, ids, finished };
  }
}
