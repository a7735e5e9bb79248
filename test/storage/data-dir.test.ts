import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STORE_DIRECTORY, openDataDir } from '../../src/storage/data-dir.js';
import { StorageError } from '../../src/errors.js';
import { PEER_KEY_FILE } from '../../src/transport/constants.js';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'cronraft-data-dir-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function modeOf(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

describe.skipIf(process.platform === 'win32')('openDataDir', () => {
  it('creates a new data directory and its key for the owner alone, and gives the same key on the next start', async () => {
    const dataDir = join(root, 'a', 'member');
    const first = await openDataDir(dataDir);
    expect(first.storePath).toBe(join(dataDir, STORE_DIRECTORY));
    expect(await modeOf(dataDir)).toBe(0o700);
    expect(await modeOf(join(dataDir, PEER_KEY_FILE))).toBe(0o600);
    const second = await openDataDir(dataDir);
    expect(peerIdFromPrivateKey(second.privateKey).toString()).toBe(peerIdFromPrivateKey(first.privateKey).toString());
  });

  it('makes an existing data directory, and an existing key file, that others may read its owner’s alone', async () => {
    const dataDir = join(root, 'member');
    await mkdir(dataDir);
    await chmod(dataDir, 0o755);
    await openDataDir(dataDir);
    expect(await modeOf(dataDir)).toBe(0o700);

    await chmod(dataDir, 0o777);
    await chmod(join(dataDir, PEER_KEY_FILE), 0o644);
    await openDataDir(dataDir);
    expect(await modeOf(dataDir)).toBe(0o700);
    expect(await modeOf(join(dataDir, PEER_KEY_FILE))).toBe(0o600);
  });

  it('refuses a data directory whose log is there but whose key is not, naming the key, and makes no key', async () => {
    const dataDir = join(root, 'member');
    await openDataDir(dataDir);
    await mkdir(join(dataDir, STORE_DIRECTORY));
    await writeFile(join(dataDir, STORE_DIRECTORY, 'CURRENT'), 'MANIFEST-000002\n');
    await rm(join(dataDir, PEER_KEY_FILE));
    const error = await openDataDir(dataDir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: join(dataDir, PEER_KEY_FILE) });
    expect((error as Error).message).toContain('another peer id');
    expect(await readdir(dataDir)).toEqual([STORE_DIRECTORY]);
  });

  it('makes a key when the log folder is there but empty: no log was written', async () => {
    const dataDir = join(root, 'member');
    await mkdir(join(dataDir, STORE_DIRECTORY), { recursive: true });
    const { privateKey } = await openDataDir(dataDir);
    expect(privateKey.type).toBe('Ed25519');
  });

  it('keeps a key put back beside the log', async () => {
    const dataDir = join(root, 'member');
    await mkdir(join(dataDir, STORE_DIRECTORY), { recursive: true });
    await writeFile(join(dataDir, STORE_DIRECTORY, 'CURRENT'), 'MANIFEST-000002\n');
    const key = await generateKeyPair('Ed25519');
    await writeFile(join(dataDir, PEER_KEY_FILE), privateKeyToProtobuf(key));
    expect((await openDataDir(dataDir)).privateKey.equals(key)).toBe(true);
  });

  it('refuses a data directory path that is a file, as unreadable', async () => {
    const file = join(root, 'file');
    await writeFile(file, 'x');
    await expect(openDataDir(file)).rejects.toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: file });
  });
});
