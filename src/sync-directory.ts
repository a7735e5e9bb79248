import { open } from 'node:fs/promises';

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
