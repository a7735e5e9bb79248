import { describe, expect, it } from 'vitest';
import { decodeCommand, encodeCommand } from '../../src/runtime/commands.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('strings shared between decoded commands', () => {
  it('change no value, for any number of distinct members (past the table of shared strings, which starts over)', () => {
    for (let i = 0; i < 600; i++) {
      const member = `10.0.${i >> 8}.${i & 0xff}:7000`;
      const commands: SchedulerCommand[] = [
        { type: 'register', job: `job${i}`, spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris' }), mode: i % 2 === 0 ? 'one' : 'all', policy: { retries: 1, retryDelayMs: 10, catchUp: { policy: 'all', windowMs: 5, maxSlots: 2 }, overlap: 'queue' }, member, atMs: T0 },
        { type: 'claim', job: `job${i}`, slotMs: T0 + 1000, assignees: [member, 'b'], fromMs: T0 },
        { type: 'reassign', job: `job${i}`, slotMs: T0 + 1000, fromToken: 3, assignees: ['b'], reason: 'retry' },
        { type: 'started', job: `job${i}`, slotMs: T0 + 1000, token: 3, member, atMs: T0 + 1001 },
        { type: 'outcome', job: `job${i}`, slotMs: T0 + 1000, token: 3, member, outcome: 'failed', atMs: T0 + 1002, error: 'boom' },
        { type: 'unregister', job: `job${i}`, member },
        { type: 'lock', name: `lock${i}`, member, atMs: T0, untilMs: T0 + 5 },
      ];
      for (const command of commands) expect(decodeCommand(encodeCommand({ kind: 'scheduler', command }))).toEqual({ kind: 'scheduler', command });
    }
    // A string past the length shared (a member id here) decodes the same.
    const long: SchedulerCommand = { type: 'outcome', job: 'j', slotMs: T0, token: 3, member: 'm'.repeat(300), outcome: 'failed', error: 'x'.repeat(5000), atMs: T0 };
    expect(decodeCommand(encodeCommand({ kind: 'scheduler', command: long }))).toEqual({ kind: 'scheduler', command: long });
  });
});
