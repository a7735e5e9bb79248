import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { CronraftError, StorageError } from '../src/errors.js';
import { EntryType, emptyHardState } from '../src/raft/types.js';
import type { Entry, HardState } from '../src/raft/types.js';
import type { LogStorage, StorageBatch, StoredState } from '../src/storage/log-storage.js';

/**
 * The behaviour every LogStorage must have, run against each implementation (as abstract-level's
 * shared suite is run against every level). A factory makes stores that are not yet open.
 */
export interface LogStorageFactory {
  /** A store over new, empty data. */
  create(): Promise<LogStorage>;
  /** Another store over the data of `previous`, as a restarted process would make. Does not close `previous`. */
  reopen(previous: LogStorage): Promise<LogStorage>;
}

export interface ComplianceOptions {
  /** fast-check runs of the random-batches property; each opens and syncs a real store several times. */
  readonly propertyRuns?: number;
}

const DEFAULT_PROPERTY_RUNS = 100;
const LARGE_BATCH = 10_000;

export function entry(index: number, term: number, data: Uint8Array = Uint8Array.of(index & 0xff), pid = `m#${index}`): Entry {
  return { index, term, type: EntryType.Normal, data, pid };
}

export function entries(from: number, to: number, term: number): Entry[] {
  const result: Entry[] = [];
  for (let index = from; index <= to; index++) result.push(entry(index, term));
  return result;
}

export function describeLogStorageCompliance(name: string, factory: LogStorageFactory, options: ComplianceOptions = {}): void {
  describe(`LogStorage compliance: ${name}`, () => {
    const live: LogStorage[] = [];

    afterEach(async () => {
      for (const store of live.splice(0)) await store.close();
    });

    async function created(): Promise<LogStorage> {
      const store = await factory.create();
      live.push(store);
      return store;
    }

    async function opened(): Promise<{ store: LogStorage; state: StoredState }> {
      const store = await created();
      return { store, state: await store.open() };
    }

    /** Closes `previous` and opens its data again, as after a restart. */
    async function restart(previous: LogStorage): Promise<{ store: LogStorage; state: StoredState }> {
      await previous.close();
      const store = await factory.reopen(previous);
      live.push(store);
      return { store, state: await store.open() };
    }

    async function expectStorageError(promise: Promise<unknown>, code: string): Promise<StorageError> {
      const error: unknown = await promise.then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).code).toBe(code);
      return error as StorageError;
    }

    async function expectInvalid(promise: Promise<unknown>): Promise<void> {
      await expect(promise).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    }

    describe('a new store', () => {
      it('opens empty', async () => {
        const { store, state } = await opened();
        expect(state).toEqual({ identity: null, hardState: emptyHardState, snapshot: { index: 0, term: 0 }, entries: [] });
        expect(store.firstIndex()).toBe(1);
        expect(store.snapshot()).toEqual({ index: 0, term: 0 });
      });

      it('is still empty after a restart', async () => {
        const { store } = await opened();
        const { store: again, state } = await restart(store);
        expect(state).toEqual({ identity: null, hardState: emptyHardState, snapshot: { index: 0, term: 0 }, entries: [] });
        expect(again.firstIndex()).toBe(1);
      });

      it('refuses calls before open() and after close()', async () => {
        const store = await created();
        expect(() => store.firstIndex()).toThrow(CronraftError);
        await expect(store.save({ entries: [] })).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
        await store.open();
        await store.close();
        expect(() => store.snapshot()).toThrow(/not open/);
        await expect(store.setIdentity({ clusterId: 'c', nodeId: 'n' })).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
      });

      it('cannot be opened twice at once', async () => {
        const { store } = await opened();
        const second = await factory.reopen(store);
        const error = await expectStorageError(second.open(), 'CRONRAFT_STORAGE_UNREADABLE');
        expect(error.message).toMatch(/lock|in use|already open/i);
        await store.close();
        live.push(second);
        await expect(second.open()).resolves.toBeDefined();
      });
    });

    describe('save and restart', () => {
      it('round-trips hard state and entries', async () => {
        const { store } = await opened();
        const hardState: HardState = { term: 3, vote: '127.0.0.1:7002', commit: 2 };
        const written = [entry(1, 1), { ...entry(2, 2), type: EntryType.Noop, data: new Uint8Array(0), pid: '' }, entry(3, 3)];
        await store.save({ hardState, entries: written });
        const { state } = await restart(store);
        expect(state.hardState).toEqual(hardState);
        expect(state.entries).toEqual(written);
      });

      it('appends across batches', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 3, 1) });
        await store.save({ entries: entries(4, 4, 1), hardState: { term: 1, vote: null, commit: 4 } });
        await store.save({ entries: entries(5, 9, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 4, 1), ...entries(5, 9, 2)]);
        expect(state.hardState).toEqual({ term: 1, vote: null, commit: 4 });
      });

      it('replaces a suffix with a shorter one and deletes what is past it', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 10, 1) });
        await store.save({ entries: entries(6, 7, 2) });
        const { store: again, state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 5, 1), ...entries(6, 7, 2)]);
        // The removed entries stay removed when the log grows back over them.
        await again.save({ entries: entries(8, 8, 3) });
        const { state: later } = await restart(again);
        expect(later.entries).toEqual([...entries(1, 5, 1), ...entries(6, 7, 2), entry(8, 3)]);
      });

      it('replaces a suffix with a longer one', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 4, 1) });
        await store.save({ entries: entries(3, 8, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 2, 1), ...entries(3, 8, 2)]);
      });

      it('replaces the whole log', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 6, 1) });
        await store.save({ entries: entries(1, 2, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual(entries(1, 2, 2));
      });

      it('saves hard state without entries, keeping the log', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 2, 1) });
        await store.save({ hardState: { term: 5, vote: 'b', commit: 0 }, entries: [] });
        await store.save({ hardState: { term: 5, vote: 'b', commit: 2 }, entries: [] });
        const { state } = await restart(store);
        expect(state.hardState).toEqual({ term: 5, vote: 'b', commit: 2 });
        expect(state.entries).toEqual(entries(1, 2, 1));
      });

      it('saves entries without hard state, keeping the hard state', async () => {
        const { store } = await opened();
        await store.save({ hardState: { term: 2, vote: 'a', commit: 0 }, entries: [] });
        await store.save({ entries: entries(1, 3, 2) });
        const { state } = await restart(store);
        expect(state.hardState).toEqual({ term: 2, vote: 'a', commit: 0 });
        expect(state.entries).toEqual(entries(1, 3, 2));
      });

      it('treats an empty batch as a no-op', async () => {
        const { store } = await opened();
        await store.save({ entries: [] });
        const { state } = await restart(store);
        expect(state.entries).toEqual([]);
        expect(state.hardState).toEqual(emptyHardState);
      });

      it('keeps the order of saves that were not awaited one by one', async () => {
        const { store } = await opened();
        const saves: Promise<void>[] = [];
        for (let index = 1; index <= 50; index++) {
          saves.push(store.save({ entries: [entry(index, 1)], hardState: { term: 1, vote: null, commit: Math.min(index - 1, 40) } }));
        }
        // A replacement queued behind the appends must land after them.
        saves.push(store.save({ entries: entries(41, 45, 2) }));
        await Promise.all(saves);
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 40, 1), ...entries(41, 45, 2)]);
        expect(state.hardState.commit).toBe(40);
      });

      it(`saves and reads back a batch of ${LARGE_BATCH} entries`, async () => {
        const { store } = await opened();
        const many = entries(1, LARGE_BATCH, 7);
        await store.save({ hardState: { term: 7, vote: 'x', commit: LARGE_BATCH }, entries: many });
        const { store: again, state } = await restart(store);
        expect(state.entries.length).toBe(LARGE_BATCH);
        expect(state.entries).toEqual(many);
        // Truncating most of it deletes every removed entry.
        await again.save({ hardState: { term: 8, vote: 'y', commit: 10 }, entries: entries(11, 11, 8) });
        const { state: later } = await restart(again);
        expect(later.entries).toEqual([...entries(1, 10, 7), entry(11, 8)]);
      });
    });

    describe('data fidelity', () => {
      it('keeps empty, binary, view and Buffer data byte for byte', async () => {
        const { store } = await opened();
        const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
        const backing = Uint8Array.from({ length: 64 }, (_, i) => 255 - i);
        const view = backing.subarray(10, 20);
        const buffer = Buffer.from([0, 0xff, 0x80, 0x7f]);
        await store.save({
          entries: [entry(1, 1, new Uint8Array(0), ''), entry(2, 1, everyByte), entry(3, 1, view), entry(4, 1, buffer, 'ünïcødé#✓')],
        });
        const { state } = await restart(store);
        const data = state.entries.map((stored) => stored.data);
        for (const bytes of data) expect(bytes).toBeInstanceOf(Uint8Array);
        expect(data.map((bytes) => Array.from(bytes))).toEqual([[], Array.from(everyByte), Array.from(view), [0, 0xff, 0x80, 0x7f]]);
        expect(state.entries[3]?.pid).toBe('ünïcødé#✓');
      });

      it('copies what it is given: the caller may reuse its arrays and buffers', async () => {
        const { store } = await opened();
        const data = Uint8Array.of(1, 2, 3);
        const batch: Entry[] = [entry(1, 1, data)];
        const saving = store.save({ entries: batch });
        data.fill(9);
        batch.length = 0;
        await saving;
        const { state } = await restart(store);
        expect(Array.from(state.entries[0]?.data ?? [])).toEqual([1, 2, 3]);
      });
    });

    describe('identity', () => {
      const identity = { clusterId: 'cluster-a', nodeId: '127.0.0.1:7001' };

      it('is written once and kept across restarts', async () => {
        const { store, state } = await opened();
        expect(state.identity).toBeNull();
        await store.setIdentity(identity);
        await store.setIdentity({ ...identity });
        const { store: again, state: reopened } = await restart(store);
        expect(reopened.identity).toEqual(identity);
        await again.setIdentity(identity);
      });

      it('refuses another cluster or member, naming both', async () => {
        const { store } = await opened();
        await store.setIdentity(identity);
        const error = await expectStorageError(store.setIdentity({ clusterId: 'cluster-b', nodeId: identity.nodeId }), 'CRONRAFT_STORAGE_MISMATCH');
        expect(error.message).toContain('cluster-a');
        expect(error.message).toContain('cluster-b');
        const { store: again } = await restart(store);
        const other = await expectStorageError(again.setIdentity({ clusterId: identity.clusterId, nodeId: '127.0.0.1:7002' }), 'CRONRAFT_STORAGE_MISMATCH');
        expect(other.message).toContain('127.0.0.1:7001');
        expect(other.message).toContain('127.0.0.1:7002');
      });
    });

    describe('bad batches', () => {
      it('rejects a batch that would break the log and leaves the store as it was', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 3, 2), hardState: { term: 2, vote: null, commit: 3 } });
        await expectInvalid(store.save({ entries: [entry(5, 2)] }));
        await expectInvalid(store.save({ entries: [entry(4, 2), entry(6, 2)] }));
        await expectInvalid(store.save({ entries: [entry(4, 1)] }));
        await expectInvalid(store.save({ entries: [entry(4, 3), entry(5, 2)] }));
        await expectInvalid(store.save({ entries: [entry(0, 2)] }));
        await expectInvalid(store.save({ entries: [], hardState: { term: 2, vote: null, commit: 4 } }));
        await expectInvalid(store.save({ entries: [entry(2, 2)], hardState: { term: 2, vote: null, commit: 3 } }));
        await expectInvalid(store.save({ entries: [{ ...entry(4, 2), data: 'text' as unknown as Uint8Array }] }));
        // Cutting the log below the stored commit point, even without a new hard state.
        await expectInvalid(store.save({ entries: [entry(2, 3)] }));
        const { state } = await restart(store);
        expect(state.entries).toEqual(entries(1, 3, 2));
        expect(state.hardState).toEqual({ term: 2, vote: null, commit: 3 });
      });
    });

    describe('random batches against a model', () => {
      it('holds what a model log holds after any sequence of appends, replacements and restarts', async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(commandArbitrary, { minLength: 1, maxLength: 25 }), async (commands) => {
            let store = await factory.create();
            const model: Model = { entries: [], hardState: { ...emptyHardState } };
            try {
              await store.open();
              for (const command of commands) {
                if (command.kind === 'restart') {
                  await store.close();
                  store = await factory.reopen(store);
                  const state = await store.open();
                  expect(state.entries).toEqual(model.entries);
                  continue;
                }
                const batch = batchFor(command, model);
                await store.save(batch);
                applyToModel(model, batch);
              }
              await store.close();
              store = await factory.reopen(store);
              const state = await store.open();
              expect(state.entries).toEqual(model.entries);
              expect(state.hardState).toEqual(model.hardState);
              expect(store.firstIndex()).toBe(1);
            } finally {
              await store.close();
            }
          }),
          { numRuns: options.propertyRuns ?? DEFAULT_PROPERTY_RUNS },
        );
      });
    });
  });
}

interface Model {
  entries: Entry[];
  hardState: HardState;
}

type Command =
  | { readonly kind: 'append'; readonly count: number; readonly newTerm: boolean; readonly commit: number | null; readonly data: Uint8Array }
  | { readonly kind: 'replace'; readonly back: number; readonly count: number; readonly commit: number | null; readonly data: Uint8Array }
  | { readonly kind: 'hard-state'; readonly vote: string | null; readonly commit: number }
  | { readonly kind: 'restart' };

/** A commit point as a fraction of the way from the current commit to the last index. */
const commitArbitrary = fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null });

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 0, max: 20 }), newTerm: fc.boolean(), commit: commitArbitrary, data: fc.uint8Array({ maxLength: 24 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replace' as const), back: fc.integer({ min: 1, max: 12 }), count: fc.integer({ min: 1, max: 8 }), commit: commitArbitrary, data: fc.uint8Array({ maxLength: 24 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('hard-state' as const), vote: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null }), commit: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

/** Turns a command into a batch Raft could write: replacements never reach committed entries. */
function batchFor(command: Exclude<Command, { kind: 'restart' }>, model: Model): StorageBatch {
  const last = model.entries.length;
  const lastTerm = model.entries[last - 1]?.term ?? 0;
  const { commit } = model.hardState;
  const commitBetween = (fraction: number, lastIndex: number): number => commit + Math.floor((lastIndex - commit) * fraction);
  if (command.kind === 'hard-state') {
    return { hardState: { term: model.hardState.term + 1, vote: command.vote, commit: commitBetween(command.commit, last) }, entries: [] };
  }
  let first: number;
  let term: number;
  if (command.kind === 'append') {
    first = last + 1;
    term = Math.max(lastTerm, model.hardState.term) + (command.newTerm ? 1 : 0);
  } else {
    first = Math.max(commit + 1, last - command.back + 1);
    term = Math.max(lastTerm, model.hardState.term) + 1;
  }
  const count = command.count;
  const written: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const data = command.data.map((byte) => (byte + i) & 0xff);
    written.push({ index: first + i, term, type: data.length === 0 ? EntryType.Noop : EntryType.Normal, data, pid: data.length === 0 ? '' : `m#${first + i}` });
  }
  const lastIndex = count === 0 ? last : first + count - 1;
  if (command.commit === null) return { entries: written };
  return { hardState: { term, vote: 'a', commit: Math.min(lastIndex, commitBetween(command.commit, lastIndex)) }, entries: written };
}

function applyToModel(model: Model, batch: StorageBatch): void {
  const first = batch.entries[0];
  if (first !== undefined) {
    model.entries.length = first.index - 1;
    for (const written of batch.entries) model.entries.push({ ...written, data: new Uint8Array(written.data) });
  }
  if (batch.hardState !== undefined) model.hardState = { ...batch.hardState };
}
