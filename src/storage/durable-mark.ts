import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { StorageError } from '../errors.js';
import { OWNER_ONLY_FILE_MODE } from './owner-only.js';
import type { HardState } from '../raft/types.js';
import { errnoCode, syncDirectory, writeFileSynced } from './durable-files.js';
import { ValueShapeError, decodeHardState, encodeHardState } from './level-codec.js';
import { hardStateRegression } from './store-checks.js';

/**
 * The file in a LevelLogStorage's directory that holds its durable mark, beside LevelDB's own
 * files (LevelDB leaves alone the files whose names it does not use).
 */
export const DURABLE_MARK_FILE = 'durable-mark';

/** The file a new mark is written to before it is renamed over the old one. */
const DURABLE_MARK_TEMP_FILE = `${DURABLE_MARK_FILE}.tmp`;

/**
 * A store's durable mark: the last hard state (term, vote, commit point) it knew durable, in a
 * file of its own, so that a store can tell at open that its log lost writes it had synced.
 *
 * Why a file outside LevelDB. LevelDB appends each batch to its write-ahead log and replays the
 * log at open. A log cut short (truncated or damaged) loses a suffix of batches, and LevelDB
 * takes a record cut off at the end of its log for a write a crash interrupted: it opens without
 * them and reports nothing (paranoid_checks would not catch this either, and classic-level does
 * not expose it). Anything written in the same batches, as a record of how far the log reached,
 * is lost with them. So the mark is written after the fact, to a file LevelDB does not own, at
 * moments off the commit path: at open (LevelDB has just moved what its log held into a synced
 * table), after each compaction, and at close. A save writes nothing more than before.
 *
 * Why a hard state, not a last index. A follower's log legitimately ends earlier after a new
 * leader replaces its suffix, and a compaction moves its start; a hard state never moves back
 * (store-checks.ts refuses a save that would). A store whose hard state is behind its mark has
 * lost writes: at least the entries up to the marked commit point, which were committed.
 *
 * What it does not catch: writes lost after the last mark (after a crash rather than a clean
 * close, those since the last compaction or open), or a lost write that changed no hard state.
 * A store written before the mark existed has none until its first open.
 */
export class DurableMark {
  /** The mark's file. */
  readonly path: string;
  readonly #directory: string;
  /** What the file holds as far as this store knows; null: no file. */
  #onFile: HardState | null = null;
  /** The last write started: writes run one at a time, in order. */
  #writing: Promise<void> = Promise.resolve();

  /** `directory`: the store's. */
  constructor(directory: string) {
    this.#directory = directory;
    this.path = join(directory, DURABLE_MARK_FILE);
  }

  /** The mark on file, or null when there is none. Throws StorageError naming the file when it cannot be read or is damaged. */
  async read(): Promise<HardState | null> {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(this.path);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return null;
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `cannot read the durable mark: ${messageOf(error)}`, { cause: error });
    }
    try {
      this.#onFile = decodeHardState(bytes);
    } catch (error) {
      if (!(error instanceof ValueShapeError)) throw error;
      throw new StorageError('CRONRAFT_STORAGE_CORRUPT', this.path, `the durable mark is damaged: ${error.message}`, { cause: error });
    }
    return this.#onFile;
  }

  /**
   * Throws StorageError CRONRAFT_STORAGE_CORRUPT naming `storePath` when the store's hard state,
   * `stored`, is behind the mark read last: the store lost writes it had made durable.
   */
  check(storePath: string, stored: HardState, lastIndex: number): void {
    const mark = this.#onFile;
    if (mark === null) return;
    const regression = hardStateRegression(mark, stored);
    if (regression === null) return;
    throw new StorageError(
      'CRONRAFT_STORAGE_CORRUPT',
      storePath,
      `the store lost writes it had made durable: its hard state (term ${stored.term}, commit ${stored.commit}, last index ${lastIndex}) is behind ` +
        `the one ${DURABLE_MARK_FILE} records (term ${mark.term}, commit ${mark.commit}): ${regression}. LevelDB's write-ahead log (*.log) was likely cut or damaged. ` +
        'This member must not start with less than it promised: move the directory aside and start it empty to catch up from the others (README, "Recovering a member").',
    );
  }

  /**
   * Records `hardState` as durable, once the writes before have: it must be durable in the store
   * already. Nothing is written when the file holds it. The file is replaced whole (written
   * aside, synced, renamed over it), so that a crash leaves the old mark or the new one.
   */
  write(hardState: HardState): Promise<void> {
    const next = this.#writing.then(() => this.#replace(hardState));
    this.#writing = next.catch(() => undefined);
    return next;
  }

  async #replace(hardState: HardState): Promise<void> {
    const onFile = this.#onFile;
    if (onFile !== null && onFile.term === hardState.term && onFile.vote === hardState.vote && onFile.commit === hardState.commit) return;
    const temp = join(this.#directory, DURABLE_MARK_TEMP_FILE);
    try {
      await writeFileSynced(temp, encodeHardState(hardState), 'w', OWNER_ONLY_FILE_MODE);
      await rename(temp, this.path);
      await syncDirectory(this.#directory);
    } catch (error) {
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.path, `cannot write the durable mark: ${messageOf(error)}`, { cause: error });
    }
    this.#onFile = { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
