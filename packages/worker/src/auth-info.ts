import type { AuthInfo } from '@modelcontextprotocol/server';

/**
 * The SDK's `authInfo` for a call whose gateway authenticated `subject`: the subject in
 * `extra.subject` (also `currentExecution().subject`). The bearer token never enters the log, so
 * `token` is empty and `clientId` unknown; a tool authorizes by the subject.
 */
export function authInfoOf(subject: string | undefined): AuthInfo | undefined {
  if (subject === undefined) return undefined;
  return { token: '', clientId: '', scopes: [], extra: { subject } };
}
