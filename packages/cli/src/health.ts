import type { Gateway } from '@tidemark/gateway';
import { createTopicsProbe, type KafkaLogOptions, type TopicsProbe } from '@tidemark/kafka';
import type { topicNames } from '@tidemark/protocol';

// What a gateway or worker answers its orchestrator: /healthz (alive) and /readyz (can serve).

/** `/healthz` always; `/readyz` as `isReady` says. */
export function addHealth(gw: Gateway, isReady: () => Promise<boolean>): void {
  gw.app.get('/healthz', (_req, res) => void res.status(200).json({ status: 'ok' }));
  gw.app.get('/readyz', (_req, res) => {
    void isReady().then((ok) =>
      res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready' }),
    );
  });
}

/** `/readyz`: the topics are there and right; one admin connection, one check a second. */
export function topicsProbe(
  kafka: KafkaLogOptions,
  names: ReturnType<typeof topicNames>,
): TopicsProbe {
  const prefix = names.requests.slice(0, -'requests'.length);
  return createTopicsProbe(
    {
      brokers: kafka.brokers,
      ...(kafka.connection === undefined ? {} : { connection: kafka.connection }),
    },
    { prefix },
  );
}
