import { port, str } from './options.js';

/**
 * `--metrics-port <n>`: Prometheus scrapes `/metrics` there. The OpenTelemetry SDK, started before
 * the command (telemetry.ts), already listens; the command validates the flag and says where.
 */
export const METRICS_FLAG = { 'metrics-port': { type: 'string' } } as const;

/** Validates the flag (a usage error when bad); the line to print, when it is set. */
export function metricsLine(
  values: Record<string, string | boolean | string[] | undefined>,
): string | undefined {
  const raw = str(values['metrics-port']);
  if (raw === undefined) return undefined;
  const metricsPort = port(raw, '--metrics-port', 0);
  return `Prometheus metrics: http://0.0.0.0:${metricsPort}/metrics`;
}
