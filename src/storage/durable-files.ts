import { open } from 'node:fs/promises';

/**
 * Writes `bytes` to a new file at `path` and syncs it before it resolves: `flags` 'wx' fails if
 * the file exists, 'w' replaces it. The file is created with `mode`.
 */
export async function writeFileSynced(path: string, bytes: Uint8Array, flags: 'w' | 'wx', mode: number): Promise<void> {
  const handle = await open(path, flags, mode);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Makes a directory's entries durable (a file created, linked or renamed into it): fsync of the
 * directory itself. Some platforms cannot open a directory, which is harmless there.
 */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort only.
  }
}
