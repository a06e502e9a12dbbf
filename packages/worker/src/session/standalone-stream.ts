import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { GenerationWriter } from '@tidemark/log';
import { STANDALONE_STREAM, type SessionId } from '@tidemark/protocol';
import type { CallEnvironment } from '../execution/index.js';

/**
 * A session's standalone stream: what its server sends outside any call (a tools list change, a
 * request of its own), for the client's `GET` listener. Its generation begins at the first such
 * message after the session came to this worker; a write the log refused poisons it, so the next
 * message begins another (a reset for the listener) instead of failing forever.
 */
export class StandaloneStream {
  private generation: Promise<GenerationWriter> | undefined;

  constructor(
    private readonly environment: CallEnvironment,
    private readonly session: SessionId,
  ) {}

  async send(message: JSONRPCMessage): Promise<void> {
    const { heads, writer } = this.environment;
    const generation = (this.generation ??= heads
      .get(this.session, STANDALONE_STREAM)
      .then((previous) => writer.begin(this.session, STANDALONE_STREAM, { previous })));
    try {
      await (await generation).send(message);
    } catch (error) {
      if (this.generation === generation) this.generation = undefined;
      throw error;
    }
  }
}
