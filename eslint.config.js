// ESLint (flat config): typescript-eslint with type information over the server, its tests, the
// benchmarks, the scripts and the console. `npm run lint` runs it after Prettier and before
// dependency-cruiser and knip; CONTRIBUTING.md says how to read what it reports.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      'dist/**',
      'console/dist/**',
      'src/http/compiled/**',
      'test/fixtures/**',
      'bench/.work/**',
      'data/**',
      'coverage/**',
    ],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['{src,test,bench,scripts}/**/*.{ts,mts,mjs}', 'console/src/**/*.{ts,tsx}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        // Each file is checked against its own tsconfig (the root one, or console/'s); the plain
        // JavaScript workers and scripts, which no tsconfig includes, against a default project.
        projectService: {
          allowDefaultProject: [
            'scripts/*.mjs',
            'src/db/*.mjs',
            'src/embeddings/*.mjs',
            'src/workers/*.mjs',
            'test/fuzz/*.mjs',
            'bench/lib/*.mjs',
          ],
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 24,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // The promise rules: a promise is awaited, handled, or marked `void` where fire-and-forget is
      // the design. node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      // An empty catch says why in a comment, or handles the error.
      'no-empty': ['error', { allowEmptyCatch: false }],
      'max-lines': ['error', { max: 800 }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {
          allowNumber: true,
          allowBoolean: true,
          allowNullish: true,
          allowArray: true,
          allowNever: true,
          allow: [{ from: 'lib', name: ['URL', 'URLSearchParams', 'Error'] }],
        },
      ],

      // Off: the `any` family. Parsed JSON, database rows and test responses are `any` by design at
      // the edges (validated by schemas); typing each use would take thousands of edits for no safety.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Off: style, not safety. Redundant assertions (some 300) cost nothing at run time, and
      // dropping `async` from a function without `await` changes a throw into a rejection's caller.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
      // Off: the code stringifies unknown JSON scalars on purpose (String(v) after checks the rule
      // cannot follow), rejects with the callback's own error or the AbortSignal's reason, and passes
      // methods of plain objects (no `this`) around.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      '@typescript-eslint/unbound-method': 'off',
      // Off: the code matches NUL, ASCII ranges and terminal escapes on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    // Feature code asks the dialect what it can do (`dialect.caps`, the helpers of src/db/), never
    // which one it is: a comparison with 'sqlite' or 'postgres' belongs in src/db/ (style D3/K1).
    files: ['src/**/*.ts'],
    ignores: ['src/db/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['BinaryExpression[operator=/^[!=]==?$/]', 'SwitchCase'].map((parent) => ({
          selector: `${parent} > Literal[value=/^(sqlite|postgres)$/]`,
          message:
            'Feature code names no dialect: ask `dialect.caps` (src/db/dialect.ts) or a helper in src/db/ what the database can do, and add the capability there if it is missing.',
        })),
      ],
    },
  },
);
