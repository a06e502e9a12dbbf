// Imported first by bin.ts, before anything opens a file or a socket: when the process lacks the
// Node flags Tidemark runs with (node-flags.ts), it replaces itself with one that has them.
import { missingNodeFlags } from './node-flags.js';

let flags: string[] | undefined;
try {
  flags = missingNodeFlags(process.env, process.execArgv);
} catch (error) {
  process.stderr.write(`tidemark: ${(error as Error).message}\n`);
  process.exit(2);
}
// Windows has no execve (nor Node before 22.15); there the flags are the operator's to pass.
if (flags !== undefined && process.platform !== 'win32' && process.execve !== undefined)
  process.execve(process.execPath, [
    process.execPath,
    ...flags,
    ...process.execArgv,
    ...process.argv.slice(1),
  ]);
