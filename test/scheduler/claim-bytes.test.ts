/**
 * The scheduler's kept claims are bounded by what they take in a snapshot (maxClaimBytes, from
 * CLAIM_BYTES_VERSION): before it, 10,000 claims of a mode 'all' job on six members, with long
 * errors, made a snapshot larger than a member behind takes in (MAX_SNAPSHOT_BYTES), and no
 * member behind it ever caught up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLAIM_PART_BYTES, CLAIM_RECORD_BYTES, claimBytes, jsonTextBytes, numberBytes } from '../../src/scheduler/claim-footprint.js';
import { MAX_RUN_ERROR_LENGTH, runError, type SchedulerCommand } from '../../src/scheduler/command.js';
import { claimKey, type ApplyResult, type ClaimRecord } from '../../src/scheduler/records.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SCHEDULER_DEFAULTS, SchedulerState } from '../../src/scheduler/state.js';
import { MAX_SNAPSHOT_BYTES } from '../../src/transport/constants.js';
import { CLAIM_BYTES_VERSION, MEMBERSHIP_VERSION } from '../../src/version/versions.js';
import { intents, resolve, ROOMY, T0 } from '../fixtures/scheduler-intents.js';

const utf8 = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** A run's error of `length` characters of every kind JSON writes apart: escapes, UTF-8 of 1 to 4 bytes, lone surrogates. */
function errorText(seed: number, length: number): string {
  const pieces = ['a', '"', '\\', '\n', '\u0001', 'é', '€', '😀', '\ud800', '\udc00'];
  let text = '';
  for (let k = 0; text.length < length; k++) text += pieces[(seed + k * 7) % pieces.length];
  return text.slice(0, length);
}

/** What the snapshot's claims take: each record with its comma, and the lists of open and in-progress claims. */
function snapshotClaimBytes(state: SchedulerState): number {
  const top = JSON.parse(Buffer.from(encodeSchedulerSnapshot(state)).toString('utf8')) as unknown[];
  const claims = top[2] as unknown[];
  return claims.reduce<number>((sum, claim) => sum + utf8(claim) + 1, 0) + utf8(top[5]) - 2 + utf8(top[6]) - 2;
}

/** Applies the intents as applyIntents does, giving each outcome with an error one of up to 700 characters. */
function applyWithLongErrors(state: SchedulerState, xs: Parameters<typeof resolve>[0][], version: number, each?: (result: ApplyResult) => void): void {
  xs.forEach((i, k) => {
    const index = k + 1;
    let command: SchedulerCommand = resolve(i, index, state);
    if (command.type === 'outcome' && command.error !== undefined) command = { ...command, error: errorText(index, (index * 97) % 700) };
    each?.(state.apply(index, command, version));
  });
}

/** The claims a command's result hands back. */
const handedBack = (result: ApplyResult): readonly ClaimRecord[] => (result.ok ? (result.cancelled ?? (result.claim === undefined ? [] : [result.claim])) : []);

describe('claim-footprint', () => {
  it('counts the bytes JSON gives any text, exactly', () => {
    // Any code unit alone (lone surrogates, controls), and whole code points of every length.
    const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    const text = fc.oneof(fc.string({ unit: codeUnit, maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 60 }));
    fc.assert(fc.property(text, (text) => {
      expect(jsonTextBytes(text)).toBe(utf8(text));
    }), { numRuns: 2000 });
  });

  it('counts the characters JSON prints any number with', () => {
    const number = fc.oneof(fc.integer({ min: -1e15, max: 1e15 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 9, 10, 99, 100, T0, T0 + 0.5, Number.MAX_SAFE_INTEGER));
    fc.assert(fc.property(number, (n) => {
      expect(numberBytes(n)).toBe(JSON.stringify(n).length);
    }), { numRuns: 2000 });
  });
});

describe('runError', () => {
  it('cuts an error to MAX_RUN_ERROR_LENGTH code units, never between the two of a surrogate pair', () => {
    expect(runError('boom')).toBe('boom');
    expect(runError('x'.repeat(MAX_RUN_ERROR_LENGTH + 9))).toBe('x'.repeat(MAX_RUN_ERROR_LENGTH));
    // A pair whose first half is the last unit that fits goes whole.
    const split = 'x'.repeat(MAX_RUN_ERROR_LENGTH - 1) + '😀';
    expect(runError(split)).toBe('x'.repeat(MAX_RUN_ERROR_LENGTH - 1));
    const whole = 'x'.repeat(MAX_RUN_ERROR_LENGTH - 2) + '😀y';
    expect(runError(whole)).toBe('x'.repeat(MAX_RUN_ERROR_LENGTH - 2) + '😀');
  });
});

describe('the kept claims bounded in bytes', () => {
  it('take no more than they count, and never more than the bound but for the claims a command hands back, after every command from CLAIM_BYTES_VERSION on', () => {
    fc.assert(
      fc.property(intents(80), fc.integer({ min: 300, max: 3000 }), (xs, maxClaimBytes) => {
        const state = new SchedulerState({ ...ROOMY, maxClaimBytes });
        applyWithLongErrors(state, xs, CLAIM_BYTES_VERSION, (result) => {
          // A claim handed back is kept, even past the bound (its caller acts on it).
          const handed = handedBack(result);
          for (const claim of handed) expect(state.claims.get(claimKey(claim.job, claim.slotMs))).toBe(claim);
          expect(state.claimBytes).toBeLessThanOrEqual(Math.max(maxClaimBytes, handed.reduce((sum, c) => sum + claimBytes(c), 0)));
          // What is tracked is what the kept claims measure now: no change to a claim went uncounted.
          expect(state.claimBytes).toBe([...state.claims.values()].reduce((sum, c) => sum + claimBytes(c), 0));
        });
        expect(snapshotClaimBytes(state)).toBeLessThanOrEqual(state.claimBytes);
        for (const claim of state.claims.values()) for (const o of claim.outcomes.values()) expect(o.error?.length ?? 0).toBeLessThanOrEqual(MAX_RUN_ERROR_LENGTH);
      }),
      { numRuns: 200 },
    );
  });

  it('are counted within the record and part allowances of what the snapshot takes', () => {
    fc.assert(
      fc.property(intents(80), (xs) => {
        const state = new SchedulerState(ROOMY);
        applyWithLongErrors(state, xs, CLAIM_BYTES_VERSION);
        const taken = snapshotClaimBytes(state);
        expect(state.claimBytes).toBeGreaterThanOrEqual(taken);
        const allowances = [...state.claims.values()].reduce((sum, c) => sum + CLAIM_RECORD_BYTES + CLAIM_PART_BYTES * (c.outcomes.size + c.starts.size + (c.cancelled === null ? 0 : 1)), 0);
        expect(state.claimBytes - taken).toBeLessThanOrEqual(allowances);
      }),
      { numRuns: 100 },
    );
  });

  it('never forget the claim the command that passed the bound hands back', () => {
    const state = new SchedulerState({ ...ROOMY, maxClaimBytes: 400 });
    let index = 0;
    state.apply(++index, { type: 'register', job: 'j', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy: { retries: 1, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: T0 }, CLAIM_BYTES_VERSION);
    for (let slot = 1; slot <= 5; slot++) state.apply(++index, { type: 'claim', job: 'j', slotMs: T0 + slot * 1000, assignees: ['a'] }, CLAIM_BYTES_VERSION);
    const oldest = [...state.claims.values()][0]!;
    // Moved to a member of a long name, the oldest claim takes the claims past the bound: others go, it stays.
    const result = state.apply(index + 1, { type: 'reassign', job: 'j', slotMs: oldest.slotMs, fromToken: oldest.token, assignees: ['m'.repeat(300)], reason: 'assignee-lost', atMs: oldest.slotMs }, CLAIM_BYTES_VERSION);
    expect(result).toMatchObject({ ok: true, claim: oldest });
    expect(state.claims.get(claimKey('j', oldest.slotMs))).toBe(oldest);
    expect(state.claims.size).toBeLessThan(5);
  });

  it('are forgotten alike by a state restored from a snapshot, which keeps every claim it holds', () => {
    fc.assert(
      fc.property(intents(60), intents(40), fc.integer({ min: 300, max: 3000 }), (prefix, suffix, maxClaimBytes) => {
        const limits = { ...ROOMY, maxClaimBytes };
        // Taken under an earlier version, the snapshot holds more than the bound: the restore keeps it whole.
        const live = new SchedulerState(limits);
        applyWithLongErrors(live, prefix, MEMBERSHIP_VERSION);
        const restored = new SchedulerState(limits);
        restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(live));
        expect(restored.claims.size).toBe(live.claims.size);
        expect(restored.claimBytes).toBe(live.claimBytes);
        live.versionRaised(CLAIM_BYTES_VERSION);
        restored.versionRaised(CLAIM_BYTES_VERSION);
        expect(live.claimBytes).toBeLessThanOrEqual(maxClaimBytes);
        suffix.forEach((i, k) => {
          const command = resolve(i, 1000 + k, live);
          expect(restored.apply(1000 + k, command, CLAIM_BYTES_VERSION)).toEqual(live.apply(1000 + k, command, CLAIM_BYTES_VERSION));
        });
        expect(encodeSchedulerSnapshot(restored)).toEqual(encodeSchedulerSnapshot(live));
      }),
      { numRuns: 150 },
    );
  });

  it('keep a mode all job on six members with long errors within a snapshot a member behind takes in, keeping the newest', () => {
    const members = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'].map((m) => `${m}.cluster.internal:7000`);
    const fill = (version: number, slots: number): SchedulerState => {
      const state = new SchedulerState();
      let index = 0;
      for (const member of members) state.apply(++index, { type: 'register', job: 'audit', spec: { kind: 'every', everyMs: 1000 }, mode: 'all', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member, atMs: T0 }, version);
      for (let slot = 1; slot <= slots; slot++) {
        const slotMs = T0 + slot * 1000;
        const token = ++index;
        state.apply(token, { type: 'claim', job: 'audit', slotMs, assignees: members }, version);
        for (const member of members) {
          state.apply(++index, { type: 'started', job: 'audit', slotMs, token, member, atMs: slotMs }, version);
          state.apply(++index, { type: 'outcome', job: 'audit', slotMs, token, member, outcome: 'failed', atMs: slotMs + 5, error: 'x'.repeat(MAX_RUN_ERROR_LENGTH + 100) }, version);
        }
      }
      return state;
    };
    const bounded = fill(CLAIM_BYTES_VERSION, SCHEDULER_DEFAULTS.maxClaimsKept);
    const bytes = encodeSchedulerSnapshot(bounded).byteLength;
    expect(bounded.claimBytes).toBeLessThanOrEqual(SCHEDULER_DEFAULTS.maxClaimBytes);
    expect(bytes).toBeLessThan(SCHEDULER_DEFAULTS.maxClaimBytes + 4096);
    // The newest slots are kept, the oldest forgotten: about the bound's worth of claims.
    const kept = [...bounded.claims.values()];
    expect(kept.at(-1)?.slotMs).toBe(T0 + SCHEDULER_DEFAULTS.maxClaimsKept * 1000);
    expect(kept.length).toBe(Math.floor(SCHEDULER_DEFAULTS.maxClaimsKept - (kept[0]!.slotMs - T0) / 1000) + 1);
    expect(kept.length).toBeLessThan(SCHEDULER_DEFAULTS.maxClaimsKept / 5);
    // Before the version, every claim up to the count is kept, and every error whole: at a tenth
    // of the slots the snapshot is already past the bound, and the count allows ten times as many.
    const unbounded = fill(MEMBERSHIP_VERSION, SCHEDULER_DEFAULTS.maxClaimsKept / 10);
    expect(unbounded.claims.size).toBe(SCHEDULER_DEFAULTS.maxClaimsKept / 10);
    expect(unbounded.claimBytes).toBeGreaterThan(SCHEDULER_DEFAULTS.maxClaimBytes);
    expect(10 * encodeSchedulerSnapshot(unbounded).byteLength).toBeGreaterThan(MAX_SNAPSHOT_BYTES);
  });
});
