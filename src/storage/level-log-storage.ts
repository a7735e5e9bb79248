import { readdir, stat } from 'node:fs/promises';
import { Level } from 'level';
import { StorageError } from '../errors.js';
import { emptyHardState } from '../raft/types.js';
import type { Entry, HardState, Snapshot, SnapshotMeta } from '../raft/types.js';
import { DURABLE_MARK_FILE, DurableMark } from './durable-mark.js';
import {
  ValueShapeError,
  decodeFormat,
  decodeHardState,
  decodeIdentity,
  decodeSegment,
  decodeSnapshot,
  encodeFormat,
  encodeHardState,
  encodeIdentity,
  encodeSegment,
  encodeSnapshot,
  encodeSnapshotFileRecord,
  isSnapshotFileRecord,
  sealValue,
  unsealValue,
} from './level-codec.js';
import { ENTRY_KEYS_END, FORMAT_VERSION, MetaName, READABLE_FORMAT_VERSIONS, SEALED_FORMAT_VERSION, describeKey, entryKey, metaKeys, parseKey } from './level-layout.js';
import { SEALED_STORE_VERSION } from '../version/versions.js';
import type { LogStorage, StorageBatch, StorageIdentity, StoredState } from './log-storage.js';
import { checkBatch, checkCompaction, checkIdentity, copyIdentity, mismatchMessage, notOpenError, sameIdentity } from './store-checks.js';
import { StoredSegments } from './stored-segments.js';
import { TermIndex } from './term-index.js';
import { EntryRecords } from '../bytes/entry-records.js';
import { WriteQueue } from './write-queue.js';
import { StoreDirectoryWatch } from './store-directory-watch.js';
import type { BeforeBatch, WriteOp } from './write-queue.js';
import { SnapshotFiles, isSnapshotFileName } from './snapshot-files.js';
import { errnoCode } from './durable-files.js';
import { crc32 } from '../bytes/crc32.js';

export interface LevelLogStorageOptions {
  /**
   * Sync every write to disk before save() resolves (default true). Without it a write survives
   * the process crashing but not the machine: only for tests and benchmarks.
   */
  readonly sync?: boolean;
  /** The member's encoder of entry records, shared with its transport (see EntryRecords); one of its own when omitted. */
  readonly entryRecords?: EntryRecords;
  /** Told how long each synced write took (the metrics' fsync histogram); not called for writes without a sync. */
  readonly onSyncedWrite?: (durationMs: number) => void;
}

/** The file LevelDB keeps in every store it created: its absence marks a directory as not a store. */
const LEVELDB_CURRENT_FILE = 'CURRENT';

/**
 * LevelDB's open error when a file of the database is not there: the manifest CURRENT names
 * (removed, or CURRENT damaged, naming another: a stranger's garbage CURRENT was reported
 * unreadable, as for want of permission). The directory and CURRENT are there by then
 * (inspectDirectory).
 */
const MISSING_FILE = /: No such file or directory/;

/** How many records open() takes from the iterator at a time. */
const READ_CHUNK = 1_000;

type Db = Level<Uint8Array, Uint8Array>;

/** What an open store knows; gone once it is closed. */
interface Session {
  readonly db: Db;
  readonly queue: WriteQueue;
  readonly terms: TermIndex;
  readonly segments: StoredSegments;
  identity: StorageIdentity | null;
  /** The last hard state saved: a batch must not cut off its commit point, nor go back on it. */
  hardState: HardState;
  /** The last hard state known durable (synced), which the durable mark records at times. */
  durable: HardState;
  readonly mark: DurableMark;
  /**
   * Entry keys from `staleFrom` to `staleTo` are stale: they hold no entry past a snapshot that
   * is durable. They are removed in the background, by `clearing` while it runs (see compact()).
   */
  staleFrom: number;
  staleTo: number;
  clearing: Promise<void> | null;
  /** The removal of the snapshot files no durable record points to any more, while it runs (see #removeOtherSnapshotFiles). */
  removingFiles: Promise<void>;
}

/**
 * LogStorage in a LevelDB directory (classic-level, through `level`). The layout is in
 * level-layout.ts and the value encodings in level-codec.ts. save() and compact() each write one
 * atomic batch and read nothing: the store keeps the terms of its log in memory to check
 * batches (TermIndex), and its segments to know which keys a batch deletes (StoredSegments).
 * The segments a snapshot leaves stale are removed after it, in the background (see compact()).
 * Beside LevelDB's files, a durable mark records the last hard state the store knew durable, so
 * that open() refuses a store whose log lost synced writes (see durable-mark.ts), and once the
 * store seals its values, each snapshot's data is in a file of its own (see snapshot-files.ts).
 */
export class LevelLogStorage implements LogStorage {
  readonly path: string;
  private readonly sync: boolean;
  /** Whether the store's directory is still the one opened (see StoreDirectoryWatch); null while closed. */
  #watch: StoreDirectoryWatch | null = null;
  /** Whether values are written sealed (format 3), and whether the format's key must say so with the next write. */
  #sealing = false;
  #formatDue = false;
  readonly #onSyncedWrite: ((durationMs: number) => void) | undefined;
  readonly #records: EntryRecords;
  readonly #files: SnapshotFiles;
  private session: Session | null = null;

  constructor(path: string, options: LevelLogStorageOptions = {}) {
    this.path = path;
    this.sync = options.sync ?? true;
    this.#onSyncedWrite = options.onSyncedWrite;
    this.#records = options.entryRecords ?? new EntryRecords();
    this.#files = new SnapshotFiles(path);
  }

  async open(): Promise<StoredState> {
    if (this.session !== null) throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, 'the store is already open');
    const exists = await this.inspectDirectory();
    // Never create a store over a directory that holds something else: LevelDB would add its
    // files beside the stranger's and report an empty store. The option goes to the constructor
    // too because abstract-level opens on its own, with the constructor's options, if open() is
    // not called in the same tick.
    const db: Db = new Level<Uint8Array, Uint8Array>(this.path, { keyEncoding: 'view', valueEncoding: 'view', createIfMissing: !exists });
    try {
      await db.open({ createIfMissing: !exists });
    } catch (error) {
      throw this.openError(error);
    }
    try {
      // Read once LevelDB's lock is held: no other store writes the mark meanwhile.
      const mark = new DurableMark(this.path);
      await mark.read();
      const read = await this.read(db);
      if (read === null) {
        mark.check(this.path, emptyHardState, 0);
        await db.put(metaKeys.format, encodeFormat(FORMAT_VERSION), { sync: this.sync });
        this.#sealing = false;
        this.#formatDue = false;
        const empty: StoredState = { identity: null, hardState: { ...emptyHardState }, snapshot: emptySnapshot(), entries: [] };
        this.#watch = await StoreDirectoryWatch.start(this.path);
        this.begin(db, mark, empty, new StoredSegments([]), 0);
        return empty;
      }
      const { state, version, segments, snapshotFile } = read;
      // Before anything is written: a store that lost durable writes is left as it was found.
      mark.check(this.path, state.hardState, state.snapshot.index + state.entries.length);
      // A store of format 1 is read as is, and marked format 2 before its segments are touched:
      // from here on an older cronraft refuses it rather than misreading a segment.
      if (version < FORMAT_VERSION) await db.put(metaKeys.format, encodeFormat(FORMAT_VERSION), { sync: this.sync });
      this.#sealing = version >= SEALED_FORMAT_VERSION;
      this.#formatDue = false;
      // Segments with no entry past the snapshot are stale: the removal after a snapshot had not
      // finished, or a segment straddling the snapshot has since been replaced past it. read()
      // decoded them but kept none of their entries. They go as after a compaction to the
      // snapshot: those written past it first, for the reason compact() gives.
      const { now, staleTo } = segments.compact(state.snapshot.index, state.snapshot.index + state.entries.length);
      const deletes: WriteOp[] = [];
      pushDeletes(deletes, now);
      if (deletes.length > 0) await db.batch(deletes, { sync: this.sync });
      if (staleTo !== null) await db.clear({ gte: entryKey(0), lte: entryKey(staleTo) });
      // Snapshot files no record points to: the one before the last snapshot (its removal had not
      // finished), or one written for a snapshot whose record a crash kept from being written.
      await this.#files.removeAllBut(snapshotFile ? state.snapshot : null);
      // What LevelDB's write-ahead log held is in a synced table now: durable, whatever the
      // store's sync option was when it was written.
      await mark.write(state.hardState);
      this.#watch = await StoreDirectoryWatch.start(this.path);
      this.begin(db, mark, state, segments, staleTo ?? 0);
      return state;
    } catch (error) {
      await db.close().catch(() => undefined);
      if (error instanceof StorageError) throw error;
      if (levelCode(error) === 'LEVEL_CORRUPTION') throw this.corrupt(`LevelDB reports corruption: ${messageOf(error)}`, error);
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `cannot read the store: ${messageOf(error)}`, { cause: error });
    }
  }

  async setIdentity(identity: StorageIdentity): Promise<void> {
    const session = this.current();
    checkIdentity(identity);
    if (session.identity !== null) {
      if (sameIdentity(session.identity, identity)) return;
      throw new StorageError('CRONRAFT_STORAGE_MISMATCH', this.path, mismatchMessage(session.identity, identity));
    }
    session.identity = copyIdentity(identity);
    await session.queue.write([{ type: 'put', key: metaKeys.identity, value: this.#value(encodeIdentity(identity)) }, ...this.#formatWrite()]);
  }

  async save(batch: StorageBatch): Promise<void> {
    const session = this.current();
    const lastIndex = checkBatch(batch, session.terms, session.hardState);
    // Everything is encoded before the segments in memory change, so that a value that cannot
    // be encoded leaves them as the disk is.
    const first = batch.entries[0];
    const segment = first === undefined ? null : { start: first.index, value: this.#value(encodeSegment(batch.entries, this.#records)) };
    const ops: WriteOp[] = [];
    let before: BeforeBatch | undefined;
    if (batch.snapshot !== undefined) {
      // An installed snapshot removes every stored segment: those written past its index now,
      // and the others once it is durable, as after a compaction.
      const record = this.#snapshotRecord(batch.snapshot);
      before = record.before;
      ops.push({ type: 'put', key: metaKeys.snapshot, value: record.value });
      pushDeletes(ops, session.segments.install(batch.snapshot.index));
    }
    if (batch.hardState !== undefined) ops.push({ type: 'put', key: metaKeys.hardstate, value: this.#value(encodeHardState(batch.hardState)) });
    if (segment !== null) {
      // One value for the whole batch. It replaces every stored entry from its first index on:
      // the segments after that index go, and one it starts within is cut by the reader.
      pushDeletes(ops, session.segments.write(segment.start, lastIndex));
      ops.push({ type: 'put', key: entryKey(segment.start), value: segment.value });
    }
    if (ops.length === 0) return;
    ops.push(...this.#formatWrite());
    if (batch.snapshot !== undefined) session.terms.install(batch.snapshot);
    session.terms.apply(batch.entries);
    if (batch.hardState !== undefined) session.hardState = copyHardState(batch.hardState);
    // Writes land in order: once this one is synced, so is every hard state saved before it.
    const upTo = session.hardState;
    const sync = batch.sync ?? true;
    await session.queue.write(ops, sync, before);
    if (this.sync && sync) session.durable = upTo;
    if (batch.snapshot !== undefined) {
      this.clearStale(session, batch.snapshot.index);
      // A record written without a sync may be lost with the machine: the file it replaced is
      // then the one a restart finds pointed to (without sync at all, no write outlives the machine).
      if (sync || !this.sync) this.#removeOtherSnapshotFiles(session, batch.snapshot);
    }
  }

  /**
   * Writes the snapshot through the write queue, then removes the segments it made stale in the
   * background. A del per key in the snapshot's own batch would be atomic, but building ten
   * thousand of them (one per entry in format 1) held the event loop for milliseconds at every
   * compaction. LevelDB's range delete, classic-level's
   * clear(), runs on libuv's pool instead, but in chunks outside any batch: so it starts only
   * once the snapshot is durable, and a crash part-way leaves keys below the snapshot, never a
   * gap in the retained log. open() ignores such keys and removes them. A stale segment that
   * was written past the snapshot (its tail replaced by a later segment) goes in the snapshot's
   * own batch: removed after the later one, its tail would come back (see StoredSegments).
   * Nothing writes below the retained log again (an installed snapshot never moves its start
   * back: checkBatch), so the removal cannot race a write. compact() resolves once the snapshot
   * is durable, and the durable mark with it (see durable-mark.ts); close() waits for the removal.
   */
  async compact(snapshot: Snapshot): Promise<void> {
    const session = this.current();
    checkCompaction(snapshot, session.terms, session.hardState.commit);
    const record = this.#snapshotRecord(snapshot);
    const ops: WriteOp[] = [{ type: 'put', key: metaKeys.snapshot, value: record.value }, ...this.#formatWrite()];
    const { now, staleTo } = session.segments.compact(snapshot.index, session.terms.lastIndex);
    session.terms.compact(snapshot);
    pushDeletes(ops, now);
    const upTo = session.hardState;
    await session.queue.write(ops, true, record.before);
    if (this.sync) session.durable = upTo;
    if (staleTo !== null) this.clearStale(session, staleTo);
    this.#removeOtherSnapshotFiles(session, snapshot);
    // A compaction comes once in many saves: the mark moves then, off the commit path.
    await session.mark.write(session.durable);
  }

  /**
   * The cluster version in force is `version` (as applied, or restored): from
   * SEALED_STORE_VERSION the store seals what it writes from then on, and says so (format 3)
   * with its next write. Before it, the store is written as the release before writes it, so
   * that a downgrade finds it readable.
   */
  clusterVersionInForce(version: number): void {
    if (version < SEALED_STORE_VERSION || this.#sealing) return;
    this.#sealing = true;
    this.#formatDue = true;
  }

  /**
   * A snapshot's record as the store writes it now, and the write of its data's file that must
   * come before it, once the store seals its values (before, the record holds the data, as the
   * release before reads it).
   */
  #snapshotRecord(snapshot: Snapshot): { readonly value: Uint8Array; readonly before?: BeforeBatch } {
    if (!this.#sealing) return { value: encodeSnapshot(snapshot) };
    const { index, term, data } = snapshot;
    return { value: sealValue(encodeSnapshotFileRecord(snapshot, crc32(data))), before: () => this.#files.write(index, term, data) };
  }

  /**
   * Removes, in the background, the snapshot files before `current`'s, whose record is durable:
   * one removal after another. One that fails leaves its files to the next open.
   */
  #removeOtherSnapshotFiles(session: Session, current: SnapshotMeta): void {
    if (!this.#sealing) return;
    session.removingFiles = session.removingFiles.then(() => this.#files.removeBelow(current.index)).catch(() => undefined);
  }

  /** A value as the store writes it now: sealed once it seals (see clusterVersionInForce). */
  #value(bytes: Uint8Array): Uint8Array {
    return this.#sealing ? sealValue(bytes) : bytes;
  }

  /** The format key's write that goes with the first write once sealing began, if not made yet. */
  #formatWrite(): WriteOp[] {
    if (!this.#formatDue) return [];
    this.#formatDue = false;
    return [{ type: 'put', key: metaKeys.format, value: encodeFormat(SEALED_FORMAT_VERSION) }];
  }

  firstIndex(): number {
    return this.current().terms.firstIndex;
  }

  snapshot(): SnapshotMeta {
    return { ...this.current().terms.snapshot };
  }

  async close(): Promise<void> {
    const session = this.session;
    if (session === null) return;
    this.session = null;
    this.#watch?.stop();
    this.#watch = null;
    try {
      await session.queue.idle();
      while (session.clearing !== null) await session.clearing;
      await session.removingFiles;
      await session.mark.write(session.durable);
    } finally {
      await session.db.close();
    }
  }

  /** `staleTo`: the keys up to it were removed at open. */
  private begin(db: Db, mark: DurableMark, state: StoredState, segments: StoredSegments, staleTo: number): void {
    const queue = new WriteQueue((ops, sync) => this.writeBatch(db, ops, sync));
    this.session = {
      db,
      queue,
      terms: new TermIndex(state.snapshot, state.entries),
      segments,
      identity: state.identity,
      hardState: copyHardState(state.hardState),
      durable: copyHardState(state.hardState),
      mark,
      staleFrom: staleTo + 1,
      staleTo,
      clearing: null,
      removingFiles: Promise.resolve(),
    };
  }

  /**
   * Removes the entry keys up to `to`, which a durable snapshot made stale, in the background:
   * one clear() at a time, each over everything stale when it starts. A failure fails every
   * later write (the disk is in doubt, as after a failed write); the keys left are removed at
   * the next open().
   */
  private clearStale(session: Session, to: number): void {
    session.staleTo = Math.max(session.staleTo, to);
    if (session.clearing !== null || session.staleFrom > session.staleTo) return;
    session.clearing = (async () => {
      try {
        while (session.staleFrom <= session.staleTo) {
          const end = session.staleTo;
          await session.db.clear({ gte: entryKey(session.staleFrom), lte: entryKey(end) });
          session.staleFrom = end + 1;
        }
      } catch (error) {
        session.queue.fail(new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `removing compacted entries failed; reopen the store: ${messageOf(error)}`, { cause: error }));
      } finally {
        session.clearing = null;
      }
    })();
  }

  private async writeBatch(db: Db, ops: WriteOp[], sync: boolean): Promise<void> {
    this.#refuseIfGone();
    try {
      // A chained batch rather than an array of operations: abstract-level copies and checks
      // each operation of an array in JavaScript, which cost several times as much main-thread
      // time per save.
      const batch = db.batch();
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value);
        else batch.del(op.key);
      }
      const synced = this.sync && sync;
      const startMs = synced && this.#onSyncedWrite !== undefined ? performance.now() : 0;
      // A synced write is what an acknowledgement stands on: the directory is looked at beside
      // it (on libuv's pool too, as the write), or was just before, so that none is acknowledged
      // once it is gone (STORE_DIRECTORY_LOOK_FRESH_MS after at most).
      await Promise.all([batch.write({ sync: synced }), synced ? this.#watch?.lookFresh() : undefined]);
      if (synced) this.#onSyncedWrite?.(performance.now() - startMs);
    } catch (error) {
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `a write failed; reopen the store: ${messageOf(error)}`, { cause: error });
    }
    this.#refuseIfGone();
  }

  /** Throws CRONRAFT_STORAGE_UNREADABLE once the store's directory is gone (StoreDirectoryWatch): known before a write, or seen beside it. */
  #refuseIfGone(): void {
    const gone = this.#watch?.gone ?? null;
    if (gone !== null) throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `${gone}: what it writes would be on no disk`);
  }

  private current(): Session {
    if (this.session === null) throw notOpenError(this.path);
    return this.session;
  }

  /**
   * Whether a store may already exist at the path. Throws when the path holds something that is
   * not a store, so that open() never initialises over it.
   */
  private async inspectDirectory(): Promise<boolean> {
    let names: string[];
    try {
      const info = await stat(this.path);
      if (!info.isDirectory()) throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, 'is not a directory');
      names = await readdir(this.path);
    } catch (error) {
      if (error instanceof StorageError) throw error;
      if (errnoCode(error) === 'ENOENT') return false;
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `cannot read the directory: ${messageOf(error)}`, { cause: error });
    }
    if (names.length === 0) return false;
    if (!names.includes(LEVELDB_CURRENT_FILE) && names.includes(DURABLE_MARK_FILE)) {
      throw this.corrupt(`holds a durable mark (${DURABLE_MARK_FILE}) but no LevelDB database: the log this store made durable is gone`);
    }
    const snapshotFile = names.find(isSnapshotFileName);
    if (!names.includes(LEVELDB_CURRENT_FILE) && snapshotFile !== undefined) {
      throw this.corrupt(`holds a snapshot's file (${snapshotFile}) but no LevelDB database: the log this store made durable is gone`);
    }
    if (!names.includes(LEVELDB_CURRENT_FILE)) {
      const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? ', …' : '');
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `is not a cronraft store: the directory is not empty and holds no LevelDB database (found ${shown})`);
    }
    return true;
  }

  private openError(error: unknown): StorageError {
    const code = levelCode(error);
    if (code === 'LEVEL_LOCKED') {
      return new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, 'is in use by another process or store (its LOCK is held)', { cause: error });
    }
    if (code === 'LEVEL_CORRUPTION') return new StorageError('CRONRAFT_STORAGE_CORRUPT', this.path, `LevelDB reports corruption: ${messageOf(error)}`, { cause: error });
    // A file of the database is gone (the manifest CURRENT names, say): the store is damaged,
    // not unreadable for want of permission or a lock, which an operator would look for.
    if (MISSING_FILE.test(messageOf(error))) return new StorageError('CRONRAFT_STORAGE_CORRUPT', this.path, `a file of the LevelDB database is missing: ${messageOf(error)}`, { cause: error });
    return new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `cannot open the LevelDB database: ${messageOf(error)}`, { cause: error });
  }

  /** Reads and checks everything; null when the database holds nothing (a new store). */
  private async read(db: Db): Promise<StoreRead | null> {
    const meta = new Map<MetaName, Uint8Array>();
    const stored: StoredValue[] = [];
    const iterator = db.iterator({ lt: ENTRY_KEYS_END });
    try {
      for (;;) {
        const chunk = await iterator.nextv(READ_CHUNK);
        if (chunk.length === 0) break;
        for (const [key, value] of chunk) {
          const parsed = parseKey(key);
          if (parsed === null) throw this.corrupt(`unknown ${describeKey(key)}`);
          if (parsed.kind === 'meta') meta.set(parsed.name, value);
          else stored.push({ key, index: parsed.index, value });
        }
      }
    } finally {
      await iterator.close();
    }
    // A key past the log's range is none of ours either.
    const beyond = await db.keys({ gte: ENTRY_KEYS_END, limit: 1 }).all();
    if (beyond[0] !== undefined) throw this.corrupt(`unknown ${describeKey(beyond[0])}`);

    const formatBytes = meta.get(MetaName.Format);
    if (formatBytes === undefined) {
      if (meta.size === 0 && stored.length === 0) return null;
      throw this.corrupt(`key "${MetaName.Format}" is missing although the store holds data`);
    }
    const version = this.decode(metaKeys.format, formatBytes, decodeFormat);
    if (!READABLE_FORMAT_VERSIONS.includes(version)) {
      throw this.corrupt(`key "${MetaName.Format}" holds format version ${version}; this version of cronraft reads versions ${READABLE_FORMAT_VERSIONS.join(', ')}`);
    }
    const identityBytes = meta.get(MetaName.Identity);
    const identity = identityBytes === undefined ? null : this.decode(metaKeys.identity, identityBytes, decodeIdentity);
    const hardStateBytes = meta.get(MetaName.HardState);
    const hardState: HardState = hardStateBytes === undefined ? { ...emptyHardState } : this.decode(metaKeys.hardstate, hardStateBytes, decodeHardState);
    const snapshotBytes = meta.get(MetaName.Snapshot);
    const record = snapshotBytes === undefined ? emptySnapshot() : this.decode(metaKeys.snapshot, snapshotBytes, decodeSnapshot);
    const snapshotFile = isSnapshotFileRecord(record);
    const snapshot: Snapshot = snapshotFile ? { index: record.file.index, term: record.file.term, data: await this.#files.read(record.file), ...(record.conf === undefined ? {} : { conf: record.conf }) } : record;

    const { entries, segments } = this.readLog(stored, snapshot);
    const lastIndex = snapshot.index + entries.length;
    if (hardState.commit > lastIndex) throw this.corrupt(`key "${MetaName.HardState}" has commit ${hardState.commit}, past the last index ${lastIndex}`);
    // Only committed entries are ever folded into a snapshot, so the commit point cannot be behind it.
    if (hardState.commit < snapshot.index) {
      throw this.corrupt(`key "${MetaName.HardState}" has commit ${hardState.commit}, below the index ${snapshot.index} of key "${MetaName.Snapshot}"`);
    }
    return { state: { identity, hardState, snapshot, entries }, version, segments, snapshotFile };
  }

  /**
   * The retained log from the stored segments, in key order: each replaces the log read so far
   * from its first index on, and entries at or below the snapshot are skipped (see
   * level-layout.ts). Also every segment read, stale or not, with the last index written in it.
   */
  private readLog(stored: readonly StoredValue[], snapshot: SnapshotMeta): { entries: Entry[]; segments: StoredSegments } {
    const entries: Entry[] = [];
    const all: { start: number; end: number }[] = [];
    const first = snapshot.index + 1;
    for (const { key, index: start, value } of stored) {
      const next = first + entries.length;
      if (start > next) throw this.corrupt(`the log has a gap: entries ${next}..${start - 1} are missing (next is ${describeKey(key)})`);
      const segment = this.decode(key, value, decodeSegment);
      const cut = Math.max(start, first);
      entries.length = Math.max(0, Math.min(entries.length, cut - first));
      let previousTerm = entries.at(-1)?.term ?? snapshot.term;
      segment.forEach((entry, i) => {
        if (entry.index !== start + i) throw this.corrupt(`${describeKey(key)} holds the entry for index ${entry.index} at position ${i}`);
        if (entry.index < cut) return;
        if (entry.term < previousTerm) throw this.corrupt(`${describeKey(key)} has term ${entry.term} at index ${entry.index}, below the term ${previousTerm} before it`);
        entries.push(entry);
        previousTerm = entry.term;
      });
      all.push({ start, end: start + segment.length - 1 });
    }
    return { entries, segments: new StoredSegments(all) };
  }

  /** A value's record, its checksum checked first when it is sealed (the format's own never is). */
  private decode<T>(key: Uint8Array, bytes: Uint8Array, decoder: (bytes: Uint8Array) => T): T {
    try {
      return decoder(key === metaKeys.format ? bytes : unsealValue(bytes));
    } catch (error) {
      if (error instanceof ValueShapeError) throw this.corrupt(`${describeKey(key)} has a bad value: ${error.message}`);
      throw error;
    }
  }

  private corrupt(message: string, cause?: unknown): StorageError {
    return new StorageError('CRONRAFT_STORAGE_CORRUPT', this.path, message, cause === undefined ? undefined : { cause });
  }
}

interface StoredValue {
  readonly key: Uint8Array;
  readonly index: number;
  readonly value: Uint8Array;
}

/** What read() found: the state, the format it was stored in, and every segment held, stale or not. */
interface StoreRead {
  readonly state: StoredState;
  readonly version: number;
  readonly segments: StoredSegments;
  /** Whether the snapshot's data is in its file (SnapshotFiles), which open() keeps. */
  readonly snapshotFile: boolean;
}

/** What a store holds before anything was compacted: the empty state at index 0. */
function emptySnapshot(): Snapshot {
  return { index: 0, term: 0, data: new Uint8Array(0) };
}

/** A copy: the caller may change the object it gave or was given. */
function copyHardState(hardState: HardState): HardState {
  return { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
}

/** Appends a del for each of the segments starting at `starts`. */
function pushDeletes(ops: WriteOp[], starts: readonly number[]): void {
  for (const start of starts) ops.push({ type: 'del', key: entryKey(start) });
}

/** The `code` of a level error or of the error that caused it (open errors wrap the reason). */
function levelCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'LEVEL_DATABASE_NOT_OPEN') return code;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}
