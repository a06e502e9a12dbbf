/** `tidemark --help`: what each command is (a command's own help is in help.ts, loaded when asked). */
export const MAIN_HELP = `tidemark — MCP servers on many machines at once, with Kafka as the source of truth

Usage: tidemark <command> [flags]

Commands:
  dev       gateway + worker + an embedded durable log in one process, no broker (start here)
  gateway   the stateless HTTP gateway (MCP Streamable HTTP), against Kafka
  worker    the tool worker, against Kafka
  topics    create or check the Kafka topics: tidemark topics create|check
  calls     the calls asleep or waiting for a signal, and their repairs: tidemark calls list|wake|cancel
  audit     the audit trail, one JSON line per call: tidemark audit --since 24h --format jsonl
  console   the web console over a Kafka deployment's topics, read-only (dev serves it at /console)
  check     is a deployment serving? tidemark check <mcp-url> (readiness, then a call to a worker)
  init      a ready project in a directory: a tool module, its test, npm start and npm test

Run 'tidemark <command> --help' for its flags; 'tidemark --version' prints the version.

Exit codes: 0 ok; 1 a runtime failure (broker unreachable, topics wrong, port taken); 2 a usage
error (bad flag or value, missing required option).

Telemetry: the standard OTEL_* variables start the OpenTelemetry SDK (e.g. OTEL_TRACES_EXPORTER=otlp
with OTEL_EXPORTER_OTLP_ENDPOINT, or =console); the service name is tidemark-<command> unless
OTEL_SERVICE_NAME says otherwise; K8S_POD_NAME, K8S_NAMESPACE, K8S_NODE_NAME become resource attributes.`;
