import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { PEER_KEY_FILE } from '../../src/transport/constants.js';
import { loadOrCreatePrivateKey } from '../../src/transport/identity.js';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'cronraft-identity-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function storageError(run: () => Promise<unknown>): Promise<StorageError> {
  const error = await run().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StorageError);
  return error as StorageError;
}

describe('loadOrCreatePrivateKey', () => {
  it('creates an Ed25519 key in a new nested directory, readable only by the owner', async () => {
    const dir = join(root, 'a', 'b');
    const key = await loadOrCreatePrivateKey(dir);
    expect(key.type).toBe('Ed25519');
    const info = await stat(join(dir, PEER_KEY_FILE));
    expect(info.mode & 0o777).toBe(0o600);
    // No temporary file is left behind.
    expect(await readdir(dir)).toEqual([PEER_KEY_FILE]);
  });

  it('returns the same key, hence the same peer id, after a restart', async () => {
    const first = await loadOrCreatePrivateKey(root);
    const second = await loadOrCreatePrivateKey(root);
    expect(peerIdFromPrivateKey(second).toString()).toBe(peerIdFromPrivateKey(first).toString());
    expect(second.equals(first)).toBe(true);
  });

  it('gives concurrent callers one key', async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadOrCreatePrivateKey(root)));
    const ids = new Set(keys.map((key) => peerIdFromPrivateKey(key).toString()));
    expect(ids.size).toBe(1);
    expect(await readdir(root)).toEqual([PEER_KEY_FILE]);
  });

  it('refuses a corrupt key file and leaves it in place', async () => {
    const path = join(root, PEER_KEY_FILE);
    await writeFile(path, 'not a key');
    const error = await storageError(() => loadOrCreatePrivateKey(root));
    expect(error.code).toBe('CRONRAFT_STORAGE_CORRUPT');
    expect(error.path).toBe(path);
    expect((await stat(path)).size).toBe(9);
  });

  it('refuses a key with one bit flipped, in its seed or its public key, as corrupt: it still decodes, as another identity', async () => {
    const original = privateKeyToProtobuf(await generateKeyPair('Ed25519'));
    // The last 64 bytes are the seed, then the public key.
    for (const at of [original.length - 64, original.length - 1]) {
      const bytes = Uint8Array.from(original);
      bytes[at]! ^= 0x01;
      await writeFile(join(root, PEER_KEY_FILE), bytes);
      const error = await storageError(() => loadOrCreatePrivateKey(root));
      expect(error.code).toBe('CRONRAFT_STORAGE_CORRUPT');
      expect(error.message).toMatch(/damaged/);
    }
    // Whole, it is read as it was.
    await writeFile(join(root, PEER_KEY_FILE), original);
    expect(privateKeyToProtobuf(await loadOrCreatePrivateKey(root))).toEqual(original);
  });

  it('refuses an empty key file as corrupt', async () => {
    await writeFile(join(root, PEER_KEY_FILE), new Uint8Array(0));
    expect((await storageError(() => loadOrCreatePrivateKey(root))).code).toBe('CRONRAFT_STORAGE_CORRUPT');
  });

  it('refuses a key of another type as corrupt', async () => {
    await writeFile(join(root, PEER_KEY_FILE), privateKeyToProtobuf(await generateKeyPair('secp256k1')));
    const error = await storageError(() => loadOrCreatePrivateKey(root));
    expect(error.code).toBe('CRONRAFT_STORAGE_CORRUPT');
    expect(error.message).toContain('secp256k1');
  });

  it('reports a key path that cannot be read as unreadable', async () => {
    await mkdir(join(root, PEER_KEY_FILE));
    expect((await storageError(() => loadOrCreatePrivateKey(root))).code).toBe('CRONRAFT_STORAGE_UNREADABLE');
  });

  it('reports a directory that cannot be created as unreadable', async () => {
    const file = join(root, 'file');
    await writeFile(file, '');
    expect((await storageError(() => loadOrCreatePrivateKey(join(file, 'sub')))).code).toBe('CRONRAFT_STORAGE_UNREADABLE');
  });
});
