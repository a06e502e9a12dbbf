#!/usr/bin/env node
// Telemetry first: it must instrument HTTP before the gateway loads it.
import { shutdownTelemetry } from './telemetry.js';
import { main } from './cli.js';
import { createLogger } from './logger.js';

// The composition root: the only place that reads the environment and the process's signals.
const stopSignal = new Promise<void>((resolve) => {
  process.once('SIGINT', () => resolve());
  process.once('SIGTERM', () => resolve());
});
const log = createLogger(process.argv[2] ?? 'cli', process.env);
const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stopSignal,
  log,
});
await shutdownTelemetry();
await new Promise<void>((resolve) => log.flush(() => resolve()));
process.exit(code);
