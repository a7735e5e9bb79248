import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState, type FanoutLimits } from '../../src/fanout/state.js';

export const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

/**
 * A state with something of everything a snapshot holds: two topics, consumers, an item of each
 * phase, a key's line of two with its head leased, a failure waiting out its backoff, a dead
 * letter, an origin, times that are not whole, and batches partly settled.
 */
export function richState(limits?: FanoutLimits): FanoutState {
  const state = new FanoutState(limits);
  const commands: FanoutCommand[] = [
    { type: 'consume', topic: 't', member: 'm1', settings: SETTINGS },
    { type: 'consume', topic: 'u', member: 'm2', settings: { ...SETTINGS, retries: 0, ratePerSecond: 5 } },
    // Items 1 to 4 in t: 2 and 3 of key k.
    { type: 'emit', topic: 't', items: [{ data: bytes('a'), key: null }, { data: bytes('b'), key: 'k' }, { data: bytes('c'), key: 'k' }, { data: Uint8Array.of(0, 255), key: null }], origin: { job: 'nightly', slotMs: 1000 }, atMs: 10.5 },
    // Items 5 and 6 in u.
    { type: 'emit', topic: 'u', items: [{ data: bytes('x'), key: null }, { data: bytes('y'), key: null }], origin: null, atMs: 11 },
    { type: 'lease', member: 'm1', ids: [2, 4], atMs: 20 },
    { type: 'lease', member: 'm2', ids: [5], atMs: 20 },
  ];
  commands.forEach((c, i) => state.apply(i + 1, c));
  // Item 4 fails once and waits out its backoff; item 5 fails for good and becomes a dead letter.
  state.apply(7, { type: 'done', member: 'm1', outcomes: [{ id: 4, token: 5, error: 'boom' }], atMs: 30.25 });
  state.apply(8, { type: 'done', member: 'm2', outcomes: [{ id: 5, token: 6, error: 'gone' }], atMs: 31 });
  return state;
}
