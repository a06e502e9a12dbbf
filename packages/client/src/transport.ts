import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  answerInBody,
  backoffMs,
  JsonRpcErrorCodes,
  statelessRequest,
  TASKS_EXTENSION,
} from '@tidemark/protocol';
import { McpRequestError } from './errors.js';

export interface TransportOptions {
  readonly url: string | URL;
  readonly clientInfo?: { readonly name: string; readonly version: string };
  readonly headers?: Record<string, string> | (() => Record<string, string>);
  /** Declares the `elicitation` capability (the host can answer input requests). */
  readonly elicitation: boolean;
  readonly unavailableForMs?: number;
  readonly fetch?: typeof fetch;
}

/**
 * Requests of the 2026-07-28 stateless lane, each a POST carrying its own envelope (protocol
 * version, client info, capabilities with the Tasks extension declared). A gateway that cannot be
 * reached or answers 5xx (a restart, a failover) is tried again until `unavailableForMs`.
 */
export class StatelessTransport {
  private readonly fetch: typeof fetch;

  constructor(private readonly options: TransportOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * One request; resolves with its result, rejects with its JSON-RPC error. An answer cut off
   * mid-body (its gateway died while sending it) is asked again. A `tools/call` carries an
   * idempotency key (`idempotencyKey`, else a fresh one), the same on every try: asked again, it
   * joins the execution the first try started instead of starting another.
   */
  async request(
    method: string,
    params: Record<string, unknown>,
    name: string,
    signal?: AbortSignal,
    idempotencyKey?: string,
  ): Promise<Record<string, unknown>> {
    const deadline = this.deadline();
    const key = method === 'tools/call' ? (idempotencyKey ?? randomUUID()) : undefined;
    for (let attempt = 0; ; attempt++) {
      const response = await this.post(method, params, name, signal, deadline, key);
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (signal?.aborted || Date.now() > deadline) throw error;
        await backoff(attempt, signal);
        continue;
      }
      return answerOf(text, response.status);
    }
  }

  /** One request's HTTP response, for a caller that reads its stream as it comes. */
  async post(
    method: string,
    params: Record<string, unknown>,
    name: string,
    signal?: AbortSignal,
    deadline = this.deadline(),
    idempotencyKey?: string,
  ): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const { headers, body } = statelessRequest(method, params, {
        clientInfo: this.options.clientInfo ?? { name: '@tidemark/client', version: '0.1.0' },
        capabilities: {
          extensions: { [TASKS_EXTENSION]: {} },
          ...(this.options.elicitation ? { elicitation: { form: {} } } : {}),
        },
        name,
      });
      const extra =
        typeof this.options.headers === 'function' ? this.options.headers() : this.options.headers;
      let response: Response;
      try {
        response = await this.fetch(this.options.url, {
          method: 'POST',
          headers: {
            ...headers,
            ...(idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey }),
            ...extra,
          },
          body,
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (signal?.aborted || Date.now() > deadline) throw error;
        await backoff(attempt, signal);
        continue;
      }
      if (response.status >= 500 && Date.now() <= deadline) {
        await response.body?.cancel();
        await backoff(attempt, signal);
        continue;
      }
      return response;
    }
  }

  /** When a gateway that cannot be reached (or answers 5xx) has been tried long enough. */
  private deadline(): number {
    return Date.now() + (this.options.unavailableForMs ?? 60_000);
  }
}

const backoff = (attempt: number, signal?: AbortSignal) =>
  sleep(backoffMs(attempt, { maxMs: 2_000 }), undefined, signal ? { signal } : undefined);

/** The result of a JSON or SSE answer body, or its JSON-RPC error thrown. */
function answerOf(text: string, status: number): Record<string, unknown> {
  const answer = answerInBody(text);
  if (answer === undefined)
    throw new McpRequestError(JsonRpcErrorCodes.internalError, `no answer (HTTP ${status})`);
  if ('error' in answer) {
    const { code, message, data } = answer.error;
    throw new McpRequestError(
      typeof code === 'number' ? code : JsonRpcErrorCodes.internalError,
      typeof message === 'string' ? message : `HTTP ${status}`,
      data,
    );
  }
  return answer.result;
}
