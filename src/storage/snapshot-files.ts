import { readFile, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from '../bytes/crc32.js';
import { StorageError } from '../errors.js';
import { errnoCode, syncDirectory, writeFileSynced } from './durable-files.js';
import { checksumMismatch } from './level-codec.js';
import { OWNER_ONLY_FILE_MODE } from './owner-only.js';

/** A snapshot file's name: `snapshot-<index>-<term>`, and while it is written, that name and TEMP_SUFFIX. */
const FILE_NAME = /^snapshot-(\d{1,16})-(\d{1,16})(\.tmp)?$/;
const TEMP_SUFFIX = '.tmp';

/** Where a stored snapshot's data is: the file of `index` and `term`, `length` bytes whose CRC-32 is `crc`. */
export interface SnapshotFileRef {
  readonly index: number;
  readonly term: number;
  readonly length: number;
  readonly crc: number;
}

export function snapshotFileName(index: number, term: number): string {
  return `snapshot-${index}-${term}`;
}

/** Whether `name` is a snapshot file's, whole or being written (LevelDB uses no such name). */
export function isSnapshotFileName(name: string): boolean {
  return FILE_NAME.test(name);
}

/**
 * The data of a sealed store's snapshots (storage format 3), each in a file of its own in the
 * store's directory, beside LevelDB's files, which the store's snapshot record points to with the
 * data's length and CRC-32 (level-codec.ts).
 *
 * Why not in LevelDB. A value put in a batch is copied on the event loop, into memory just
 * allocated, whose pages the first write to them faults in (on a virtual machine, slowly): at
 * ten thousand jobs the snapshot's record, encoded, sealed and put, held the loop several times
 * as long as any step of the snapshot (SNAPSHOT_STEP_BUDGET_MS) at every compaction. A file is
 * written from the snapshot's own bytes on libuv's pool, with no copy on the loop; only its
 * CRC-32 is computed there.
 *
 * A file is written aside, synced, renamed into place and its directory synced before the
 * batch that holds the record pointing to it is written, so that a record never points to a
 * file that is not whole. The files no record points to (the one before a new snapshot, or one
 * a crash left unreferenced or half-written) are removed once the new record is durable, and at
 * open.
 */
export class SnapshotFiles {
  /** The store's directory, which every error names. */
  readonly directory: string;

  constructor(directory: string) {
    this.directory = directory;
  }

  /** Writes `data` as the snapshot of `index` and `term`, durably; throws StorageError CRONRAFT_STORAGE_UNREADABLE when it cannot. */
  async write(index: number, term: number, data: Uint8Array): Promise<void> {
    const path = join(this.directory, snapshotFileName(index, term));
    const temp = `${path}${TEMP_SUFFIX}`;
    try {
      await writeFileSynced(temp, data, 'w', OWNER_ONLY_FILE_MODE);
      await rename(temp, path);
      await syncDirectory(this.directory);
    } catch (error) {
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.directory, `cannot write the snapshot's file ${snapshotFileName(index, term)}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * The data `ref` points to, once its length and CRC-32 hold: CRONRAFT_STORAGE_CORRUPT when its
   * file is missing, or has other bytes than the record says (the size is checked before the
   * file is read, so a damaged record does not make the store read a file of any size).
   */
  async read(ref: SnapshotFileRef): Promise<Uint8Array> {
    const name = snapshotFileName(ref.index, ref.term);
    const path = join(this.directory, name);
    let bytes: Buffer;
    try {
      const { size } = await stat(path);
      if (size !== ref.length) throw this.#corrupt(`the snapshot's file ${name} holds ${size} bytes where its record says ${ref.length}: damaged on disk`);
      bytes = await readFile(path);
    } catch (error) {
      if (error instanceof StorageError) throw error;
      if (errnoCode(error) === 'ENOENT') throw this.#corrupt(`the snapshot's file ${name}, which its record points to, is missing`, error);
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.directory, `cannot read the snapshot's file ${name}: ${messageOf(error)}`, { cause: error });
    }
    const actual = crc32(bytes);
    if (bytes.byteLength !== ref.length || actual !== ref.crc) {
      throw this.#corrupt(`the snapshot's file ${name}: ${checksumMismatch(ref.crc, actual)}`);
    }
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /**
   * Removes every snapshot file but the one of `keep` (every one when null), half-written ones
   * included: at open, when no write is under way. Only once no durable record points to them: a
   * file gone under a record is a damaged store.
   */
  async removeAllBut(keep: { readonly index: number; readonly term: number } | null): Promise<void> {
    const kept = keep === null ? null : snapshotFileName(keep.index, keep.term);
    await this.#remove((name) => name !== kept);
  }

  /**
   * Removes the whole snapshot files of indexes below `index`, that of a snapshot whose record is
   * durable: while the store runs, when a later snapshot's file may be being written, or written
   * and its record not yet (snapshots only move forward, so its index is higher).
   */
  async removeBelow(index: number): Promise<void> {
    await this.#remove((name) => {
      const match = FILE_NAME.exec(name);
      return match?.[3] === undefined && Number(match?.[1]) < index;
    });
  }

  async #remove(removable: (name: string) => boolean): Promise<void> {
    for (const name of await readdir(this.directory)) {
      if (!isSnapshotFileName(name) || !removable(name)) continue;
      await unlink(join(this.directory, name)).catch((error: unknown) => {
        if (errnoCode(error) !== 'ENOENT') throw error;
      });
    }
  }

  #corrupt(message: string, cause?: unknown): StorageError {
    return new StorageError('CRONRAFT_STORAGE_CORRUPT', this.directory, message, cause === undefined ? undefined : { cause });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
