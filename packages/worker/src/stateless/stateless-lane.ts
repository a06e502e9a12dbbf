import type {
  JSONRPCMessage,
  JSONRPCRequest,
  MessageClassification,
} from '@modelcontextprotocol/server';
import {
  SIGNAL_METHOD,
  streamHeadKey,
  WAKE_METHOD,
  TASK_CANCEL_METHOD,
  requestStreamId,
  TASK_UPDATE_METHOD,
  type LogRecord,
  type RequestId,
  type RequestRecord,
  type RoutingKey,
  type PartitionKey,
} from '@tidemark/protocol';
import { context } from '@opentelemetry/api';
import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME } from '@tidemark/otel';
import { Call } from '../calls/index.js';
import { Asleep, authInfoOf, ScopeChecker, toolCallOf, writeAudit } from '../execution/index.js';
import { SignalInbox } from './signal-inbox.js';
import { asleepRecord, Sleepers } from './sleepers.js';
import { IdempotentCalls, type Decided } from './idempotent-calls.js';
import { StatelessExchange } from './stateless-exchange.js';
import type { PartitionReader } from '../calls/index.js';
import { answerFailure, type LaneContext, type StatelessRequest } from '../calls/index.js';

type StatelessRecord = Extract<RequestRecord, { lane: 'stateless' }>;

/**
 * The stateless lane (2026-07-28) on a worker: each request, without a session, served by a
 * `StatelessExchange`; a `notifications/cancelled` with the same key (the client closed its stream)
 * cancels it.
 */
export class StatelessLane {
  /** Requests running, by their routing key. */
  // Keyed by any owner's key, so that housekeeping may ask of one whether it runs here.
  private readonly exchanges = new Map<PartitionKey, StatelessExchange>();
  private readonly keyed: IdempotentCalls;
  /** Tasks asleep off memory (`ex.sleep`), until they wake. */
  private readonly sleepers = new Sleepers();
  /** Answers POSTed to signals' URLs (`ex.signal`), and operators' wakes. */
  private readonly signals: SignalInbox;
  private readonly scopes: ScopeChecker;

  constructor(private readonly lane: LaneContext) {
    this.keyed = new IdempotentCalls(lane);
    this.scopes = new ScopeChecker(lane.environment);
    this.signals = new SignalInbox(lane, (owner) => this.sleepers.wakeNow(owner, false));
  }

  /** Whether a request of `key` runs here, or its task sleeps here (`ex.sleep`). */
  isRunning(key: PartitionKey): boolean {
    return this.exchanges.has(key) || this.sleepers.has(key);
  }

  /**
   * A request of the lane, read from its partition — or dispatched again when its task wakes
   * (`woken`; `cancelled` when the client cancelled it while it slept).
   */
  async dispatch(
    reader: PartitionReader,
    record: LogRecord,
    request: StatelessRecord,
    woken?: { readonly cancelled: boolean; readonly progress: number },
  ): Promise<void> {
    const { key, message, classification, subject, caller, tasks, idempotent } = request;
    const { offset } = record;
    if (!('id' in message) || !('method' in message)) {
      await this.notify(key, message);
      return reader.done(offset);
    }
    if (message['method'] === SIGNAL_METHOD) return this.signals.receive(reader, record, request);
    if (message['method'] === WAKE_METHOD) return this.signals.wake(reader, record, request);
    let claim: Decided | undefined;
    if (idempotent === true && message['method'] === 'tools/call') {
      if (await this.refusedForScopes(request)) return reader.done(offset);
      const keyed = message as unknown as Parameters<IdempotentCalls['decide']>[3];
      const decided = await this.keyed.decide(reader, offset, key, keyed, this.exchanges.get(key));
      if (decided === 'answered') return;
      claim = decided;
    }
    const rpc = message as unknown as JSONRPCMessage & { id: RequestId; method: string };
    const call = await Call.take(
      this.lane,
      reader,
      record,
      rpc.method,
      {
        [ATTR_MCP_METHOD_NAME]: rpc.method,
        [ATTR_JSONRPC_REQUEST_ID]: String(rpc.id),
      },
      // A woken task waits for a task slot before it reads or writes anything: a storm of wakes
      // does not crowd the log ahead of the slots that would run them.
      woken === undefined ? 'call' : 'task',
    );
    // Revoked (or being handed off) while it waited: the partition's next owner runs it.
    if (reader.signal.aborted || reader.handingOff) return call.finish('stopped');
    const exchange = this.exchange(call, key, rpc, {
      classification,
      subject,
      caller,
      tasks,
      claim,
      woken: woken === undefined ? undefined : { progress: woken.progress },
    });
    this.exchanges.set(key, exchange);
    if (woken?.cancelled === true) exchange.cancel();
    let asleep: Asleep | undefined;
    void context
      .with(call.context, () => exchange.run())
      .catch(async (error: unknown) => {
        if (error instanceof Asleep) return void (asleep = error);
        if (exchange.abandoned) return; // the partition's next owner runs it
        this.lane.options.onProblem(
          `stateless request ${reader.partition}@${record.offset} failed`,
          error,
        );
        await answerFailure(this.lane, key, rpc);
      })
      .finally(() => {
        // A later exchange of the same key (the partition came back) is not this one's to drop.
        if (this.exchanges.get(key) === exchange) this.exchanges.delete(key);
        // Asleep: the call ends unanswered, its request uncommitted; it is dispatched again on time.
        if (asleep !== undefined && !exchange.abandoned) {
          call.finish('stopped');
          return this.sleep(reader, record, request, asleep);
        }
        // Abandoned (the partition went elsewhere): not done — the revocation's commit must stay
        // below it, so the next owner runs it.
        if (exchange.abandoned) return call.finish('stopped');
        // Nothing resumes a stateless request: its head only guards against running it twice
        // until its offset is committed. (A task's own stream is kept: its head holds the outcome
        // `tasks/get` reads; so is a keyed call's: later requests with its key get its outcome.)
        if (claim === undefined)
          reader.forgetOnCommit(record.offset, streamHeadKey(key, exchange.stream));
        call.finish('answered');
      });
  }

  private exchange(
    call: Call,
    key: RoutingKey,
    message: JSONRPCMessage & { id: RequestId; method: string },
    request: Pick<StatelessRecord, 'classification' | 'subject' | 'caller' | 'tasks'> & {
      claim: Decided | undefined;
      woken: StatelessRequest['woken'];
    },
  ): StatelessExchange {
    return new StatelessExchange(this.lane, {
      key,
      subject: request.subject,
      caller: request.caller,
      message,
      classification: request.classification as MessageClassification,
      mode: request.tasks ?? 'never',
      claim: request.claim,
      woken: request.woken,
      idle: (waiting) => call.idle(waiting),
      asTask: () => call.asTask(),
    });
  }

  /**
   * Keeps a task asleep off memory until `wakeAtMs`, then dispatches its request again. (A method
   * of its own: a closure made in `dispatch` would keep that call's whole scope — its exchange,
   * execution and span — alive for the sleep.)
   */
  private sleep(
    reader: PartitionReader,
    record: LogRecord,
    request: StatelessRecord,
    { wakeAtMs, progress, restKey }: Asleep,
  ): void {
    const kept = asleepRecord(record);
    // Its signal was answered while it went to sleep: it wakes at once.
    const answered = restKey !== undefined && this.lane.environment.signals.takeRing(restKey);
    this.sleepers.add(request.key, reader, answered ? 0 : wakeAtMs, (cancelled) => {
      this.dispatch(reader, kept, request, { cancelled, progress }).catch((error: unknown) =>
        this.lane.options.onProblem(`task ${request.key}: its wake failed`, error),
      );
    });
  }

  /**
   * A keyed call's outcome may be an earlier call's: without the scopes its tool needs it is
   * refused here, before its key is looked at (answered: true).
   */
  private async refusedForScopes(request: StatelessRecord): Promise<boolean> {
    const { key, message, subject, caller } = request;
    const refusal = await this.scopes.refusal(
      message as unknown as JSONRPCRequest,
      authInfoOf(subject, caller),
    );
    if (refusal === undefined) return false;
    await writeAudit(
      this.lane.environment,
      {
        owner: key,
        stream: requestStreamId(message.id as RequestId),
        subject,
        caller,
        idempotent: true,
      },
      { ...toolCallOf(message), outcome: 'refused', reason: refusal },
      0,
      () => false,
    );
    await answerFailure(this.lane, key, message as JSONRPCMessage, refusal);
    return true;
  }

  /** A session's keyed call, on the worker that owns its key: decided, then passed on to its session. */
  keyedSession(
    reader: PartitionReader,
    record: LogRecord,
    keyed: Extract<RequestRecord, { lane: 'keyed-session' }>,
  ): Promise<void> {
    return this.keyed.forSession(reader, record, keyed, this.exchanges.get(keyed.key));
  }

  /** The partitions went elsewhere: their requests stop here, unanswered, for the next owner. */
  dropPartitions(partitions: readonly number[]): void {
    const dropped = new Set(partitions);
    this.sleepers.drop(dropped);
    for (const [key, exchange] of this.exchanges)
      if (dropped.has(this.lane.stores.heads.partitionOf(key))) exchange.abandon();
  }

  /**
   * A notification for a running request: the client closed its stream, or a gateway passes on a
   * `tasks/update` or `tasks/cancel` of the task running under this key. For a request not
   * running here (finished, or never a task) it changes nothing.
   */
  private async notify(key: RoutingKey, message: Readonly<Record<string, unknown>>): Promise<void> {
    const exchange = this.exchanges.get(key);
    const method = message['method'];
    // A task asleep here, cancelled: woken now to record it (nothing of its tool runs again).
    if (exchange === undefined && method === TASK_CANCEL_METHOD) this.sleepers.wakeNow(key, true);
    if (exchange === undefined) return;
    if (method === 'notifications/cancelled' || method === TASK_CANCEL_METHOD) exchange.cancel();
    if (method === TASK_UPDATE_METHOD) {
      const responses = (message['params'] as { inputResponses?: unknown } | undefined)
        ?.inputResponses;
      if (typeof responses === 'object' && responses !== null)
        await exchange
          .answer(responses as Record<string, unknown>)
          .catch((error: unknown) =>
            this.lane.options.onProblem(`task ${key}: an answer was not recorded`, error),
          );
    }
  }
}
