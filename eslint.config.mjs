// ESLint flat config: typescript-eslint's recommended rules over the whole repo,
// formatting left to Prettier (eslint-config-prettier turns the clashing rules off).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

// The dashboard page's script: classic browser scripts, joined by the server into one (docs/adr/045).
const BROWSER = 'lib/nest/dashboard/assets/browser/**/*.js';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test/nest12/node_modules/', 'test/nest12/app/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Nest's own signatures use Function and any (ClientProxy, MessageHandler).
      '@typescript-eslint/no-unsafe-function-type': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    ignores: [BROWSER],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: [BROWSER],
    languageOptions: {
      sourceType: 'script',
      // What the script uses of the browser; each file names what it takes from the others in a
      // `/* global */` comment and what it gives them in `/* exported */`.
      globals: {
        document: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        HTMLElement: 'readonly',
      },
    },
    rules: {
      // The security property of the page: values reach it through textContent or setAttribute, never as HTML.
      'no-restricted-properties': [
        'error',
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'write', 'writeln', 'createContextualFragment', 'parseFromString'].map(
          (property) => ({ property, message: 'The dashboard writes text (textContent) and attributes (setAttribute), never HTML.' }),
        ),
      ],
      'no-restricted-globals': ['error', { name: 'eval', message: 'No code from strings (the page’s CSP refuses it too).' }],
    },
  },
);
