// The official Go SDK (go-sdk, pinned in test/interop/go-client/go.mod), unmodified, through
// test/interop/go-client: pinned to each revision it speaks for the handshake, its default after
// (2026-07-28, the stateless lane).
import { expect } from 'vitest';
import { goMcpClient } from '../support/prerequisites.js';
import { processDriver } from './process-driver.js';
import { sessionSuite } from './session-suite.js';

sessionSuite(
  'go',
  processDriver(goMcpClient, [], {
    revisions: ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28', undefined],
    cut: {
      outcome: 'limit',
      seen: 'its default is 2026-07-28, whose response streams are not resumable (by design): a cut fails the call ("request terminated"); pinned to 2025-11-25 it resumes with Last-Event-ID, every update once, exact result',
      expect: (outcome) => expect(outcome.error).toMatch(/request terminated/),
      resumesWith: '2025-11-25',
      instead:
        'for a call that may outlive its connection set `ClientSessionOptions.ProtocolVersion` to "2025-11-25" (the session lane) or run it as a task.',
    },
  }),
);
