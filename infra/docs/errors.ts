import { join } from 'node:path';
import { cell, objectTable, prose } from './source.ts';

// JSON-RPC error codes, the gateway's HTTP refusals and the local error codes, from their tables:
// `JsonRpcErrorCodes` and `SignalErrorCodes` (@tidemark/protocol), `HttpRefusals` (the gateway:
// status, code and message of each refusal as its factory writes them), `ErrorCodes`.

/** The arguments of the `refusal(status, code, message, reason)` call inside a factory. */
function refusalParts(source: string): { status: string; code: string; message: string } {
  const call = /refusal\(\s*(\d{3}|status),\s*([\w.]+),\s*([\s\S]*?),\s*'([\w-]+)'/.exec(source);
  if (call === null) return { status: '—', code: '—', message: cell(source).slice(0, 120) };
  return { status: call[1]!, code: call[2]!, message: cell(call[3]!) };
}

export function errorsReference(root: string): string {
  const protocol = join(root, 'packages/protocol/src');
  const jsonRpc = objectTable(join(protocol, 'wire/wire.ts'), 'JsonRpcErrorCodes');
  const signal = objectTable(join(protocol, 'keys/signal-token.ts'), 'SignalErrorCodes');
  const refusals = objectTable(
    join(root, 'packages/gateway/src/http/http-refusals.ts'),
    'HttpRefusals',
  );
  const local = objectTable(join(protocol, 'errors.ts'), 'ErrorCodes');
  return [
    '## JSON-RPC error codes',
    '',
    '| code | name | when |',
    '| --- | --- | --- |',
    ...[
      ...jsonRpc.map((e) => ({ ...e, key: `JsonRpcErrorCodes.${e.key}` })),
      ...signal.map((e) => ({ ...e, key: `SignalErrorCodes.${e.key}` })),
    ].map((e) => `| \`${e.source}\` | \`${e.key}\` | ${prose(e.doc) || '—'} |`),
    '',
    '## HTTP refusals',
    '',
    'Every refusal the gateway answers over HTTP: a JSON-RPC error as the whole answer. Client',
    'mistakes are 4xx; only a log that cannot be reached is a 503.',
    '',
    '| refusal | status | JSON-RPC code | message | when |',
    '| --- | --- | --- | --- | --- |',
    ...refusals.map((e) => {
      const { status, code, message } = refusalParts(e.source);
      return `| \`${e.key}\` | ${status} | \`${code}\` | ${message.replaceAll('`', '')} | ${prose(e.doc) || '—'} |`;
    }),
    '',
    '## Local error codes',
    '',
    '`TidemarkError.code` — thrown inside a process (options, the log, tool modules), never sent as is.',
    '',
    '| code | name | when |',
    '| --- | --- | --- |',
    ...local.map(
      (e) => `| ${e.source.replaceAll("'", '`')} | \`${e.key}\` | ${prose(e.doc) || '—'} |`,
    ),
    '',
  ].join('\n');
}
