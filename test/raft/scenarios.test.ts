import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runScenario } from './scenario.js';

/**
 * Each test/raft/scenarios/<name>.txt is a script; its trace must equal <name>.out beside it.
 * After a deliberate change of behaviour, regenerate the traces with `npx vitest run -u
 * test/raft/scenarios.test.ts` and read the diff.
 */
const dir = join(dirname(fileURLToPath(import.meta.url)), 'scenarios');

describe('raft scenarios', () => {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt'))) {
    it(file, async () => {
      const trace = runScenario(readFileSync(join(dir, file), 'utf8'));
      await expect(trace).toMatchFileSnapshot(join(dir, file.replace(/\.txt$/, '.out')));
    });
  }
});
