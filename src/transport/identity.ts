import { randomUUID } from 'node:crypto';
import { link, mkdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair, generateKeyPairFromSeed, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { StorageError } from '../errors.js';
import { OWNER_ONLY_DIR_MODE, OWNER_ONLY_FILE_MODE, restrictToOwner } from '../storage/owner-only.js';
import { errnoCode, syncDirectory, writeFileSynced } from '../storage/durable-files.js';
import { PEER_KEY_FILE } from './constants.js';

/**
 * Returns the member's libp2p private key, stored in `<dir>/peer-key` (libp2p protobuf encoding),
 * creating an Ed25519 key and the directory on first use. Keeping the key keeps the peer id, so
 * peers that pin `/p2p/<id>` in their member list still accept this member after a restart.
 *
 * Throws StorageError `CRONRAFT_STORAGE_CORRUPT` when the file holds no valid Ed25519 key (it is
 * never overwritten: a new key would silently change the member's identity), and
 * `CRONRAFT_STORAGE_UNREADABLE` when it cannot be read or created.
 */
export async function loadOrCreatePrivateKey(dir: string): Promise<PrivateKey> {
  return (await loadPrivateKey(dir)) ?? createPrivateKey(dir);
}

/**
 * The key stored in `<dir>/peer-key`, or null when there is none; a key file others may read is
 * made its owner's alone (0600). Throws StorageError as loadOrCreatePrivateKey does.
 */
export async function loadPrivateKey(dir: string): Promise<PrivateKey | null> {
  const path = join(dir, PEER_KEY_FILE);
  const key = await readKey(path);
  if (key === null) return null;
  try {
    await restrictToOwner(path, OWNER_ONLY_FILE_MODE);
  } catch (error) {
    throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', path, `cannot make the peer key readable by its owner alone: ${message(error)}`, { cause: error });
  }
  return key;
}

/** Creates a new Ed25519 key in `<dir>/peer-key`, and the directory if need be; a key another process created meanwhile wins. */
export async function createPrivateKey(dir: string): Promise<PrivateKey> {
  return createKey(dir, join(dir, PEER_KEY_FILE));
}

async function readKey(path: string): Promise<PrivateKey | null> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return null;
    throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', path, `cannot read the peer key: ${message(error)}`, { cause: error });
  }
  let key: PrivateKey;
  try {
    key = privateKeyFromProtobuf(bytes);
  } catch (error) {
    throw new StorageError('CRONRAFT_STORAGE_CORRUPT', path, `the peer key file is not a valid libp2p private key: ${message(error)}`, { cause: error });
  }
  if (key.type !== 'Ed25519') {
    throw new StorageError('CRONRAFT_STORAGE_CORRUPT', path, `the peer key is a ${key.type} key, expected Ed25519`);
  }
  // The file holds the seed and the public key: a bit flipped in either still decodes, as
  // another identity, which the cluster has not bound to this member (its frames would be
  // dropped) or which signs with a key that does not match. The public key must be the seed's.
  const derived = await generateKeyPairFromSeed('Ed25519', key.raw.subarray(0, ED25519_SEED_BYTES));
  if (!derived.publicKey.equals(key.publicKey)) {
    throw new StorageError('CRONRAFT_STORAGE_CORRUPT', path, 'the peer key is damaged: its public key is not the one of its private key');
  }
  return key;
}

/** An Ed25519 private key's raw bytes are its 32-byte seed, then its public key. */
const ED25519_SEED_BYTES = 32;

async function createKey(dir: string, path: string): Promise<PrivateKey> {
  const key = await generateKeyPair('Ed25519');
  const tmp = `${path}.${randomUUID()}.tmp`;
  try {
    await mkdir(dir, { recursive: true, mode: OWNER_ONLY_DIR_MODE });
    // Write a temporary file, flush it, then hard-link it into place: the key file is never seen
    // half-written after a crash, and link() fails instead of replacing a key that another process
    // created meanwhile.
    await writeFileSynced(tmp, privateKeyToProtobuf(key), 'wx', OWNER_ONLY_FILE_MODE);
    try {
      await link(tmp, path);
    } catch (error) {
      if (errnoCode(error) !== 'EEXIST') throw error;
      const winner = await readKey(path);
      if (winner !== null) return winner;
      throw error;
    }
    await syncDirectory(dir);
    return key;
  } catch (error) {
    if (error instanceof StorageError) throw error;
    throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', path, `cannot create the peer key: ${message(error)}`, { cause: error });
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
