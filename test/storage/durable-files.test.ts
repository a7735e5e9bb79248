import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { syncDirectory, writeFileSynced } from '../../src/storage/durable-files.js';

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** An error as node:fs gives one, with its code. */
function fsError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: as the platform says`), { code });
}

describe('durable files', () => {
  it('writes a file and syncs its directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cronraft-durable-'));
    made.push(dir);
    await writeFileSynced(join(dir, 'f'), Uint8Array.of(1, 2), 'wx', 0o600);
    await syncDirectory(dir);
    expect([...(await readFile(join(dir, 'f')))]).toEqual([1, 2]);
    await expect(writeFileSynced(join(dir, 'f'), Uint8Array.of(3), 'wx', 0o600)).rejects.toMatchObject({ code: 'EEXIST' });
  });

  it("passes over a directory the platform cannot open or sync, and throws the disk's failure to sync one (closing it)", async () => {
    let closed = 0;
    const opening = (openError: NodeJS.ErrnoException | null, syncError: NodeJS.ErrnoException | null) => (): Promise<{ sync(): Promise<void>; close(): Promise<void> }> =>
      openError !== null
        ? Promise.reject(openError)
        : Promise.resolve({
            sync: () => (syncError === null ? Promise.resolve() : Promise.reject(syncError)),
            close: () => {
              closed++;
              return Promise.resolve();
            },
          });
    // Windows cannot open a directory; some file systems refuse fsync on one.
    await syncDirectory('d', opening(fsError('EISDIR'), null));
    await syncDirectory('d', opening(null, fsError('EINVAL')));
    // A disk that fails the sync: the entry may not be durable, and nothing may count on it.
    await expect(syncDirectory('d', opening(null, fsError('EIO')))).rejects.toMatchObject({ code: 'EIO' });
    await expect(syncDirectory('d', opening(fsError('ENOENT'), null))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(closed).toBe(2);
  });
});
