import { describe, expect, it } from 'vitest';
import { WriteQueue } from '../../src/storage/write-queue.js';
import type { WriteOp } from '../../src/storage/write-queue.js';

/** A batch writer whose writes complete when the test says so. */
function controlledWriter(): { readonly batches: WriteOp[][]; readonly finish: (error?: Error) => void; readonly writer: (ops: WriteOp[]) => Promise<void> } {
  const batches: WriteOp[][] = [];
  const settlers: { resolve: () => void; reject: (error: Error) => void }[] = [];
  return {
    batches,
    finish: (error) => {
      const settler = settlers.shift();
      if (settler === undefined) throw new Error('no write in flight');
      if (error === undefined) settler.resolve();
      else settler.reject(error);
    },
    writer: (ops) => {
      batches.push(ops);
      return new Promise<void>((resolve, reject) => settlers.push({ resolve, reject }));
    },
  };
}

function put(byte: number): WriteOp {
  return { type: 'put', key: Uint8Array.of(byte), value: Uint8Array.of(byte) };
}

/** Lets the queue's promise callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('WriteQueue', () => {
  it('keeps one batch in flight and merges the writes made meanwhile into the next, in order', async () => {
    const { batches, finish, writer } = controlledWriter();
    const queue = new WriteQueue(writer);
    const done: number[] = [];
    const first = queue.write([put(1)]).then(() => done.push(1));
    const second = queue.write([put(2), put(3)]).then(() => done.push(2));
    const third = queue.write([put(4)]).then(() => done.push(3));
    expect(batches).toEqual([[put(1)]]);
    finish();
    await first;
    await settle();
    expect(batches).toEqual([[put(1)], [put(2), put(3), put(4)]]);
    expect(done).toEqual([1]);
    finish();
    await Promise.all([second, third]);
    expect(done).toEqual([1, 2, 3]);
    await queue.idle();
  });

  it('fails every later write once a write has failed', async () => {
    const { finish, writer } = controlledWriter();
    const queue = new WriteQueue(writer);
    const failing = queue.write([put(1)]);
    const queued = queue.write([put(2)]);
    const broken = new Error('disk full');
    finish(broken);
    await expect(failing).rejects.toBe(broken);
    await expect(queued).rejects.toBe(broken);
    await expect(queue.write([put(3)])).rejects.toBe(broken);
    await queue.idle();
  });

  it('runs the work a write needs before its batch once every earlier batch landed, in order, and fails the write, and every later one, if it fails', async () => {
    const { batches, finish, writer } = controlledWriter();
    const queue = new WriteQueue(writer);
    const log: string[] = [];
    const before = (name: string, error?: Error) => async (): Promise<void> => {
      log.push(`${name} with ${batches.length} batches written`);
      await settle();
      if (error !== undefined) throw error;
    };
    const first = queue.write([put(1)]);
    const second = queue.write([put(2)], true, before('a'));
    const third = queue.write([put(3)], true, before('b'));
    await settle();
    // Nothing of the second batch's work starts while the first is in flight.
    expect(log).toEqual([]);
    finish();
    await first;
    for (let i = 0; i < 4; i++) await settle();
    expect(log).toEqual(['a with 1 batches written', 'b with 1 batches written']);
    expect(batches).toEqual([[put(1)], [put(2), put(3)]]);
    finish();
    await Promise.all([second, third]);

    const broken = new Error('no space left for the file');
    const failing = queue.write([put(4)], true, before('c', broken));
    await expect(failing).rejects.toBe(broken);
    expect(batches).toHaveLength(2);
    await expect(queue.write([put(5)])).rejects.toBe(broken);
    await queue.idle();
  });
});
