import { context, trace } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The process's structured log: JSON lines on stderr, each stamped with the active trace and span
 * ids when it is written inside one (a tool execution, a request), so a log line leads to its trace
 * and back. `TIDEMARK_LOG_LEVEL` sets the level (default info).
 */
export function createLogger(role: string, env: NodeJS.ProcessEnv): Logger {
  return pino(
    {
      name: `tidemark-${role}`,
      level: env['TIDEMARK_LOG_LEVEL'] ?? 'info',
      mixin: () => {
        const span = trace.getSpanContext(context.active());
        return span === undefined
          ? {}
          : { trace_id: span.traceId, span_id: span.spanId, trace_flags: span.traceFlags };
      },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}
