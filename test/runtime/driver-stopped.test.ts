import { describe, expect, it } from 'vitest';
import { registerConsumer } from '../../src/cluster-fanout.js';
import { CronraftError, NotLeaderError, NotRunningError, RemovedError } from '../../src/errors.js';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import { driverStopped } from '../../src/runtime/driver-options.js';
import type { FanoutRuntime } from '../../src/runtime/fanout/fanout-runtime.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const settings: ConsumerSettings = { parallelism: 1, retries: 0, timeoutMs: 1000, backoffMs: 0, ratePerSecond: null, maxPending: null };
const fatal = new CronraftError('CRONRAFT_FATAL', 'The member stopped after a fatal error: disk on fire');

describe('a request that failed because the driver stopped for good (driverStopped)', () => {
  it('is a fatal error, a removal, or a stopped member; not a member yet to start, nor a passing failure', () => {
    expect([fatal, new RemovedError(7), new NotRunningError('stopped')].map(driverStopped)).toEqual([true, true, true]);
    expect([new NotRunningError('not started'), new NotLeaderError(null), new Error('x')].map(driverStopped)).toEqual([false, false, false]);
  });

  it("ends a consumer's registration, which otherwise tries again until it applies", async () => {
    const timers = new ManualTimers();
    const attempt = async (errors: unknown[]): Promise<{ tries: number; done: boolean }> => {
      let tries = 0;
      const runtime = { consume: () => Promise.reject(errors[Math.min(tries++, errors.length - 1)]) } as unknown as FanoutRuntime;
      let done = false;
      void registerConsumer(runtime, 't', () => undefined, settings, timers, () => false).then(() => (done = true));
      for (let i = 0; i < 5; i++) {
        for (let k = 0; k < 10; k++) await Promise.resolve();
        timers.advance(1000);
      }
      return { tries, done };
    };
    // No leader for a while, then the driver fails: it stops trying at the failure.
    expect(await attempt([new NotLeaderError(null), new NotLeaderError(null), fatal])).toEqual({ tries: 3, done: true });
    // A passing failure is tried again, every CONSUME_RETRY_MS.
    const passing = await attempt([new NotLeaderError(null)]);
    expect(passing.done).toBe(false);
    expect(passing.tries).toBeGreaterThan(3);
  });
});
