import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import { JsonRpcErrorCodes } from '@tidemark/protocol';

/** Limits on what one POST body may hold, checked before anything is written to the log. */
export interface InboundLimits {
  /** Deepest nesting of objects and arrays in a message. */
  maxDepth: number;
  /** Messages in one JSON-RPC batch (2025-03-26 only). */
  maxBatch: number;
}

/** A body the gateway may write to the log, or why not (a 400 with a JSON-RPC error). */
export type Inbound =
  | { ok: true; messages: JSONRPCMessage[]; batch: boolean }
  | { ok: false; code: number; message: string; id: string | number | null };

/**
 * The one inbound check for both lanes: a message is accepted only if the SDK's own JSON-RPC
 * schemas accept it (strict: no extra members, integer ids, object params), so the gateway never
 * writes to the log what the worker's SDK would drop without an answer. Depth is checked first,
 * without recursion, so a deeply nested body cannot exhaust the stack of anything after it.
 */
export function parseInbound(body: unknown, limits: InboundLimits): Inbound {
  const id = idOf(body);
  const depth = depthOf(body, limits.maxDepth);
  if (depth > limits.maxDepth) {
    return invalid(`nested deeper than ${limits.maxDepth} levels`, id);
  }
  const batch = Array.isArray(body);
  const messages: unknown[] = batch ? body : [body];
  if (messages.length === 0) return invalid('an empty batch', null);
  if (messages.length > limits.maxBatch) {
    return invalid(`a batch of ${messages.length} messages (at most ${limits.maxBatch})`, null);
  }
  for (const message of messages) {
    if (!isJsonRpcMessage(message)) {
      return invalid('not a JSON-RPC 2.0 message the MCP schema accepts', batch ? null : id);
    }
  }
  return { ok: true, messages: messages as JSONRPCMessage[], batch };
}

function isJsonRpcMessage(value: unknown): value is JSONRPCMessage {
  return (
    isJSONRPCRequest(value) ||
    isJSONRPCNotification(value) ||
    isJSONRPCResultResponse(value) ||
    isJSONRPCErrorResponse(value)
  );
}

function invalid(what: string, id: string | number | null): Inbound {
  return {
    ok: false,
    code: JsonRpcErrorCodes.invalidRequest,
    message: `Invalid Request: ${what}`,
    id,
  };
}

/** The request id to answer with, when the body has a usable one. */
function idOf(body: unknown): string | number | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const id = (body as { id?: unknown }).id;
  if (typeof id === 'string' && id.length <= 256) return id;
  return typeof id === 'number' && Number.isSafeInteger(id) ? id : null;
}

/** Nesting depth of a parsed JSON value, counted up to `stopAbove + 1`. */
function depthOf(value: unknown, stopAbove: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > stopAbove) return deepest;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether a body's bytes nest objects and arrays deeper than `maxDepth`, read before `JSON.parse`:
 * parsing four megabytes of `[[[[…` costs a second of event loop, this scan a few milliseconds.
 * Brackets inside strings do not count; a body that is not JSON is left for the parser to refuse.
 */
export function nestsDeeperThan(body: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}
