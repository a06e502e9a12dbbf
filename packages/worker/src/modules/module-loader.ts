import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { defineToolModule, type ToolModule, type V2ToolModule } from '@tidemark/tools';
import { describeImportError } from './module-errors.js';

/** Accepts what a module file exports: a `ToolModule`, or a function that registers on the server. */
export function toToolModule(exported: unknown, name: string): ToolModule {
  if (typeof exported === 'function') {
    return { name, source: name, register: exported as V2ToolModule['register'] };
  }
  if (
    typeof exported === 'object' &&
    exported !== null &&
    typeof (exported as ToolModule).register === 'function'
  ) {
    return defineToolModule({
      ...(exported as ToolModule),
      name: (exported as ToolModule).name ?? name,
      source: name,
    });
  }
  throw new TypeError(
    `${name}: the default export must be defineToolModule({...}) or a function (server) => void`,
  );
}

/**
 * Imports tool modules from files or package names (their default export). A module that cannot
 * be imported fails with `TIDEMARK_TOOL_MODULE` naming it. `reload` imports files again: the
 * module loader caches by URL, so each reload reads them under a query of its own (the modules
 * and any error are still named by the plain specifier).
 */
export async function loadToolModules(
  specifiers: readonly string[],
  options: { reload?: number } = {},
): Promise<ToolModule[]> {
  const urlOf = (specifier: string) =>
    options.reload !== undefined && specifier.startsWith('file:')
      ? `${specifier}?reload=${options.reload}`
      : specifier;
  return Promise.all(
    specifiers.map(async (specifier) => {
      let imported: { default?: unknown };
      try {
        imported = (await import(urlOf(specifier))) as { default?: unknown };
      } catch (error) {
        throw new TidemarkError(
          ErrorCodes.toolModule,
          `tool module ${specifier} cannot be loaded: ${await describeImportError(specifier, error)}`,
          { cause: error },
        );
      }
      return toToolModule(imported.default, specifier);
    }),
  );
}
