import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDevServer } from '../support/dev-server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** An official client that answers elicitations, on the lane its version pin chooses. */
async function clientAnswering(
  url: string,
  confirm: boolean | 'decline',
  pin: '2025-11-25' | '2026-07-28',
) {
  const client = new Client(
    { name: 'mrtr-client', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      // The session lane by `mode: 'legacy'` (initialize), the stateless lane by a pin.
      versionNegotiation: { mode: pin === '2026-07-28' ? { pin } : 'legacy' },
    },
  );
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', (request) => {
    asked.push(String(request.params.message));
    return Promise.resolve(
      confirm === 'decline' ? { action: 'decline' } : { action: 'accept', content: { confirm } },
    );
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  onTestFinished(() => client.close());
  return { client, asked };
}

// The example that teaches the 2026-07-28 way (`inputRequired`, multi-round-trip input): one tool
// that asks the user on both lanes, served by a real `tidemark dev` process.
describe('asking the user mid-call with inputRequired, through a real tidemark dev', () => {
  it('works on the session lane (2025-11-25) and the stateless lane (2026-07-28) alike', async () => {
    const port = await reservePorts();
    const data = mkdtempSync(join(tmpdir(), 'tidemark-mrtr-'));
    const bin = join(root, 'packages/cli/dist/bin.js');
    const server = startDevServer(process.execPath, [
      bin,
      'dev',
      '--port',
      String(port),
      '--data',
      data,
    ]);
    const url = await server.url;

    for (const pin of ['2025-11-25', '2026-07-28'] as const) {
      const yes = await clientAnswering(url, true, pin);
      expect(yes.client.getNegotiatedProtocolVersion()).toBe(pin);
      const deployed = await yes.client.callTool({
        name: 'confirm_deploy',
        arguments: { env: 'prod' },
      });
      expect(deployed.content, `on ${pin}`).toEqual([{ type: 'text', text: 'deployed to prod' }]);
      expect(yes.asked).toEqual(['Deploy to prod?']);

      const no = await clientAnswering(url, false, pin);
      const kept = await no.client.callTool({
        name: 'confirm_deploy',
        arguments: { env: 'staging' },
      });
      expect(kept.content).toEqual([{ type: 'text', text: 'not deployed to staging' }]);

      // A decline is an answer: asked once, then the tool's result (it was asked until the
      // client gave up before).
      const declining = await clientAnswering(url, 'decline', pin);
      const declined = await declining.client.callTool({
        name: 'confirm_deploy',
        arguments: { env: 'qa' },
      });
      expect(declined.content, `on ${pin}`).toEqual([
        { type: 'text', text: 'not deployed to qa: declined' },
      ]);
      expect(declining.asked).toEqual(['Deploy to qa?']);
    }
  });
});
