import type { Response } from 'express';
import type { HttpRefusal } from './http-refusals.js';
import { recordRefusal } from '@tidemark/otel';

/**
 * Writes a refusal as the whole answer: its headers, its status and a JSON-RPC error. Every 4xx is
 * counted by its reason (`tidemark.gateway.refusals`). Guards and lanes decide; only this writes.
 */
export function sendRefusal(res: Response, refusal: HttpRefusal): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(refusal.headers ?? {})) res.setHeader(name, value);
  if (refusal.status >= 400 && refusal.status < 500) recordRefusal(refusal.status, refusal.reason);
  res.status(refusal.status).json({
    jsonrpc: '2.0',
    id: refusal.id ?? null,
    error: {
      code: refusal.code,
      message: refusal.message,
      ...(refusal.data === undefined ? {} : { data: refusal.data }),
    },
  });
}

/** A guard's verdict: go on (with what it found), or the refusal to answer. */
export type Checked<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly refusal: HttpRefusal };

export const pass = <T>(value: T): Checked<T> => ({ ok: true, value });
export const refuse = (refusal: HttpRefusal): { ok: false; refusal: HttpRefusal } => ({
  ok: false,
  refusal,
});
