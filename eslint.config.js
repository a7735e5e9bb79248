// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

const CBORG_DECODERS = { name: 'cborg', importNames: ['decode', 'decodeFirst'], message: 'Decode with src/bytes/cbor-decode.ts, which keeps a leading U+FEFF of a text string.' };

export default tseslint.config(
  { ignores: ['dist/', 'docs/api/', 'node_modules/', 'bench-results/', 'coverage/', 'scratch/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true, allowTypedFunctionExpressions: true }],
    },
  },
  {
    // cborg's decoders drop a leading U+FEFF from every text string; src/bytes/cbor-decode.ts
    // wraps them to keep it, and everything else decodes through it.
    files: ['src/**/*.ts', 'simulations/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [CBORG_DECODERS] }],
    },
  },
  {
    // The protocol and the scheduler's state machine are pure: no clocks, timers or randomness
    // of their own (they are injected), so simulations run the same code.
    files: ['src/raft/**/*.ts', 'src/scheduler/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'performance'],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Inject a Clock: the protocol is pure.' },
        { object: 'Math', property: 'random', message: 'Inject a Random: the protocol is pure.' },
      ],
      'no-restricted-imports': ['error', { paths: [CBORG_DECODERS], patterns: ['node:*', '../runtime/*', '../transport/*', '../storage/*'] }],
    },
  },
);
