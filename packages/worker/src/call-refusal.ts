import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { JsonRpcErrorCodes } from '@tidemark/protocol';

/**
 * Why a session's request is answered with an error instead of run: not a request the SDK accepts
 * (it would drop it without an answer), a call that has been executed too often without finishing,
 * or too many calls of its session running.
 */
export function callRefusal(
  message: JSONRPCMessage,
  attempt: number,
  running: number,
  limits: { readonly maxExecutionsPerCall: number; readonly maxConcurrentCalls: number },
): { code: number; message: string } | undefined {
  if (!isJSONRPCRequest(message))
    return {
      code: JsonRpcErrorCodes.invalidRequest,
      message: 'Invalid Request: not a JSON-RPC 2.0 request',
    };
  if (attempt > limits.maxExecutionsPerCall)
    return {
      code: JsonRpcErrorCodes.internalError,
      message: `Internal error: the call was started ${attempt - 1} times without finishing (limit ${limits.maxExecutionsPerCall}); it is not run again`,
    };
  // One busy session must not hold the partition (and every other session on it) back.
  if (running >= limits.maxConcurrentCalls)
    return {
      code: JsonRpcErrorCodes.badRequest,
      message: `Too many concurrent requests in this session (limit ${limits.maxConcurrentCalls}); retry later`,
    };
  return undefined;
}
