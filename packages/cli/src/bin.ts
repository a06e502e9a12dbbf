#!/usr/bin/env node
import './node-start.js';
import { main, runsServer } from './cli.js';
import { createLogger } from './logger.js';

// The composition root: the only place that reads the environment and the process's signals.
// Telemetry first when a command runs: it must instrument HTTP before the gateway loads it. Help,
// the version and a mistyped command need none of it, and answer at once.
const argv = process.argv.slice(2);
const telemetry = runsServer(argv) ? await import('./telemetry.js') : undefined;
const stopSignal = new Promise<void>((resolve) => {
  process.once('SIGINT', () => resolve());
  process.once('SIGTERM', () => resolve());
});
const log = createLogger(argv[0] ?? 'cli', process.env, { pretty: process.stderr.isTTY });
const code = await main(argv, {
  env: process.env,
  cwd: process.cwd(),
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stopSignal,
  logger: log,
});
await telemetry?.shutdownTelemetry();
await new Promise<void>((resolve) => log.flush(() => resolve()));
process.exit(code);
