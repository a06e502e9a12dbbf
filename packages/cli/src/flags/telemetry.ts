import { setSpansPerEvent } from '@tidemark/otel';
import { port, str, type FlagValues } from '../options.js';

/**
 * The telemetry flags of gateway, worker and dev. `--metrics-port <n>`: Prometheus scrapes
 * `/metrics` there (the OpenTelemetry SDK, started before the command in telemetry.ts, already
 * listens; the command validates the flag and says where). `--trace-events`: every event gets its
 * own spans, not only a stream's milestones (as TIDEMARK_TRACE_EVENTS=true does).
 */
export const TELEMETRY_FLAGS = {
  'metrics-port': { type: 'string' },
  'trace-events': { type: 'boolean' },
} as const;

/** Validates and applies the flags (a usage error when bad); the line to print, if any. */
export function applyTelemetryFlags(values: FlagValues): string | undefined {
  if (values['trace-events'] === true || process.env['TIDEMARK_TRACE_EVENTS'] === 'true')
    setSpansPerEvent(true);
  const raw = str(values['metrics-port']);
  if (raw === undefined) return undefined;
  const metricsPort = port(raw, '--metrics-port', 0);
  const host = process.env['OTEL_EXPORTER_PROMETHEUS_HOST'] ?? '0.0.0.0';
  return `Prometheus metrics: http://${host}:${metricsPort}/metrics`;
}
