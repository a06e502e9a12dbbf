// Server-sent events as the WHATWG spec frames them, written in one place for every stream a
// deployment serves (the gateway's MCP streams, the console's live tail). Data is one line: every
// payload here is JSON, which has no raw newline.

/** One event: `id:` when given, `event:` when not the default `message`, then its data. */
export function sseFrame(frame: { id?: string | undefined; event?: string; data: string }): string {
  const id = frame.id === undefined ? '' : `id: ${frame.id}\n`;
  const event = frame.event === undefined ? '' : `event: ${frame.event}\n`;
  return `${id}${event}data: ${frame.data}\n\n`;
}

/**
 * A `message` event whose data is a message's JSON bytes as the log holds them (one line): framed
 * around them in one buffer, so that an event is one write and its bytes are never decoded. The
 * bytes are copied, so a view into a fetched batch is not held past this call.
 */
export function sseMessageBytes(id: string | undefined, data: Uint8Array): Buffer {
  const head = id === undefined ? MESSAGE_HEAD : `id: ${id}\n${MESSAGE_HEAD}`;
  const headLength = Buffer.byteLength(head);
  const frame = Buffer.allocUnsafe(headLength + data.length + 2);
  frame.write(head, 0, headLength, 'utf8');
  frame.set(data, headLength);
  frame[frame.length - 2] = 0x0a;
  frame[frame.length - 1] = 0x0a;
  return frame;
}

const MESSAGE_HEAD = 'event: message\ndata: ';

/** A comment line: ignored by clients, it keeps proxies from closing an idle connection. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}
