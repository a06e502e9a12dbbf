// Server-sent events as the WHATWG spec frames them, written in one place for every stream a
// deployment serves (the gateway's MCP streams, the console's live tail). Data is one line: every
// payload here is JSON, which has no raw newline.

/** One event: `id:` when given, `event:` when not the default `message`, then its data. */
export function sseFrame(frame: { id?: string | undefined; event?: string; data: string }): string {
  const id = frame.id === undefined ? '' : `id: ${frame.id}\n`;
  const event = frame.event === undefined ? '' : `event: ${frame.event}\n`;
  return `${id}${event}data: ${frame.data}\n\n`;
}

/** A comment line: ignored by clients, it keeps proxies from closing an idle connection. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}
