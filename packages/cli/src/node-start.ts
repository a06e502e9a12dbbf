// Imported first by bin.ts, before anything opens a file or a socket: when the process lacks the
// Node flags or the allocator settings Tidemark runs with (node-flags.ts says which and why), it
// replaces itself with one that has them.
import { totalmem } from 'node:os';
import { nodeRestart, type NodeRestart } from './node-flags.js';

let restart: NodeRestart | undefined;
try {
  restart = nodeRestart(process.env, process.execArgv, {
    constrained: process.constrainedMemory(),
    total: totalmem(),
  });
} catch (error) {
  process.stderr.write(`tidemark: ${(error as Error).message}\n`);
  process.exit(2);
}
// Windows has no execve (nor Node before 22.15); there the flags are the operator's to pass.
if (restart !== undefined && process.platform !== 'win32' && process.execve !== undefined) {
  process.execve(
    process.execPath,
    [process.execPath, ...restart.flags, ...process.execArgv, ...process.argv.slice(1)],
    { ...process.env, ...restart.env },
  );
} else {
  // The marker is this process's alone: a `tidemark` it starts (a tool running the CLI) checks
  // its own flags again instead of inheriting "already restarted".
  delete process.env['TIDEMARK_NODE_RESTARTED'];
}
