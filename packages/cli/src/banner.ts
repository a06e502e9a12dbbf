import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModuleListing } from '@tidemark/worker';

/**
 * The tools a process serves, per module — `counting: count, flaky_count`, and the event types it
 * offers — and a warning for a
 * module that registers nothing (a `register` that forgot `server.registerTool`, or returned
 * before it): its clients would see no tools and nobody would say why.
 */
function toolLines(modules: readonly ModuleListing[], cwd: string): string[] {
  return modules.map((module) => {
    const name = readable(module.name, cwd);
    const events = module.events.length > 0 ? ` (events: ${module.events.join(', ')})` : '';
    if (module.tools.length > 0) return `  ${name}: ${module.tools.join(', ')}${events}`;
    if (module.others > 0) return `  ${name}: no tools (${module.others} resources or prompts)`;
    if (events !== '') return `  ${name}: no tools${events}`;
    return `  warning: ${name} registers no tools, resources or prompts — does its register call server.registerTool?`;
  });
}

/** A module named by its file URL, as a path relative to where the command runs. */
function readable(name: string, cwd: string): string {
  if (!name.startsWith('file:')) return name;
  const path = relative(cwd, fileURLToPath(name));
  return path.startsWith('..') ? fileURLToPath(name) : `./${path}`;
}

/** A heading (`tools:`), then a line per module. */
export function sayTools(
  say: (line: string) => void,
  heading: string,
  modules: readonly ModuleListing[],
  cwd: string,
): void {
  say(heading);
  for (const line of toolLines(modules, cwd)) say(line);
}
