import { encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLUSTER_DEFAULTS } from '../../src/cluster-options.js';
import { batchCommands, batchPayload, MAX_COMMANDS_PER_BATCH, type BatchedCommand } from '../../src/runtime/command-batch.js';
import { decodeEntry, encodeCommand } from '../../src/runtime/commands.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { BATCH_VERSION, EXACT_TEXT_VERSION, FIRST_CLUSTER_VERSION, SUPPORTED } from '../../src/version/versions.js';

type Registration = Extract<SchedulerCommand, { type: 'register' }>;

const T0 = Date.parse('2026-01-01T00:00:00Z') + 0.25;
const hourly = parseSpec({ every: '1h' });
const paris = parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } });
const plain: JobPolicy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' }, overlap: 'skip' };
const queued: JobPolicy = { retries: 2, retryDelayMs: 10, catchUp: { policy: 'all', windowMs: 60_000, maxSlots: 3 }, overlap: 'queue' };

function register(job: string, spec = hourly, policy = plain, mode: 'one' | 'all' = 'one', member = 'a', atMs = T0): Registration {
  return { type: 'register', job, spec, mode, policy, member, atMs };
}

/** The commands of a batch entry as every member reads them. */
function readBack(commands: readonly BatchedCommand[]): readonly BatchedCommand[] | string {
  const decoded = decodeEntry(encodeCommand({ kind: 'scheduler-batch', commands }), BATCH_VERSION, SUPPORTED);
  return decoded.kind === 'scheduler-batch' ? decoded.commands : decoded.kind;
}

describe('the text of a log entry', () => {
  it('keeps a leading U+FEFF from EXACT_TEXT_VERSION on, and drops it before, as members of 0.1.0 read it, so that both releases read one log alike', () => {
    const one = encodeCommand({ kind: 'scheduler', command: register('\ufeffj') });
    const batch = encodeCommand({ kind: 'scheduler-batch', commands: [register('\ufeffj'), register('k')] });
    const names = (bytes: Uint8Array, active: number): string[] => {
      const decoded = decodeEntry(bytes, active, SUPPORTED);
      if (decoded.kind === 'scheduler') return [(decoded.command as Registration).job];
      return decoded.kind === 'scheduler-batch' ? decoded.commands.map((c) => c.job) : [decoded.kind];
    };
    expect(names(one, FIRST_CLUSTER_VERSION)).toEqual(['j']);
    expect(names(one, EXACT_TEXT_VERSION)).toEqual(['\ufeffj']);
    expect(names(batch, BATCH_VERSION)).toEqual(['j', 'k']);
    expect(names(batch, EXACT_TEXT_VERSION)).toEqual(['\ufeffj', 'k']);
  });
});

describe('a batch of registrations in a log entry', () => {
  it('reads back as the commands written, in order, whatever their forms', () => {
    const commands = [register('j1'), register('j2', paris), register('j3'), register('j4', hourly, queued, 'all'), register('j5', paris)];
    expect(readBack(commands)).toEqual(commands);
    const unregistrations: BatchedCommand[] = ['j1', 'j2', 'j1'].map((job) => ({ type: 'unregister', job, member: 'b' }));
    expect(readBack(unregistrations)).toEqual(unregistrations);
  });

  it('writes what the jobs share once: a form of spec, mode and policy per kind of job, the member and time per batch', () => {
    const commands = Array.from({ length: MAX_COMMANDS_PER_BATCH }, (_, i) => register(`job${i}`, i % 2 === 0 ? hourly : paris));
    expect(batchPayload(commands)).toEqual([0, 'a', T0, [[hourly, 'one', plain], [paris, 'one', plain]], commands.flatMap((c, i) => [c.job, i % 2])]);
    // Each job costs its name and the place of its form, a few bytes, where a whole command cost
    // its field names and values again.
    const whole = encode([1, commands, BATCH_VERSION]).length;
    expect(encodeCommand({ kind: 'scheduler-batch', commands }).length).toBeLessThan(whole / 8);
  });

  it('of jobs scheduled alike stays below the largest proposal, however long their names', () => {
    // The longest name a job may have, in characters that take the most bytes each in UTF-8.
    const commands = Array.from({ length: MAX_COMMANDS_PER_BATCH }, (_, i) => register(`${'\u20ac'.repeat(196)}${String(i).padStart(4, '0')}`, paris, queued, 'all'));
    expect(encodeCommand({ kind: 'scheduler-batch', commands }).length).toBeLessThan(CLUSTER_DEFAULTS.maxProposalBytes / 2);
  });

  it('gives the registrations of one form one spec and one policy, as their jobs then hold', () => {
    const read = readBack([register('j1'), register('j2', paris), register('j3')]) as Registration[];
    expect(read[0]?.spec).toBe(read[2]?.spec);
    expect(read[0]?.policy).toBe(read[2]?.policy);
    expect(read[0]?.spec).not.toBe(read[1]?.spec);
  });

  it('is refused by its writer unless it holds 1 to MAX_COMMANDS_PER_BATCH commands of one member, registrations at one time or unregistrations', () => {
    const refusals: Array<[string, BatchedCommand[]]> = [
      ['none', []],
      ['one too many', Array.from({ length: MAX_COMMANDS_PER_BATCH + 1 }, (_, i) => register(`job${i}`))],
      ['two members', [register('j1'), register('j2', hourly, plain, 'one', 'b')]],
      ['two times', [register('j1'), register('j2', hourly, plain, 'one', 'a', T0 + 1)]],
      ['a registration after an unregistration', [{ type: 'unregister', job: 'j1', member: 'a' }, register('j2')]],
      ['an unregistration after a registration', [register('j1'), { type: 'unregister', job: 'j2', member: 'a' }]],
      ['unregistrations of two members', [{ type: 'unregister', job: 'j1', member: 'a' }, { type: 'unregister', job: 'j2', member: 'b' }]],
    ];
    for (const [name, commands] of refusals) expect(() => encodeCommand({ kind: 'scheduler-batch', commands }), name).toThrow(TypeError);
  });

  // Each spoiled payload of a batch entry, which every member skips alike as malformed.
  const good = batchPayload([register('j1'), register('j2', paris)]) as [number, string, number, unknown[], unknown[]];
  const [, , , forms, jobs] = good;
  const spoiled: Array<[string, unknown]> = [
    ['not an array', { type: 'register' }],
    ['an unknown kind of batch', [2, 'a', T0, forms, jobs]],
    ['a register batch of four fields', [0, 'a', T0, forms]],
    ['a register batch of six fields', [...good, 0]],
    ['a member that is not a string', [0, 7, T0, forms, jobs]],
    ['a time that is not a number', [0, 'a', String(T0), forms, jobs]],
    ['no forms', [0, 'a', T0, [], jobs]],
    ['more forms than jobs', [0, 'a', T0, [...forms, forms[0]], ['j1', 0]]],
    ['a form that is not an array', [0, 'a', T0, [{ spec: hourly, mode: 'one', policy: plain }, forms[1]], jobs]],
    ['a form of two fields', [0, 'a', T0, [[hourly, 'one'], forms[1]], jobs]],
    ['a bad spec', [0, 'a', T0, [[{ kind: 'every', everyMs: 0 }, 'one', plain], forms[1]], jobs]],
    ['a bad mode', [0, 'a', T0, [[hourly, 'some', plain], forms[1]], jobs]],
    ['a bad policy', [0, 'a', T0, [[hourly, 'one', { ...plain, overlap: 'ignore' }], forms[1]], jobs]],
    ['a form no job has', [0, 'a', T0, forms, ['j1', 0, 'j2', 0]]],
    ['no jobs', [0, 'a', T0, forms, []]],
    ['a name without its form', [0, 'a', T0, forms, ['j1', 0, 'j2']]],
    ['a name that is not a string', [0, 'a', T0, forms, ['j1', 0, 2, 1]]],
    ['a form past the forms', [0, 'a', T0, forms, ['j1', 0, 'j2', 2]]],
    ['a negative form', [0, 'a', T0, forms, ['j1', 0, 'j2', -1]]],
    ['a fractional form', [0, 'a', T0, forms, ['j1', 0, 'j2', 0.5]]],
    ['a form given as text', [0, 'a', T0, forms, ['j1', 0, 'j2', '1']]],
    ['one job too many', [0, 'a', T0, forms, Array.from({ length: MAX_COMMANDS_PER_BATCH + 1 }, (_, i) => [`j${i}`, i % 2]).flat()]],
    ['an unregister batch of two fields', [1, 'a']],
    ['an unregister batch of no jobs', [1, 'a', []]],
    ['an unregister batch of one job too many', [1, 'a', Array.from({ length: MAX_COMMANDS_PER_BATCH + 1 }, (_, i) => `j${i}`)]],
    ['an unregistered name that is not a string', [1, 'a', ['j1', 2]]],
    ['an unregister batch with a time', [1, 'a', T0, ['j1']]],
    ['the commands written out whole, as before', [register('j1')]],
  ];

  for (const [name, payload] of spoiled) {
    it(`is skipped as malformed with ${name}`, () => {
      expect(batchCommands(payload)).toBeNull();
      expect(decodeEntry(encode([1, payload, BATCH_VERSION]), BATCH_VERSION, SUPPORTED)).toEqual({ kind: 'skip', reason: 'malformed' });
    });
  }

  it('reads any registrations written back alike, and skips any bytes it would not write rather than throw', () => {
    const name = fc.string({ maxLength: 20 });
    const spec = fc.constantFrom(hourly, paris, parseSpec({ at: T0 }), parseSpec({ delayAfterCompletion: '1m' }));
    const form = fc.tuple(spec, fc.constantFrom('one' as const, 'all' as const), fc.constantFrom(plain, queued));
    fc.assert(
      fc.property(fc.array(fc.tuple(name, form), { minLength: 1, maxLength: MAX_COMMANDS_PER_BATCH }), (jobs) => {
        const commands = jobs.map(([job, [s, mode, policy]]) => register(job, s, policy, mode));
        expect(readBack(commands)).toEqual(commands);
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (data) => {
        const decoded = decodeEntry(encode([1, data, BATCH_VERSION]), BATCH_VERSION, SUPPORTED);
        expect(decoded.kind).toBe('skip');
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const commands = batchCommands(value);
        if (commands !== null) expect(readBack(commands)).toEqual(commands);
      }),
    );
  });
});
