import { resolveKafka } from './kafka-broker.js';

/** What the global setup hands to tests through vitest's `inject('kafkaBrokers')`. */
export interface ProvidedKafka {
  kafkaBrokers: string[];
}

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging
  export interface ProvidedContext extends ProvidedKafka {}
}

interface ProvideContext {
  provide<K extends keyof ProvidedKafka>(key: K, value: ProvidedKafka[K]): void;
}

/**
 * Vitest global setup for suites that need a real broker: resolves one broker for the whole run
 * (see `resolveKafka`), provides its addresses as `kafkaBrokers`, stops it at the end. Projects
 * that list this setup share the broker: the first one's is handed to the next through
 * `KAFKA_BROKERS` (vitest runs the projects' setups one after another, and their teardowns at the
 * end of the run), so a second project neither starts nor stops one.
 */
export default async function setup(context: ProvideContext): Promise<() => Promise<void>> {
  const kafka = await resolveKafka();
  context.provide('kafkaBrokers', [...kafka.brokers]);
  if (kafka.source === 'env') return () => kafka.stop();
  process.env['KAFKA_BROKERS'] = kafka.brokers.join(',');
  return async () => {
    delete process.env['KAFKA_BROKERS'];
    await kafka.stop();
  };
}
