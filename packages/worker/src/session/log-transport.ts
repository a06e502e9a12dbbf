import type {
  AuthInfo,
  JSONRPCMessage,
  JSONRPCRequest,
  MessageExtraInfo,
  ScopeChallengeHandler,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/server';
import type { SessionRecord } from '@tidemark/log';
import type { RequestId } from '@tidemark/protocol';
import { scopeRefusal, type InsufficientScopeError } from '../execution/scope-challenge.js';

/** Where a session's transport sends what its server says. */
export interface TransportOwner {
  readonly session: string;
  /** Who the session's gateway authenticated, as the SDK hands it to handlers (`ctx.http.authInfo`). */
  readonly authInfo: AuthInfo | undefined;
  route(message: JSONRPCMessage, options: TransportSendOptions | undefined): Promise<void>;
}

/** The SDK's transport for one session: inbound from the `requests` topic, outbound to the log. */
export class LogTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  sessionId?: string;
  /** While restoring: outbound messages are answers to the replay, not for the client. */
  muted = false;
  private readonly waiting = new Map<RequestId, (message: JSONRPCMessage) => void>();
  private scopeChallenge: ScopeChallengeHandler | undefined;

  constructor(private readonly runtime: TransportOwner) {
    this.sessionId = runtime.session;
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * The SDK's server hands its tools' scope challenges here (`connect`); `scopeRefusal` asks
   * them before a request is handed over.
   */
  setScopeChallengeResolver(resolver: ScopeChallengeHandler): void {
    this.scopeChallenge = resolver;
  }

  /** Whether `request`'s tool refuses the credential `authInfo` for its scopes: the refusal. */
  scopeRefusal(
    request: JSONRPCRequest,
    authInfo: AuthInfo | undefined,
  ): Promise<InsufficientScopeError | undefined> {
    return scopeRefusal(this.scopeChallenge, request, authInfo);
  }

  /**
   * A message from the client (through `requests`), handed to the server; `authInfo`: its call's
   * credential, when it is a request (the session's subject otherwise).
   */
  receive(message: JSONRPCMessage, authInfo = this.runtime.authInfo): void {
    this.onmessage?.(message, authInfo === undefined ? undefined : { authInfo });
  }

  /** Hands the server a request and resolves with its answer (used muted, for the restore). */
  exchange(id: RequestId, message: JSONRPCMessage): Promise<JSONRPCMessage> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.receive(message);
    });
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.muted) {
      const id = 'id' in message ? message.id : undefined;
      const resolve = id === undefined ? undefined : this.waiting.get(id);
      if (id !== undefined && resolve !== undefined) {
        this.waiting.delete(id);
        resolve(message);
      }
      return;
    }
    await this.runtime.route(message, options);
  }

  close(): Promise<void> {
    this.onclose?.();
    return Promise.resolve();
  }
}

const RESTORE_ID = '__tidemark_restore__';

/**
 * A session restored on this worker (its partition moved, the worker restarted): its server is
 * handed the stored `initialize` again, muted, so it is in the state the client left it in.
 */
export async function replayInitialize(
  transport: LogTransport,
  record: SessionRecord,
): Promise<void> {
  const initialize = record.initialize as { params?: unknown } | undefined;
  transport.muted = true;
  try {
    await transport.exchange(RESTORE_ID, {
      jsonrpc: '2.0',
      id: RESTORE_ID,
      method: 'initialize',
      params: initialize?.params ?? {},
    } as JSONRPCMessage);
    transport.receive({ jsonrpc: '2.0', method: 'notifications/initialized' });
  } finally {
    transport.muted = false;
  }
}
