import { context, trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type { Logger };

export interface LoggerOptions {
  /**
   * Lines for a person (pino-pretty: time, level, message, fields) instead of JSON. The CLI asks
   * for them when stderr is a terminal; a collector reading a pipe or a file gets JSON.
   */
  pretty?: boolean;
}

/**
 * The process's structured log on stderr, each line stamped with the active trace and span ids
 * when it is written inside one (a tool execution, a request), so a log line leads to its trace
 * and back. `TIDEMARK_LOG_LEVEL` sets the level (default info); `TIDEMARK_LOG_FORMAT` (`json` or
 * `pretty`) overrides the choice of format.
 */
export function createLogger(
  role: string,
  env: NodeJS.ProcessEnv,
  options: LoggerOptions = {},
): Logger {
  const format = env['TIDEMARK_LOG_FORMAT'];
  const pretty = format === undefined ? options.pretty === true : format === 'pretty';
  const destination: DestinationStream = pretty
    ? PinoPretty({
        destination: 2,
        sync: false,
        ignore: 'pid,hostname',
        translateTime: 'HH:MM:ss.l',
      })
    : pino.destination({ fd: 2, sync: false });
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
    destination,
  );
}
