import { chmod, stat } from 'node:fs/promises';

/**
 * A member's data directory holds its private key and its log: no one but its owner may read
 * them, or write them. These are the modes it keeps them in.
 */
export const OWNER_ONLY_DIR_MODE = 0o700;
export const OWNER_ONLY_FILE_MODE = 0o600;

/**
 * Sets `path` to `mode` when its permissions grant anything `mode` does not (to its group or to
 * others, say); returns whether it did. Windows keeps no POSIX modes (Node reports made-up ones
 * there): access is its ACLs' business, left as they are.
 */
export async function restrictToOwner(path: string, mode: number): Promise<boolean> {
  if (process.platform === 'win32') return false;
  const info = await stat(path);
  if ((info.mode & 0o777 & ~mode) === 0) return false;
  await chmod(path, mode);
  return true;
}
