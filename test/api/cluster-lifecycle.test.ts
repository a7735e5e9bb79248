import { describe, expect, it } from 'vitest';
import { Lifecycle, type LifecycleSteps } from '../../src/cluster-lifecycle.js';

/** Steps that record what ran, the start's own step given by the test. */
function steps(start: (life: () => Lifecycle) => Promise<void>): { readonly life: Lifecycle; readonly ran: string[] } {
  const ran: string[] = [];
  let life: Lifecycle | null = null;
  const s: LifecycleSteps = {
    start: async () => {
      ran.push('start');
      await start(() => life!);
    },
    handOver: async (leave) => void ran.push(`hand over${leave ? ', leave' : ''}`),
    close: async () => void ran.push('close'),
  };
  life = new Lifecycle(s);
  return { life, ran };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Lifecycle', () => {
  it('says what to do to a call made before start() (a stranger read "The cluster member is new" and guessed)', () => {
    const { life } = steps(async () => undefined);
    expect(life.notRunning()).toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'new', message: 'The cluster member is new: call start() first, and wait for it' });
  });

  it('rejects a start during which a fatal error failed the member, closes it, and keeps it failed through stop()', async () => {
    // Before, the start resolved and set the status to running over the failure (a listener of
    // `leader` that threw, as the member elected itself during its start).
    const fatal = new Error('the disk failed');
    const { life, ran } = steps(async (l) => {
      await turn();
      l().failed(fatal);
    });
    await expect(life.start()).rejects.toBe(fatal);
    expect(life.status).toBe('failed');
    expect(ran).toEqual(['start', 'close']);
    await life.stop(false);
    expect(life.status).toBe('failed');
  });

  it('ends a start that a stop() came during, then stops gracefully what it opened', async () => {
    let release!: () => void;
    const { life, ran } = steps(async (l) => {
      await new Promise<void>((resolve) => (release = resolve));
      // The start's next step asks whether a stop came (cluster-start.ts's stillStarting).
      if (!l().starting) throw new Error('stopped');
    });
    const started = life.start();
    await turn();
    const stopped = life.stop(true);
    expect(life.status).toBe('stopping');
    release();
    await expect(started).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'stopping' });
    await stopped;
    expect(life.status).toBe('stopped');
    expect(ran).toEqual(['start', 'hand over, leave', 'close']);
  });

  it('closes a start whose step failed, rejects with its error, and a second start is refused', async () => {
    const error = new Error('the port is taken');
    const { life, ran } = steps(async () => {
      throw error;
    });
    await expect(life.start()).rejects.toBe(error);
    expect(life.status).toBe('failed');
    expect(ran).toEqual(['start', 'close']);
    await expect(life.start()).rejects.toMatchObject({ code: 'CRONRAFT_ALREADY_STARTED' });
  });

  it('resolves a stop() only once a failed start has closed what it opened (found by a review)', async () => {
    const order: string[] = [];
    let closed!: () => void;
    const closing = new Promise<void>((resolve) => (closed = resolve));
    let closes = 0;
    const life = new Lifecycle({
      start: async () => {
        throw new Error('the port is taken');
      },
      handOver: async () => undefined,
      // The first close (the failed start's) takes a while; a second one finds nothing to close.
      close: async () => {
        if (++closes === 1) await closing;
      },
    });
    const started = life.start().catch(() => order.push('start rejected'));
    await turn();
    expect(life.status).toBe('failed');
    const stopped = life.stop(false).then(() => order.push('stop resolved'));
    await turn();
    order.push('closed');
    closed();
    await Promise.all([started, stopped]);
    // Before, the stop resolved at once, with the store's lock and the port still held.
    expect(order).toEqual(['closed', 'start rejected', 'stop resolved']);
  });
});
