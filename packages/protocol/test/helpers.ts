import {
  createKeyring,
  encodeEventId,
  type EventPosition,
  type Generation,
  type LogIdentity,
  type SessionId,
  type StampedRecord,
  type StreamId,
  type WorkerEpoch,
} from '../src/index.js';

export const session = 'c2Vzc2lvbi1vbmUtMTIzNDU2' as SessionId;
export const otherSession = 'b3RoZXItc2Vzc2lvbi05ODc2' as SessionId;
export const log: LogIdentity = { clusterId: 'cluster-a', topicId: 'topic-events-1' };
export const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
export const stream = 'n7' as StreamId;

export const epochA = 'aaaaaaaaaaaaaaaaaaaa' as WorkerEpoch;
export const epochB = 'bbbbbbbbbbbbbbbbbbbb' as WorkerEpoch;
export const gen = (epoch: WorkerEpoch, attempt: number): Generation => ({ epoch, attempt });

export function idFor(
  position: Partial<EventPosition> & { offset: bigint },
  sessionId = session,
): string {
  return encodeEventId(
    { logIdentity: log, partition: 0, generation: undefined, seq: 0, stream, ...position },
    sessionId,
    keyring,
  );
}

/** Records of one stream for one generation: a start at `from`, then messages 1..n at the next offsets. */
export function generationRecords(
  generation: Generation,
  from: bigint,
  messages: number,
  terminal = false,
): StampedRecord<string>[] {
  const records: StampedRecord<string>[] = [
    {
      offset: from,
      stamp: {
        stream,
        generation,
        seq: 0,
        kind: 'generation-start',
        cause: generation.attempt === 1 ? 'first' : 'takeover',
      },
    },
  ];
  for (let seq = 1; seq <= messages; seq++) {
    const kind = terminal && seq === messages ? 'terminal' : 'message';
    records.push({
      offset: from + BigInt(seq),
      stamp: { stream, generation, seq, kind },
      payload: `${generation.epoch[0]}${generation.attempt}:${seq}`,
    });
  }
  return records;
}
