// The rounds of a task whose tool asks for input (multi-round-trip `inputRequired`): what a round
// answered, and the call the next round runs.
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/server';

/** The `inputRequired` answer of a round (multi-round-trip requests), if that is what it is. */
export function inputRequiredOf(
  answer: JSONRPCMessage,
): { inputRequests: Record<string, unknown>; requestState?: unknown } | undefined {
  const result = (answer as { result?: Record<string, unknown> }).result;
  if (result?.['resultType'] !== 'input_required') return undefined;
  const inputRequests = result['inputRequests'];
  if (typeof inputRequests !== 'object' || inputRequests === null) return undefined;
  return {
    inputRequests: inputRequests as Record<string, unknown>,
    ...(result['requestState'] === undefined ? {} : { requestState: result['requestState'] }),
  };
}

/** The same call again with the client's answers, as a multi-round-trip retry carries them. */
export function nextRound(
  message: JSONRPCRequest,
  inputResponses: Record<string, unknown>,
  requestState: unknown,
): JSONRPCRequest {
  const params = { ...message.params, inputResponses };
  if (requestState !== undefined) Object.assign(params, { requestState });
  return { ...message, params };
}
