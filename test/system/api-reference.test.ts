import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
/** typedoc's own command, as `npm run docs` runs it. */
const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
/** Bound on one run of typedoc: it reads the entry points' whole program, on a shared machine. */
const TYPEDOC_TIMEOUT_MS = 60_000;

describe('the API reference (npm run docs)', () => {
  it('builds from the package entry points without a warning: every type they name is exported, every link resolves', async () => {
    // typedoc.json turns warnings into errors; `--emit none` converts and validates the whole
    // reference without writing it. A warning fails the run with a non-zero exit, which
    // execFile rejects with, its output attached.
    const result = await run(process.execPath, [typedoc, '--emit', 'none'], { cwd: root, timeout: TYPEDOC_TIMEOUT_MS }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    expect(result.output).not.toMatch(/\[(warning|error)\]/);
    expect(result.code).toBe(0);
  });
});
