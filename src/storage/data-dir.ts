import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrivateKey } from '@libp2p/interface';
import { StorageError } from '../errors.js';
import { OWNER_ONLY_DIR_MODE, restrictToOwner } from './owner-only.js';
import { errnoCode } from './durable-files.js';
import { PEER_KEY_FILE } from '../transport/constants.js';
import { createPrivateKey, loadPrivateKey } from '../transport/identity.js';

/** The folder of a member's data directory that holds its Raft log (a LevelLogStorage). */
export const STORE_DIRECTORY = 'raft';

/** What a member takes from its data directory. */
export interface DataDir {
  /** Its libp2p key, which its peer id derives from. */
  readonly privateKey: PrivateKey;
  /** Where its log is (the store may not exist yet). */
  readonly storePath: string;
}

/**
 * Opens a member's data directory: creates it for its owner alone (0700), or makes an existing
 * one so when its group or others may use it, and loads the member's key, made on first start.
 *
 * A directory whose log exists but whose key does not is refused with StorageError
 * `CRONRAFT_STORAGE_CORRUPT` naming the key's path: a new key would make the member a new
 * identity under its old address and log, which peers that pin its peer id refuse, and the
 * loss of a file of the directory is no reason to guess. `CRONRAFT_STORAGE_UNREADABLE` when
 * the directory cannot be created, read or restricted.
 */
export async function openDataDir(dataDir: string): Promise<DataDir> {
  try {
    await mkdir(dataDir, { recursive: true, mode: OWNER_ONLY_DIR_MODE });
    await restrictToOwner(dataDir, OWNER_ONLY_DIR_MODE);
  } catch (error) {
    throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', dataDir, `cannot make the data directory, for its owner alone (mode 0700): ${messageOf(error)}`, { cause: error });
  }
  const storePath = join(dataDir, STORE_DIRECTORY);
  const existing = await loadPrivateKey(dataDir);
  if (existing !== null) return { privateKey: existing, storePath };
  if (await holdsFiles(storePath)) {
    throw new StorageError(
      'CRONRAFT_STORAGE_CORRUPT',
      join(dataDir, PEER_KEY_FILE),
      `the member's key is missing, but its log is there (${storePath}): a new key would give the member another peer id. ` +
        'Put the key file back; when it is lost, remove the member (removeMember, npx cronraft remove-member) and start it with an empty data directory to join as a new member (README, "Recovering a member").',
    );
  }
  return { privateKey: await createPrivateKey(dataDir), storePath };
}

/** Whether `dir` exists and holds anything. */
async function holdsFiles(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length > 0;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return false;
    throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', dir, `cannot read the directory: ${messageOf(error)}`, { cause: error });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
