/**
 * The disk under the raft bench, measured in the same run: how long a synced LevelDB write of
 * one small entry takes alone, and with three writers at once, as the three members write. A
 * commit needs two members' writes to be durable, and with every member on one device their
 * flushes queue behind one another: this bounds the serial commit latency from below, and it
 * moves a lot on a shared virtual machine (measured here from 0.28 to 0.51 ms alone within an
 * hour), so the figures are printed beside the bench's own.
 */
import { ClassicLevel } from 'classic-level';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarize } from './stats.js';

export interface DiskBaseline {
  /** ms per synced write of one entry, one writer. */
  readonly alone: ReturnType<typeof summarize>;
  /** ms per synced write of one entry, three writers on three stores at once. */
  readonly threeWriters: ReturnType<typeof summarize>;
}

/** The size of the value written: about a serial bench entry's stored record (64 bytes of data). */
const ENTRY_BYTES = 90;

const WRITERS = 3;

async function writeFor(db: ClassicLevel<Uint8Array, Uint8Array>, ms: number): Promise<number[]> {
  const value = new Uint8Array(ENTRY_BYTES).fill(1);
  const latencies: number[] = [];
  const end = performance.now() + ms;
  for (let i = 0; performance.now() < end; i++) {
    const key = new Uint8Array(4);
    new DataView(key.buffer).setUint32(0, i);
    const t0 = performance.now();
    await db.put(key, value, { sync: true });
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

/** Measures for `ms` alone, then `ms` with three writers, in stores under the system's temporary directory, as the members' are. */
export async function benchDisk(ms: number): Promise<DiskBaseline> {
  const root = await mkdtemp(join(tmpdir(), 'cronraft-disk-'));
  const dbs = Array.from({ length: WRITERS }, (_, i) => new ClassicLevel<Uint8Array, Uint8Array>(join(root, String(i)), { keyEncoding: 'view', valueEncoding: 'view' }));
  try {
    await Promise.all(dbs.map((db) => db.open()));
    const alone = summarize(await writeFor(dbs[0] as ClassicLevel<Uint8Array, Uint8Array>, ms));
    const threeWriters = summarize((await Promise.all(dbs.map((db) => writeFor(db, ms)))).flat());
    return { alone, threeWriters };
  } finally {
    await Promise.all(dbs.map((db) => db.close()));
    await rm(root, { recursive: true, force: true });
  }
}
