import { describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';

describe("a job's operations called from JavaScript", () => {
  it('refuse an argument more than they take, which they ignored (trigger(name, { slot }) triggered now)', async () => {
    const cluster = new Cluster([], { storage: 'memory' });
    const call = cluster as unknown as Record<'pause' | 'resume' | 'trigger', (...args: unknown[]) => Promise<unknown>>;
    for (const operation of ['pause', 'resume', 'trigger'] as const) {
      await expect(call[operation]('nightly', { slot: new Date() })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'arguments', message: expect.stringContaining(`at most 1 for ${operation}()`) });
      // One argument goes on to the usual checks: this member has not started.
      await expect(call[operation]('nightly')).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
    }
  });
});
