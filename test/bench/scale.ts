// `npm run bench:scale`: the scale events of scale-events.ts on their own (`npm run bench` runs
// them too). Writes docs/benchmarks/scale.json.
//
//   npm run bench:scale                 # 12 partitions, 12 clients: workers 2 → 6 → 2, gateways 2 → 4 → 2
//   npm run bench:scale -- --smoke      # 4 partitions, 4 clients, workers 2 → 3 → 2, gateways 2 → 3 → 2
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { runScale } from './scale-events.ts';
import { machine } from './support.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks/scale.json' },
  },
});

const kafka = await resolveKafka({ log: (line) => console.error(line) });
try {
  const result = await runScale({ brokers: kafka.brokers, smoke: values.smoke });
  const { totals } = result;
  console.log(`all events: ${totals.calls} calls, ${totals.failed} failed, ${totals.reset} reset`);
  writeFileSync(
    values.out,
    `${JSON.stringify({ machine: machine(), smoke: values.smoke, ...result }, null, 2)}\n`,
  );
} finally {
  await kafka.stop();
}
