import { open, type FileHandle } from 'node:fs/promises';

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
 * Errors with which a platform or file system says it cannot open or sync a directory (Windows
 * cannot open one; some file systems refuse fsync on one): harmless there, as nothing more can
 * be done. Any other (EIO, say) is the disk failing to make the entry durable.
 */
const CANNOT_SYNC_DIRECTORY = new Set(['EISDIR', 'EPERM', 'EACCES', 'EINVAL', 'ENOTSUP', 'EOPNOTSUPP', 'EBADF']);

/**
 * Makes a directory's entries durable (a file created, linked or renamed into it): fsync of the
 * directory itself. Where the platform cannot (CANNOT_SYNC_DIRECTORY), it does nothing; any other
 * failure is thrown, so that nothing is counted on an entry the disk may lose. `openDirectory`:
 * node:fs/promises' open, or a test's.
 */
export async function syncDirectory(dir: string, openDirectory: (path: string, flags: 'r') => Promise<Pick<FileHandle, 'sync' | 'close'>> = open): Promise<void> {
  let handle: Pick<FileHandle, 'sync' | 'close'>;
  try {
    handle = await openDirectory(dir, 'r');
  } catch (error) {
    if (cannotSync(error)) return;
    throw error;
  }
  try {
    await handle.sync();
  } catch (error) {
    if (!cannotSync(error)) throw error;
  } finally {
    await handle.close();
  }
}

function cannotSync(error: unknown): boolean {
  const code = errnoCode(error);
  return code !== undefined && CANNOT_SYNC_DIRECTORY.has(code);
}

/** The `code` of a file system error (`ENOENT`, say); undefined for anything else. */
export function errnoCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
