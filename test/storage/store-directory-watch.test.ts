import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STORE_DIRECTORY_LOOK_FRESH_MS, StoreDirectoryWatch } from '../../src/storage/store-directory-watch.js';

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempStore(): string {
  const root = mkdtempSync(join(tmpdir(), 'cronraft-watch-'));
  dirs.push(root);
  const store = join(root, 'raft');
  mkdirSync(store);
  return store;
}

describe('the watch of a store directory', () => {
  it('says nothing while the directory is the one opened, and why once it was removed', async () => {
    const path = tempStore();
    const watch = await StoreDirectoryWatch.start(path, 60_000);
    await watch.look();
    expect(watch.gone).toBeNull();
    rmSync(path, { recursive: true });
    await watch.look();
    expect(watch.gone).toMatch(/removed while the member ran/);
    // Stays so, even with a directory of that name again.
    mkdirSync(path);
    await watch.look();
    expect(watch.gone).toMatch(/removed/);
    watch.stop();
  });

  it('tells a directory replaced by another of the same name (moved aside, a new one made)', async () => {
    const path = tempStore();
    const watch = await StoreDirectoryWatch.start(path, 60_000);
    renameSync(path, `${path}.old`);
    mkdirSync(path);
    await watch.look();
    expect(watch.gone).toMatch(/replaced by another/);
    watch.stop();
  });

  it('gives a synced write the look begun within STORE_DIRECTORY_LOOK_FRESH_MS, and a new one after: one look, not one per write', async () => {
    const path = tempStore();
    const watch = await StoreDirectoryWatch.start(path, 60_000);
    let nowMs = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => nowMs);
    const first = watch.lookFresh();
    nowMs += STORE_DIRECTORY_LOOK_FRESH_MS;
    expect(watch.lookFresh()).toBe(first);
    await first;
    rmSync(path, { recursive: true });
    // Within the bound, the write stands on the look before the removal.
    expect(watch.lookFresh()).toBe(first);
    nowMs += 1;
    const second = watch.lookFresh();
    expect(second).not.toBe(first);
    await second;
    expect(watch.gone).toMatch(/removed while the member ran/);
    watch.stop();
  });
});
