// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

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
      'no-restricted-imports': ['error', { patterns: ['node:*', '../runtime/*', '../transport/*', '../storage/*'] }],
    },
  },
);
