import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { runCli } from '../../src/cli/program.js';

/** Runs the command in this process, its output kept. */
async function cronraft(...argv: string[]): Promise<{ readonly code: number; readonly out: string; readonly err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe("the command's exit codes for help", () => {
  it('exits 0 for the help asked for, in each of its forms (before, `help` and `help <command>` exited 2, a usage error)', async () => {
    for (const argv of [['help'], ['help', 'status'], ['--help'], ['status', '--help'], ['help', 'simulate']]) {
      const r = await cronraft(...argv);
      expect(r.code, argv.join(' ')).toBe(EXIT.ok);
      expect(r.out + r.err, argv.join(' ')).toMatch(/Usage: cronraft/);
    }
  });

  it('exits 2 for the help shown because a command is missing or unknown', async () => {
    for (const argv of [[], ['nosuch'], ['status', '--nosuch']]) expect((await cronraft(...argv)).code, argv.join(' ')).toBe(EXIT.usage);
  });

  it('exits 2 for a command that talks to a member given no address, and says the variable would do', async () => {
    const before = process.env.CRONRAFT_URL;
    delete process.env.CRONRAFT_URL;
    try {
      for (const argv of [['status'], ['pause', 'nightly', '--token', 'x'.repeat(32)]]) {
        const r = await cronraft(...argv);
        expect(r.code, argv.join(' ')).toBe(EXIT.usage);
        expect(r.err, argv.join(' ')).toMatch(/--url <url>' not specified, nor CRONRAFT_URL set/);
      }
    } finally {
      if (before !== undefined) process.env.CRONRAFT_URL = before;
    }
  });
});
