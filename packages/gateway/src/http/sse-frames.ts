// Server-sent events as the WHATWG spec frames them, written in one place for every stream a
// deployment serves (the gateway's MCP streams, the console's live tail). Data is one line: every
// payload here is JSON, which has no raw newline.

/** One event: `id:` when given, `event:` when not the default `message`, then its data. */
export function sseFrame(frame: { id?: string | undefined; event?: string; data: string }): string {
  return `${frameHead(frame.id, frame.event)}${frame.data}\n\n`;
}

/**
 * A `message` event whose data is a message's JSON bytes as the log holds them (one line): framed
 * around them in one buffer, its bytes never decoded. They are copied, so a view into a fetched
 * batch is not held past this call.
 */
export function sseMessageBytes(id: string | undefined, data: Uint8Array): Buffer {
  const head = frameHead(id, 'message');
  const headLength = Buffer.byteLength(head);
  const frame = Buffer.allocUnsafe(headLength + data.length + 2);
  frame.write(head, 0, headLength, 'utf8');
  frame.set(data, headLength);
  frame[frame.length - 2] = 0x0a;
  frame[frame.length - 1] = 0x0a;
  return frame;
}

/** An event's lines before its data, up to `data: `. */
function frameHead(id: string | undefined, event: string | undefined): string {
  const idLine = id === undefined ? '' : `id: ${id}\n`;
  return event === undefined ? `${idLine}data: ` : `${idLine}event: ${event}\ndata: `;
}

/** A comment line: ignored by clients, it keeps proxies from closing an idle connection. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}
