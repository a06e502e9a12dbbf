import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PretendPayments } from '@tidemark/examples/payments';
import { inject, onTestFinished } from 'vitest';
import { Cluster } from './cluster.js';
import { describeIdempotency } from '@tidemark/fixtures/idempotency-suite';

// The idempotency suite on a real broker: two gateway processes and two worker processes, the
// pretend payment API a file the workers share.

const brokers = inject('kafkaBrokers');

describeIdempotency('kafka', async () => {
  const ledger = join(mkdtempSync(join(tmpdir(), 'tidemark-keys-')), 'payments.jsonl');
  process.env['PAYMENTS_LEDGER'] = ledger;
  const cluster = await Cluster.start({ brokers, label: 'keys', gateways: 2, workers: 2 });
  onTestFinished(() => cluster.stop());
  const [a, b] = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}/mcp`);
  return { urls: [a!, b!], api: new PretendPayments(ledger) };
});
