// One linter for the whole repository. Type-aware rules matter most here: an un-awaited promise in
// a Kafka or SSE path loses records or errors silently, so no-floating-promises is an error.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/coverage/**',
      '**/node_modules/**',
      'infra/kafka/.libs/**',
      'infra/kafka/.run/**',
      'helm/**',
      'docs/.vitepress/cache/**',
      'docs/.vitepress/dist/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            '*.mjs',
            'infra/*.mjs',
            'packages/cli/bin/*.js',
            'packages/console/assets/*.js',
          ],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ExportAllDeclaration',
          message: 'Curate the public API: export names, not *.',
        },
      ],
    },
  },
  {
    // Rooms that stay livable: a long function is a list of named steps, a long file two concerns.
    // (The fixtures are test code: a suite is one long `describe`.)
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/fixtures/src/**'],
    rules: {
      'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': [
        'error',
        { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true },
      ],
      complexity: ['error', 20],
    },
  },
  {
    // The examples are tool modules people copy: one file each, as long as their registrations.
    files: ['examples/*.ts'],
    rules: { 'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }] },
  },
  {
    // No import cycles: a cycle is two files that are one concern, or one that reaches up a layer.
    // Resolved as TypeScript does (`./x.js` is `./x.ts`). The rule skips type-only imports:
    // `.dependency-cruiser.mjs` (in `npm run lint`) sees those too, and the floors of each package.
    files: ['packages/*/src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ alwaysTryTypes: true })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // Tests may poke at results they just checked for shape.
    files: ['**/test/**/*.ts', 'packages/fixtures/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
  {
    // Plain JavaScript that must run on any Node (the test prerequisites, the CLI's launcher).
    files: ['**/*.mjs', 'packages/cli/bin/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The console's page script: plain browser JavaScript, served as is (no build step).
    files: ['packages/console/assets/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: globals.browser },
  },
);
