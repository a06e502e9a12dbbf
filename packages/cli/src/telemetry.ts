// Boots the OpenTelemetry SDK when the standard OTEL_* variables ask for it, before anything else is
// loaded (so HTTP is instrumented). Libraries use the API only; the process owns the SDK.
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';

const env = process.env;
const role = process.argv[2] ?? 'cli';

/**
 * `--metrics-port <n>` (gateway, worker, dev): Prometheus scrapes `/metrics` on that port, through
 * the SDK's own Prometheus exporter — alongside OTLP traces (and OTLP metrics, when asked for too).
 * Read here because the SDK starts before the command parses its flags (which validate it).
 */
function metricsPort(argv: readonly string[]): number | undefined {
  const at = argv.findIndex((arg) => arg === '--metrics-port' || arg.startsWith('--metrics-port='));
  if (at < 0) return undefined;
  const raw = argv[at]!.includes('=') ? argv[at]!.split('=')[1] : argv[at + 1];
  const port = Number(raw);
  return Number.isInteger(port) && port > 0 && port < 65_536 ? port : undefined;
}
const prometheusPort = env['OTEL_SDK_DISABLED'] === 'true' ? undefined : metricsPort(process.argv);
if (prometheusPort !== undefined) {
  const exporters = (env['OTEL_METRICS_EXPORTER'] ?? '')
    .split(',')
    .filter((e) => e !== '' && e !== 'none');
  env['OTEL_METRICS_EXPORTER'] = [...new Set([...exporters, 'prometheus'])].join(',');
  env['OTEL_EXPORTER_PROMETHEUS_PORT'] = String(prometheusPort);
  // `dev` is for one machine: its metrics too, unless it was told to serve others.
  const local = role === 'dev' && !process.argv.includes('--allow-remote');
  env['OTEL_EXPORTER_PROMETHEUS_HOST'] ??= local ? '127.0.0.1' : '0.0.0.0';
  env['OTEL_TRACES_EXPORTER'] ??= env['OTEL_EXPORTER_OTLP_ENDPOINT'] ? 'otlp' : 'none';
}
const wanted =
  env['OTEL_SDK_DISABLED'] !== 'true' &&
  (prometheusPort !== undefined ||
    [
      env['OTEL_TRACES_EXPORTER'],
      env['OTEL_EXPORTER_OTLP_ENDPOINT'],
      env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    ].some((v) => v !== undefined && v !== ''));

/** Kubernetes facts the Helm chart passes through the downward API, as resource attributes. */
function kubernetesAttributes(): Record<string, string> {
  const attributes: Record<string, string> = {};
  const map: Record<string, string> = {
    K8S_POD_NAME: 'k8s.pod.name',
    K8S_NAMESPACE: 'k8s.namespace.name',
    K8S_NODE_NAME: 'k8s.node.name',
  };
  for (const [variable, attribute] of Object.entries(map)) {
    const value = env[variable];
    if (value !== undefined && value !== '') attributes[attribute] = value;
  }
  return attributes;
}

// Tidemark exports traces; metrics and logs exporters stay off unless asked for by name, so a
// traces-only setup does not try (and retry) an OTLP metrics endpoint nobody runs.
if (wanted) {
  env['OTEL_METRICS_EXPORTER'] ??= 'none';
  env['OTEL_LOGS_EXPORTER'] ??= 'none';
}
const kubernetes = kubernetesAttributes();
const sdk = wanted
  ? new NodeSDK({
      serviceName: env['OTEL_SERVICE_NAME'] ?? `tidemark-${role}`,
      instrumentations: [new HttpInstrumentation()],
      ...(Object.keys(kubernetes).length > 0
        ? { resource: resourceFromAttributes(kubernetes) }
        : {}),
    })
  : undefined;
sdk?.start();

/** Flushes and stops the SDK, if one was started. */
export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
}
