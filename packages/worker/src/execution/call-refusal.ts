import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { JsonRpcErrorCodes } from '@tidemark/protocol';
import type { RunDecision } from './run-decision.js';

/**
 * Why a session's request is answered with an error instead of run: not a request the SDK accepts
 * (it would drop it without an answer), a call that has been executed too often without finishing,
 * or too many calls of its session running.
 */
export function callRefusal(
  message: JSONRPCMessage,
  verdict: RunDecision,
  running: number,
  limits: { readonly maxConcurrentCalls: number },
): { code: number; message: string } | undefined {
  if (!isJSONRPCRequest(message))
    return {
      code: JsonRpcErrorCodes.invalidRequest,
      message: 'Invalid Request: not a JSON-RPC 2.0 request',
    };
  if (verdict.kind === 'refuse') return verdict.error;
  // One busy session must not hold the partition (and every other session on it) back.
  if (running >= limits.maxConcurrentCalls)
    return {
      code: JsonRpcErrorCodes.badRequest,
      message: `Too many concurrent requests in this session (limit ${limits.maxConcurrentCalls}); retry later`,
    };
  return undefined;
}
