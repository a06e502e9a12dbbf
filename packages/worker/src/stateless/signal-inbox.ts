import { fromJsonSchema, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { isStepOutcome } from '@tidemark/log';
import {
  SignalErrorCodes,
  verifySignalToken,
  type LogRecord,
  type PartitionKey,
  type RequestRecord,
  type StreamId,
} from '@tidemark/protocol';
import { checkAgainst } from '@tidemark/tools';
import {
  answerRequest,
  INTERNAL_ERROR,
  type LaneContext,
  type PartitionReader,
} from '../calls/index.js';
import { restKey, type AskedSignal } from '../execution/index.js';

type SignalRecord = Extract<RequestRecord, { lane: 'stateless' }>;

/**
 * The answers POSTed to signals' URLs (`Execution.signal`), as the gateways write them to
 * `requests` under the call's key: each checked — its token, its call's journal, its schema —
 * journaled as the signal's answer if it is the first (`SignalDesk`), and answered: the gateway
 * tells its client 200, or 404 / 409 / 400 from the error written here. A call waiting here wakes
 * at once; one asleep off memory too (`wakeAsleep`); one elsewhere reads it from the journal.
 */
export class SignalInbox {
  constructor(
    private readonly lane: LaneContext,
    /** Wakes a task asleep off memory on this worker under `owner`; false when none is. */
    private readonly wakeAsleep: (owner: PartitionKey) => boolean,
  ) {}

  /** A POST to a signal's URL, as a gateway wrote it. */
  receive(reader: PartitionReader, record: LogRecord, request: SignalRecord): Promise<void> {
    return this.handle(reader, record, request, (params) =>
      this.answerOf(request.key, params, request.subject),
    );
  }

  /**
   * An operator's wake (`tidemark calls wake`): the call's sleeps not over are journaled as over
   * now, and the call wakes — here at once, or wherever its partition goes, from the journal.
   */
  wake(reader: PartitionReader, record: LogRecord, request: SignalRecord): Promise<void> {
    return this.handle(reader, record, request, (params) => this.wakeOf(request.key, params));
  }

  private async handle(
    reader: PartitionReader,
    record: LogRecord,
    request: SignalRecord,
    answerOf: (params: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ): Promise<void> {
    const message = request.message as JSONRPCMessage & { params?: Record<string, unknown> };
    let answer: Record<string, unknown>;
    try {
      answer = await answerOf(message.params ?? {});
    } catch (error) {
      this.lane.options.onProblem(`a signal's answer under ${request.key} failed`, error);
      answer = { error: INTERNAL_ERROR };
    }
    await answerRequest(this.lane, request.key, message, answer);
    reader.done(record.offset);
  }

  private async wakeOf(
    owner: PartitionKey,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const journal = params['journal'];
    if (typeof journal !== 'string') return refuse('invalid', "a wake names the call's journal");
    const { steps } = this.lane.stores;
    const now = Date.now();
    let woke = 0;
    for (const { step, ...record } of await steps.list(owner, journal as StreamId)) {
      if (!step.startsWith('sleep ') || !isStepOutcome(record) || !record.outcome.ok) continue;
      if (typeof record.outcome.value !== 'number' || record.outcome.value <= now) continue;
      await steps.put(owner, journal as StreamId, step, {
        ...record,
        outcome: { ok: true, value: now },
      });
      woke++;
    }
    if (woke > 0 && !this.lane.environment.signals.wake(owner, journal as StreamId))
      if (this.wakeAsleep(owner))
        this.lane.environment.signals.takeRing(restKey(owner, journal as StreamId));
    return { result: { woke } };
  }

  private async answerOf(
    key: PartitionKey,
    params: Record<string, unknown>,
    subject: string | undefined,
  ): Promise<Record<string, unknown>> {
    const { keyring, maxStepBytes } = this.lane.options;
    const { steps } = this.lane.stores;
    const verified =
      keyring === undefined ? undefined : verifySignalToken(keyring, params['token'], Date.now());
    // A token the gateway let through names this very key: one written under another is not its.
    if (verified?.ok !== true || verified.claim.owner !== key)
      return refuse('unknown', 'no such signal');
    const owner = key;
    const journal = verified.claim.journal as StreamId;
    const { name } = verified.claim;
    const asked = await steps.get(owner, journal, `signal ${name}`);
    if (asked === undefined || !isStepOutcome(asked) || !asked.outcome.ok)
      return refuse('unknown', 'no such signal: its call has none (or was forgotten)');
    const value = params['value'];
    const bytes = Buffer.byteLength(JSON.stringify(value ?? null));
    if (bytes > maxStepBytes)
      return refuse('invalid', `the answer takes ${bytes} bytes, more than ${maxStepBytes}`);
    const { schema } = asked.outcome.value as AskedSignal;
    if (schema !== undefined) {
      const checked = await checkAgainst(fromJsonSchema(schema), value);
      if (!checked.ok)
        return refuse('invalid', `the answer does not fit the signal's schema: ${checked.message}`);
    }
    const desk = this.lane.environment.signals;
    const { taken, record } = await desk.answer(owner, journal, name, {
      value,
      ...(subject === undefined ? {} : { subject }),
    });
    if (!taken)
      return record.outcome.ok
        ? refuse('answered', `the signal was answered at ${new Date(record.atMs).toISOString()}`)
        : refuse('unknown', 'the signal expired');
    // Asleep off memory here: woken now (the ring kept for a call resting in memory is not needed).
    if (this.wakeAsleep(owner)) desk.takeRing(restKey(owner, journal));
    return { result: { answered: true, at: new Date(record.atMs).toISOString() } };
  }
}

function refuse(why: keyof typeof SignalErrorCodes, message: string): Record<string, unknown> {
  return { error: { code: SignalErrorCodes[why], message } };
}
