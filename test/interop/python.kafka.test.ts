// The official Python SDK (`mcp` on PyPI, pinned in test/interop/python/requirements.txt),
// unmodified, through test/interop/python/session_client.py: its default mode probes
// server/discover, so against Tidemark it speaks 2026-07-28 unless told `legacy`.
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { pythonWithMcp } from '../support/prerequisites.js';
import { processDriver } from './process-driver.js';
import { sessionSuite } from './session-suite.js';

const script = fileURLToPath(new URL('python/session_client.py', import.meta.url));

sessionSuite(
  'python',
  processDriver(pythonWithMcp, [script], {
    revisions: ['auto', 'legacy', '2026-07-28'],
    cut: {
      outcome: 'limit',
      seen: 'its default mode adopts 2026-07-28, whose response streams are not resumable: a cut fails the call ("SSE stream ended without a response"); with `mode="legacy"` it resumes with Last-Event-ID, every update once, exact result',
      expect: (outcome) => expect(outcome.error).toMatch(/SSE stream ended without a response/),
      resumesWith: 'legacy',
      instead:
        'for a call that may outlive its connection pass `mode="legacy"` (the session lane: it reconnects twice, after the server\'s `retry:` hint) or run it as a task.',
    },
  }),
);
