import { logs, SeverityNumber, type Attributes } from '@opentelemetry/api';

// The audit trail as OpenTelemetry log records: one per call, beside its record in the `audit`
// topic, so it reaches a SIEM through the collector an operator already runs
// (`OTEL_LOGS_EXPORTER=otlp`). Without a logs SDK registered the API drops them, at no cost.

/** The fields of an audit record, as `@tidemark/protocol`'s `AuditRecord` has them. */
export interface AuditLogFields {
  readonly atMs: number;
  readonly owner: string;
  readonly stream: string;
  readonly tool: string;
  readonly outcome: string;
  readonly subject?: string;
  readonly clientId?: string;
  readonly scopes?: readonly string[];
  readonly arguments: string;
  readonly idempotent?: true;
  readonly toolError?: boolean;
  readonly reason?: string;
  readonly executions: number;
}

/** Emits one audit record as a log record (event name `tidemark.audit`), attributes `tidemark.audit.*`. */
export function emitAuditLog(record: AuditLogFields): void {
  const attributes: Attributes = {};
  for (const [field, value] of Object.entries(record))
    if (value !== undefined && field !== 'atMs')
      attributes[`tidemark.audit.${field}`] = Array.isArray(value)
        ? (value as readonly string[]).slice()
        : (value as string | number | boolean);
  logs.getLogger('tidemark', '0.1.0').emit({
    eventName: 'tidemark.audit',
    timestamp: record.atMs,
    severityNumber: record.outcome === 'answered' ? SeverityNumber.INFO : SeverityNumber.WARN,
    severityText: record.outcome === 'answered' ? 'INFO' : 'WARN',
    body: `${record.tool} ${record.outcome}`,
    attributes,
  });
}
