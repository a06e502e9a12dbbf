import counting from '@tidemark/examples/counting';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { goMcpClient } from '../support/prerequisites.js';
import { startProcess } from '../support/processes.js';

// The official Go SDK (go-sdk 1.8.0, built from test/interop/go-client), unmodified, pinned to each
// revision it can speak: the session lane's four (2024-11-05 had every request after initialize
// refused before the gateway stored the agreed revision) and 2026-07-28's stateless lane.

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('the official Go SDK client, pinned to each revision', () => {
  it.each(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'])(
    '%s: negotiated as pinned, lists the tools, calls count with exact progress and result',
    async (revision) => {
      const stack = await embeddedStack({ modules: [counting] });
      onTestFinished(() => stack.stop());
      const client = startProcess(onTestFinished, goMcpClient(), [
        stack.gateways[0]!.url,
        revision,
        '5',
        '10',
      ]);
      const final = await client.waitFor((e) => 'result' in e || 'error' in e, 60_000);
      expect(final).toEqual({ result: numbers(5).join(',') });
      expect(client.events[0]).toEqual({ negotiated: revision });
      expect(client.events[1]).toEqual({ tools: ['count', 'flaky_count'] });
      const progress = client.events.flatMap((e) =>
        typeof e['progress'] === 'number' ? [e['progress']] : [],
      );
      expect(progress).toEqual(numbers(5));
    },
  );
});
