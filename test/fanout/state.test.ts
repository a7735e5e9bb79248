import fc from 'fast-check';
import { fullness } from '../../src/fanout/fullness.js';
import { describe, expect, it } from 'vitest';
import { MAX_PENDING_PER_TOPIC, type ConsumerSettings, type FanoutCommand } from '../../src/fanout/command.js';
import { backoffMs, FanoutState, LEASE_GRACE_MS, MAX_BACKOFF_MS } from '../../src/fanout/state.js';
import { MAX_PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import { BATCH_RECORD_BYTES, ITEM_RECORD_BYTES } from '../../src/fanout/footprint.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 2, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A state and a log: each command applied at the next index. */
function log(limits?: ConstructorParameters<typeof FanoutState>[0]): { state: FanoutState; apply: (c: FanoutCommand) => ReturnType<FanoutState['apply']> & { index: number } } {
  const state = new FanoutState(limits);
  let index = 0;
  return { state, apply: (c) => ({ ...state.apply(++index, c), index }) };
}

const emit = (topic: string, items: Array<[string, string | null]>, atMs = 0): FanoutCommand => ({ type: 'emit', topic, items: items.map(([d, key]) => ({ data: bytes(d), key })), origin: null, atMs });

describe('fan-out state', () => {
  it('numbers emitted items in log order, keeps an emit whole or not at all, and counts them', () => {
    const { state, apply } = log({ maxPendingPerTopic: 3 });
    expect(apply(emit('t', [['a', null], ['b', null]]))).toMatchObject({ ok: true, firstId: 1, count: 2 });
    expect(apply(emit('t', [['c', null], ['d', null]]))).toMatchObject({ ok: false, reason: 'backpressure' });
    expect([...state.items.keys()]).toEqual([1, 2]);
    expect(apply(emit('t', [['c', null]]))).toMatchObject({ ok: true, firstId: 3 });
    expect(state.topics.get('t')?.counts.emitted).toBe(3);
    expect([...state.topics.get('t')?.ready ?? []]).toEqual([1, 2, 3]);
  });

  it('refuses a topic past maxTopics, and forgets a topic with neither consumer nor item', () => {
    const { state, apply } = log({ maxTopics: 1 });
    expect(apply({ type: 'consume', topic: 'a', member: 'm1', settings: SETTINGS }).ok).toBe(true);
    expect(apply(emit('b', [['x', null]]))).toMatchObject({ ok: false, reason: 'too-many-topics' });
    expect(apply({ type: 'unconsume', topic: 'a', member: 'm1' }).ok).toBe(true);
    expect(state.topics.size).toBe(0);
    expect(apply(emit('b', [['x', null]])).ok).toBe(true);
  });

  it('leases only pending, due, ready items to a consumer of their topic, under the entry index as token', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply(emit('t', [['a', null], ['b', null]]));
    expect(apply({ type: 'lease', member: 'm2', ids: [1], atMs: 10 })).toMatchObject({ leased: [] });
    const r = apply({ type: 'lease', member: 'm1', ids: [1, 1, 99], atMs: 10 });
    expect(r).toMatchObject({ leased: [1] });
    expect(state.items.get(1)?.phase).toEqual({ kind: 'leased', member: 'm1', token: r.index, deadlineMs: 10 + SETTINGS.timeoutMs + LEASE_GRACE_MS });
    expect(state.topics.get('t')?.inFlight.get('m1')).toBe(1);
    expect([...state.topics.get('t')?.ready ?? []]).toEqual([2]);
  });

  it('leases, under a lease that names a topic, only items of that topic', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply({ type: 'consume', topic: 'u', member: 'm1', settings: SETTINGS });
    apply(emit('t', [['a', null]]));
    apply(emit('u', [['b', null]]));
    expect(apply({ type: 'lease', member: 'm1', ids: [1, 2], atMs: 10, topic: 'u' })).toMatchObject({ leased: [2] });
    expect(state.items.get(1)?.phase.kind).toBe('pending');
  });

  it('records a success once, under the lease it ran under: a late outcome after a reclaim is stale', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply({ type: 'consume', topic: 't', member: 'm2', settings: SETTINGS });
    const e = apply(emit('t', [['a', null]]));
    const first = apply({ type: 'lease', member: 'm1', ids: [1], atMs: 0 }).index;
    apply({ type: 'reclaim', leases: [{ id: 1, token: first }], atMs: 5000 });
    expect(state.items.get(1)?.redeliveries).toBe(1);
    const second = apply({ type: 'lease', member: 'm2', ids: [1], atMs: 5000 }).index;
    expect(second).toBeGreaterThan(first);
    expect(apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token: first, error: null }], atMs: 5001 })).toMatchObject({ stale: 1 });
    expect(state.items.has(1)).toBe(true);
    expect(apply({ type: 'done', member: 'm2', outcomes: [{ id: 1, token: second, error: null }], atMs: 5002 })).toMatchObject({ stale: 0, settledBatches: [{ index: e.index, topic: 't', total: 1, done: 1, dead: 0 }] });
    expect(apply({ type: 'done', member: 'm2', outcomes: [{ id: 1, token: second, error: null }], atMs: 5003 })).toMatchObject({ stale: 1 });
    expect(state.topics.get('t')?.counts).toMatchObject({ done: 1, stale: 1, redelivered: 1 });
    expect(state.items.size).toBe(0);
    expect(state.batches.size).toBe(0);
  });

  it('retries a failure after a doubling backoff, then sends it to the dead letters, from which it can be emitted again', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    const e = apply(emit('t', [['a', null]]));
    let at = 0;
    for (let attempt = 1; attempt <= SETTINGS.retries + 1; attempt++) {
      const token = apply({ type: 'lease', member: 'm1', ids: [1], atMs: at }).index;
      const r = apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token, error: `boom ${attempt}` }], atMs: at });
      expect(r).toMatchObject({ failed: [expect.objectContaining({ id: 1, failures: attempt })] });
      if (attempt <= SETTINGS.retries) {
        const due = at + SETTINGS.backoffMs * 2 ** (attempt - 1);
        expect(state.items.get(1)?.phase).toEqual({ kind: 'pending', notBeforeMs: due });
        // Not leased before it is due.
        expect(apply({ type: 'lease', member: 'm1', ids: [1], atMs: due - 1 })).toMatchObject({ leased: [] });
        at = due;
      } else {
        expect(r).toMatchObject({ settledBatches: [{ index: e.index, topic: 't', total: 1, done: 0, dead: 1 }] });
      }
    }
    const topic = state.topics.get('t');
    expect(topic?.counts).toMatchObject({ failed: 3, dead: 1, done: 0 });
    expect(topic?.deadLetters).toEqual([expect.objectContaining({ id: 1, failures: 3, error: 'boom 3' })]);
    expect(apply({ type: 'requeue', topic: 't', ids: [1], atMs: 0 })).toMatchObject({ ok: true, firstId: 2, count: 1 });
    expect(topic?.deadLetters).toEqual([]);
    expect(state.items.get(2)?.failures).toBe(0);
  });

  it("counts a failure against the retries, and waits the backoff, of the member that ran it (README: a consumer's options are each member's own)", () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, retries: 0, backoffMs: 100 } });
    apply({ type: 'consume', topic: 't', member: 'm2', settings: { ...SETTINGS, retries: 5, backoffMs: 700 } });
    apply(emit('t', [['a', null], ['b', null]]));
    const on1 = apply({ type: 'lease', member: 'm1', ids: [1], atMs: 0 }).index;
    const on2 = apply({ type: 'lease', member: 'm2', ids: [2], atMs: 0 }).index;
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token: on1, error: 'boom' }], atMs: 0 });
    apply({ type: 'done', member: 'm2', outcomes: [{ id: 2, token: on2, error: 'boom' }], atMs: 0 });
    // m1 allows no retry: dead after one attempt. m2 allows five, after its own backoff.
    expect(state.topics.get('t')?.deadLetters.map((l) => l.id)).toEqual([1]);
    expect(state.items.get(2)?.phase).toEqual({ kind: 'pending', notBeforeMs: 700 });
  });

  it('drops dead letters for good, passing over ids not among them, and forgets a topic left with nothing', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, retries: 0 } });
    apply(emit('t', [['a', null], ['b', null], ['c', null]]));
    const token = apply({ type: 'lease', member: 'm1', ids: [1, 2, 3], atMs: 0 }).index;
    apply({ type: 'done', member: 'm1', outcomes: [1, 2, 3].map((id) => ({ id, token, error: 'boom' })), atMs: 0 });
    expect(state.topics.get('t')?.deadLetters.map((l) => l.id)).toEqual([1, 2, 3]);
    expect(apply({ type: 'drop', topic: 't', ids: [2, 99], atMs: 0 })).toMatchObject({ ok: true, count: 1 });
    expect(state.topics.get('t')?.deadLetters.map((l) => l.id)).toEqual([1, 3]);
    // With its consumer gone, the topic is kept for its dead letters, and forgotten with them.
    apply({ type: 'unconsume', topic: 't', member: 'm1' });
    expect(state.topics.has('t')).toBe(true);
    expect(apply({ type: 'drop', topic: 't', ids: [1, 3], atMs: 0 })).toMatchObject({ ok: true, count: 2 });
    expect(state.topics.has('t')).toBe(false);
    expect(apply({ type: 'drop', topic: 't', ids: [1], atMs: 0 })).toMatchObject({ ok: false, reason: 'unknown-topic' });
  });

  it("times no redelivery by a reporter's clock ahead: an item taken back is due at once, and a retry's backoff counts from the lease's deadline at the latest", () => {
    // m2's clock is a minute ahead of the leader's (seed 71, 3 members: items that m2 gave back
    // waited out its skew, past the bound on settling after the faults healed).
    const AHEAD = 60_000;
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply({ type: 'consume', topic: 't', member: 'm2', settings: SETTINGS });
    apply(emit('t', [['a', null], ['b', null]]));
    const given = apply({ type: 'lease', member: 'm2', ids: [1, 2], atMs: 1000 }).index;
    apply({ type: 'reclaim', leases: [{ id: 1, token: given }], atMs: 1000 + AHEAD });
    expect(apply({ type: 'lease', member: 'm1', ids: [1], atMs: 1001 })).toMatchObject({ leased: [1] });
    // Its failure, reported a minute ahead, is retried a backoff after the lease's deadline at most.
    apply({ type: 'done', member: 'm2', outcomes: [{ id: 2, token: given, error: 'boom' }], atMs: 1500 + AHEAD });
    const deadline = 1000 + SETTINGS.timeoutMs + LEASE_GRACE_MS;
    expect(state.items.get(2)?.phase).toEqual({ kind: 'pending', notBeforeMs: deadline + SETTINGS.backoffMs });
    // A reported time earlier than the lease's deadline is taken as it is.
    const again = apply({ type: 'lease', member: 'm2', ids: [2], atMs: deadline + SETTINGS.backoffMs }).index;
    apply({ type: 'done', member: 'm2', outcomes: [{ id: 2, token: again, error: 'boom' }], atMs: deadline + 200 });
    expect(state.items.get(2)?.phase).toEqual({ kind: 'pending', notBeforeMs: deadline + 200 + SETTINGS.backoffMs * 2 });
    // A failure once no member consumes the topic: due at once, whatever the reporter's clock.
    const last = apply({ type: 'lease', member: 'm1', ids: [2], atMs: deadline + 200 + SETTINGS.backoffMs * 2 }).index;
    apply({ type: 'unconsume', topic: 't', member: 'm1' });
    apply({ type: 'unconsume', topic: 't', member: 'm2' });
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 2, token: last, error: 'boom' }], atMs: 99_000 + AHEAD });
    expect(state.items.get(2)?.phase).toEqual({ kind: 'pending', notBeforeMs: 0 });
  });

  it('runs the items of one key one at a time, in emit order, a failing one holding the rest', () => {
    const { state, apply } = log();
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply(emit('t', [['a1', 'a'], ['b1', 'b'], ['a2', 'a'], ['n', null]]));
    expect([...state.topics.get('t')?.ready ?? []].sort()).toEqual([1, 2, 4]);
    const token = apply({ type: 'lease', member: 'm1', ids: [1, 2, 3, 4], atMs: 0 }).index;
    expect(state.items.get(3)?.phase.kind).toBe('pending');
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token, error: 'no' }], atMs: 0 });
    expect(state.topics.get('t')?.ready.has(3)).toBe(false);
    const again = apply({ type: 'lease', member: 'm1', ids: [1], atMs: 1000 }).index;
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token: again, error: null }], atMs: 1000 });
    expect([...state.topics.get('t')?.ready ?? []]).toEqual([3]);
  });

  it('bounds unsettled items by the least maxPending its consumers ask for (within the cap), all topics by their bytes, and keeps the newest dead letters', () => {
    // Bytes as records take them in a snapshot: each item's data and the rest (I), and each emit's batch (B).
    const [I, B] = [ITEM_RECORD_BYTES, BATCH_RECORD_BYTES];
    const { state, apply } = log({ maxUnsettledBytes: 4 * I + 10 + 3 * B, maxDeadLettersPerTopic: 2 });
    expect(state.maxPendingOf('t')).toBe(MAX_PENDING_PER_TOPIC);
    apply({ type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, maxPending: 5 } });
    apply({ type: 'consume', topic: 't', member: 'm2', settings: { ...SETTINGS, maxPending: 3 } });
    apply({ type: 'consume', topic: 'u', member: 'm1', settings: { ...SETTINGS, retries: 0 } });
    expect(state.maxPendingOf('t')).toBe(3);
    expect(apply(emit('t', [['a', null], ['b', null], ['c', null], ['d', null]]))).toMatchObject({ ok: false, reason: 'backpressure' });
    expect(fullness(state, 't', 4)).toBe('the topic t holds 0 unsettled items: 4 more would pass its maxPending of 3');
    expect(state.topics.get('t')?.counts.emitted).toBe(0);
    // Bytes, every topic together: 3I + 9 + 2B held, I + 2 + B more would pass 4I + 10 + 3B, whatever the topic.
    expect(apply(emit('t', [['aaa', null], ['bbb', null]]))).toMatchObject({ ok: true });
    expect(apply(emit('u', [['ccc', null]]))).toMatchObject({ ok: true });
    expect(apply(emit('u', [['dd', null]]))).toMatchObject({ ok: false, reason: 'backpressure' });
    // The error names the bound that refused it, and the topic that holds the most.
    expect(fullness(state, 'u', 1)).toBe(`the unsettled items of every topic together take ${3 * I + 9 + 2 * B} bytes of the ${4 * I + 10 + 3 * B} they may (u holds 1); the topic holding the most is t, with 2`);
    expect(state.unsettledBytes).toBe(3 * I + 9 + 2 * B);
    expect(state.topics.get('u')?.counts.emitted).toBe(1);
    // Dead letters: the newest two of three.
    expect(apply(emit('u', [['e', null]]))).toMatchObject({ ok: true });
    const kept: (string | null | undefined)[] = [];
    for (const id of [3, 4]) {
      const token = apply({ type: 'lease', member: 'm1', ids: [id], atMs: 0 }).index;
      const r = apply({ type: 'done', member: 'm1', outcomes: [{ id, token, error: 'boom' }], atMs: 0 });
      kept.push(r.ok ? r.failed?.[0]?.lastError : undefined);
    }
    // At the bound (and past it by the member of 3's lease), 3's error was kept as none; 4's fit once 3 was settled.
    expect(kept).toEqual([null, 'boom']);
    expect(apply(emit('u', [['f', null]]))).toMatchObject({ ok: true, firstId: 5 });
    const token = apply({ type: 'lease', member: 'm1', ids: [5], atMs: 0 }).index;
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 5, token, error: 'boom' }], atMs: 0 });
    expect(state.topics.get('u')?.deadLetters.map((l) => l.id)).toEqual([4, 5]);
    expect(state.topics.get('u')?.counts.dead).toBe(3);
  });

  it('the doubling backoff is capped', () => {
    expect(backoffMs(100, 1)).toBe(100);
    expect(backoffMs(100, 4)).toBe(800);
    expect(backoffMs(100, 1000)).toBe(MAX_BACKOFF_MS);
  });

  it('whatever the commands, every item is unsettled or counted once as done or dead, and members agree', () => {
    const members = ['m1', 'm2', 'm3'];
    const command = fc.oneof(
      fc.record({ type: fc.constant('consume' as const), member: fc.constantFrom(...members) }),
      fc.record({ type: fc.constant('unconsume' as const), member: fc.constantFrom(...members) }),
      fc.record({ type: fc.constant('emit' as const), n: fc.integer({ min: 1, max: 5 }), keyed: fc.boolean() }),
      fc.record({ type: fc.constant('lease' as const), member: fc.constantFrom(...members), ids: fc.array(fc.integer({ min: 1, max: 30 }), { maxLength: 5 }) }),
      fc.record({ type: fc.constant('done' as const), member: fc.constantFrom(...members), id: fc.integer({ min: 1, max: 30 }), ok: fc.boolean(), tokenBack: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ type: fc.constant('reclaim' as const), id: fc.integer({ min: 1, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 80 }), (drawn) => {
        const a = new FanoutState({ maxPendingPerTopic: 20 });
        const b = new FanoutState({ maxPendingPerTopic: 20 });
        let at = 0;
        const doneSeen = new Set<number>();
        drawn.forEach((d, i) => {
          const index = i + 1;
          at += 500;
          let c: FanoutCommand;
          if (d.type === 'consume') c = { type: 'consume', topic: 't', member: d.member, settings: SETTINGS };
          else if (d.type === 'unconsume') c = { type: 'unconsume', topic: 't', member: d.member };
          else if (d.type === 'emit') c = emit('t', Array.from({ length: d.n }, (_, k) => [`x${k}`, d.keyed ? `k${k % 2}` : null]), at);
          else if (d.type === 'lease') c = { type: 'lease', member: d.member, ids: d.ids, atMs: at };
          else if (d.type === 'done') {
            const phase = a.items.get(d.id)?.phase;
            const token = phase?.kind === 'leased' ? phase.token - d.tokenBack : index;
            c = { type: 'done', member: d.member, outcomes: [{ id: d.id, token, error: d.ok ? null : 'x' }], atMs: at };
          } else {
            const phase = a.items.get(d.id)?.phase;
            c = { type: 'reclaim', leases: [{ id: d.id, token: phase?.kind === 'leased' ? phase.token : 0 }], atMs: at };
          }
          const before = a.items.get('id' in d ? d.id : -1);
          const wasLeasedBy = before?.phase.kind === 'leased' ? before.phase.member : null;
          const ra = a.apply(index, c);
          expect(b.apply(index, c)).toEqual(ra);
          // A success is recorded at most once per item.
          if (c.type === 'done' && c.outcomes[0]?.error === null && ra.ok && ra.stale === 0) {
            expect(doneSeen.has(c.outcomes[0].id)).toBe(false);
            expect(wasLeasedBy).toBe(c.member);
            doneSeen.add(c.outcomes[0].id);
          }
        });
        const topic = a.topics.get('t');
        const emitted = topic?.counts.emitted ?? 0;
        expect(a.items.size + (topic?.counts.done ?? 0) + (topic?.counts.dead ?? 0)).toBe(topic === undefined ? 0 : emitted);
        let inFlight = 0;
        for (const item of a.items.values()) if (item.phase.kind === 'leased') inFlight++;
        // The leased index is what the phases say.
        expect([...a.leased].sort((x, y) => x - y)).toEqual([...a.items.values()].filter((item) => item.phase.kind === 'leased').map((item) => item.id));
        expect([...(topic?.inFlight.values() ?? [])].reduce((x, y) => x + y, 0)).toBe(inFlight);
        expect(JSON.stringify([...a.items.values()])).toBe(JSON.stringify([...b.items.values()]));
      }),
      { numRuns: 300 },
    );
  });
});

describe('leases within a consumer’s parallelism', () => {
  it('skips items past the member’s parallelism and prefetch, as when two leaders’ plans for it both apply', () => {
    const state = new FanoutState();
    state.apply(1, { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, parallelism: 2 } });
    const most = 2 * (1 + MAX_PREFETCH_PER_PARALLELISM);
    const ids = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
    state.apply(2, { type: 'emit', topic: 't', items: Array.from({ length: most + 2 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    // The old leader's lease, then the new leader's, planned without it.
    expect(state.apply(3, { type: 'lease', member: 'm1', ids: ids(1, most), atMs: 0 })).toMatchObject({ leased: ids(1, most) });
    expect(state.apply(4, { type: 'lease', member: 'm1', ids: ids(most + 1, 2), atMs: 0 })).toMatchObject({ leased: [] });
    expect(state.topics.get('t')?.inFlight.get('m1')).toBe(most);
    expect(state.items.get(most + 1)?.phase.kind).toBe('pending');
  });

  it('gives an item leased past the parallelism, which waits on its member for runs to end, a timeout more per parallelism held before it', () => {
    const state = new FanoutState();
    state.apply(1, { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, parallelism: 2 } });
    state.apply(2, { type: 'emit', topic: 't', items: Array.from({ length: 4 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    state.apply(3, { type: 'lease', member: 'm1', ids: [1, 2, 3, 4], atMs: 10 });
    const deadline = (id: number): number | undefined => {
      const phase = state.items.get(id)?.phase;
      return phase?.kind === 'leased' ? phase.deadlineMs : undefined;
    };
    expect([1, 2].map(deadline)).toEqual([10 + SETTINGS.timeoutMs + LEASE_GRACE_MS, 10 + SETTINGS.timeoutMs + LEASE_GRACE_MS]);
    expect([3, 4].map(deadline)).toEqual([10 + 2 * SETTINGS.timeoutMs + LEASE_GRACE_MS, 10 + 2 * SETTINGS.timeoutMs + LEASE_GRACE_MS]);
  });

  it('leases a topic with a rate within the parallelism alone: items leased ahead would start in a burst', () => {
    const state = new FanoutState();
    state.apply(1, { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, parallelism: 2, ratePerSecond: 100 } });
    state.apply(2, { type: 'emit', topic: 't', items: Array.from({ length: 4 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    expect(state.apply(3, { type: 'lease', member: 'm1', ids: [1, 2, 3, 4], atMs: 0 })).toMatchObject({ leased: [1, 2] });
  });
});
