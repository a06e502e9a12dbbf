import { describe, expect, it } from 'vitest';
import { AUDIT_FLAGS } from '../src/commands/audit.js';
import { CALLS_FLAGS } from '../src/commands/calls.js';
import { CHECK_FLAGS } from '../src/commands/check.js';
import { DEV_FLAGS } from '../src/commands/dev.js';
import { GATEWAY_FLAGS } from '../src/commands/gateway.js';
import { TOPICS_FLAGS } from '../src/commands/topics.js';
import { WORKER_FLAGS } from '../src/commands/worker.js';
import { CONSOLE_COMMAND_FLAGS } from '../src/console.js';
import { formatDuration } from '../src/flags/ttl.js';
import { HELP } from '../src/help.js';

const DECLARED: Record<string, Readonly<Record<string, unknown>>> = {
  dev: DEV_FLAGS,
  gateway: GATEWAY_FLAGS,
  worker: WORKER_FLAGS,
  topics: TOPICS_FLAGS,
  console: CONSOLE_COMMAND_FLAGS,
  check: CHECK_FLAGS,
  calls: CALLS_FLAGS,
  audit: AUDIT_FLAGS,
};

/** A flag the help names, by itself or in a family (`--tls-*`, `--sasl-*`). */
function named(help: string, flag: string): boolean {
  if (new RegExp(`--${flag}(?![\\w-])`).test(help)) return true;
  const family = /^(tls|sasl)-/.exec(flag)?.[1];
  return family !== undefined && help.includes(`--${family}-*`);
}

describe('tidemark <command> --help', () => {
  it.each(Object.keys(DECLARED))('%s names every flag it accepts', (command) => {
    const help = HELP[command]!;
    const missing = Object.keys(DECLARED[command]!).filter((flag) => !named(help, flag));
    expect(missing).toEqual([]);
  });

  it('says durations in the words the flags take', () => {
    expect([3_600_000, 60_000, 90_000, 1_000, 250, 86_400_000].map(formatDuration)).toEqual([
      '1h',
      '1m',
      '90s',
      '1s',
      '250ms',
      '1d',
    ]);
  });
});
