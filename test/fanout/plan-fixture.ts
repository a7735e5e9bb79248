import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState, type FanoutLimits } from '../../src/fanout/state.js';

/** A consumer's settings for the leader's plans: `parallelism`, and a rate if given. */
export const settings = (parallelism: number, ratePerSecond: number | null = null): ConsumerSettings => ({ parallelism, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond, maxPending: null });

/** A state (with `limits`) and the next index to apply at. */
export function cluster(limits: FanoutLimits = {}): { state: FanoutState; apply: (c: FanoutCommand) => number } {
  const state = new FanoutState(limits);
  let index = 0;
  return {
    state,
    apply: (c) => {
      state.apply(++index, c);
      return index;
    },
  };
}

/** An emit of `n` items to topic `t`, each keyed as `key` says. */
export const emitN = (n: number, key: (i: number) => string | null = () => null): FanoutCommand => ({ type: 'emit', topic: 't', items: Array.from({ length: n }, (_, i) => ({ data: Uint8Array.of(i), key: key(i) })), origin: null, atMs: 0 });
