import { describe, expect, it } from 'vitest';
import { RaftNode } from '../../src/raft/node.js';
import type { NodeId } from '../../src/raft/types.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import { CLOCK_OFFSET_MAX_AGE_MS } from '../../src/runtime/clock-sync.js';
import { RaftDriver } from '../../src/runtime/driver.js';
import { MemoryLogStorage } from '../../src/storage/memory-log-storage.js';
import type { Clock, TimerHandle, Timers } from '../../src/time/clock.js';
import { SeededRandom } from '../../src/time/random.js';
import type { Transport, TransportStats } from '../../src/transport/transport.js';
import { NO_SNAPSHOT_STATE } from '../fixtures/state-machine.js';

/** True time 0 is this instant, so clocks read plausible dates. */
const EPOCH = Date.UTC(2026, 0, 1);
/** The requirement: no member's view of the cluster's time is off by more than this. */
const TOLERANCE_MS = 50;
const IDS = ['a', 'b', 'c'];

interface Event {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

/** Virtual true time: timers fire in (time, scheduling) order; promises settle between events. */
class VirtualTime {
  now = 0;
  #seq = 0;
  #events: Event[] = [];

  after(delayMs: number, run: () => void): Event {
    const event: Event = { at: this.now + Math.max(0, delayMs), seq: this.#seq++, run, cancelled: false };
    // Sorted insert: few events are pending at once.
    let i = this.#events.length;
    while (i > 0 && before(event, this.#events[i - 1] as Event)) i--;
    this.#events.splice(i, 0, event);
    return event;
  }

  /** Timers whose monotonic time base reads true time + `origin` (each process has its own). */
  timers(origin: number): Timers {
    return {
      now: () => origin + this.now,
      setTimeout: (callback: () => void, delayMs: number): TimerHandle => this.after(delayMs, callback),
      clearTimeout: (handle: TimerHandle): void => {
        (handle as Event).cancelled = true;
      },
    };
  }

  /** Runs every event up to `untilMs`, calling `check` after each one. */
  async runUntil(untilMs: number, check?: () => void): Promise<void> {
    for (;;) {
      const next = this.#events[0];
      if (next === undefined || next.at > untilMs) break;
      this.#events.shift();
      if (next.cancelled) continue;
      this.now = next.at;
      next.run();
      await new Promise<void>((resolve) => setImmediate(resolve));
      check?.();
    }
    this.now = untilMs;
  }
}

function before(a: Event, b: Event): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Delivers each message after a random latency of 1 to 5 ms; members can be cut off. */
class Network {
  readonly #time: VirtualTime;
  readonly #random = new SeededRandom(42);
  readonly #handlers = new Map<NodeId, (m: WireMessage) => void>();
  readonly down = new Set<NodeId>();

  constructor(time: VirtualTime) {
    this.#time = time;
  }

  transport(id: NodeId): Transport {
    const stats: TransportStats = { sent: 0, received: 0, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 };
    return {
      start: async () => undefined,
      stop: async () => undefined,
      send: (m) => this.#send(m),
      flush: () => undefined,
      setProtocol: () => undefined,
      setMembers: () => undefined,
      peerId: () => null,
      remotePeerIdOf: () => null,
      onMessage: (handler) => {
        this.#handlers.set(id, handler);
      },
      isConnected: (peer) => !this.down.has(peer),
      stats: () => stats,
    };
  }

  /** Delivers `m` now, as if a peer had sent it. */
  inject(m: WireMessage): void {
    this.#handlers.get(m.to)?.(m);
  }

  #send(m: WireMessage): void {
    if (this.down.has(m.from) || this.down.has(m.to)) return;
    const latencyMs = this.#random.int(1000, 5000) / 1000;
    this.#time.after(latencyMs, () => {
      if (!this.down.has(m.to)) this.#handlers.get(m.to)?.(m);
    });
  }
}

type Skew = (t: number) => number;

interface Harness {
  readonly time: VirtualTime;
  readonly network: Network;
  readonly drivers: Map<NodeId, RaftDriver>;
  /** Each member's wall clock minus true time, as a function of true time: tests may replace it. */
  readonly skews: Map<NodeId, Skew>;
  driver(id: NodeId): RaftDriver;
  /** True time on the epoch scale. */
  trueNow(): number;
  /** `id`'s monotonic clock (`timers.now()`) now. */
  mono(id: NodeId): number;
  /** Each live member's cluster time minus true time. */
  errors(): Map<NodeId, number>;
  leader(): NodeId | null;
  /** Stops `id` and starts it again on its storage: a new process, with a new monotonic origin. */
  restart(id: NodeId): Promise<void>;
}

/**
 * Three drivers whose wall clocks read true time + skew(true time), in whole milliseconds as
 * Date.now() reads, and whose monotonic clocks read true time + an origin of their own, with
 * fractions as performance.now() reads.
 */
async function cluster(skews: Record<NodeId, Skew>): Promise<Harness> {
  const time = new VirtualTime();
  const network = new Network(time);
  const random = new SeededRandom(7);
  const drivers = new Map<NodeId, RaftDriver>();
  const storages = new Map<NodeId, MemoryLogStorage>();
  const origins = new Map<NodeId, number>();
  const skewOf = new Map<NodeId, Skew>(IDS.map((id) => [id, skews[id] ?? ((): number => 0)]));
  const start = async (id: NodeId, i: number, storage: MemoryLogStorage, origin: number): Promise<void> => {
    const stored = await storage.open();
    const node = new RaftNode({ id, voters: IDS, electionTicks: 25, heartbeatTicks: 5 }, { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries }, new SeededRandom(i + 1));
    const clock: Clock = { now: () => Math.floor(EPOCH + time.now + (skewOf.get(id) as Skew)(time.now)) };
    const driver = new RaftDriver({
      node,
      storage,
      transport: network.transport(id),
      stateMachine: { apply: () => null, ...NO_SNAPSHOT_STATE },
      clock,
      timers: time.timers(origin),
      tickMs: 10,
      requestTimeoutMs: 2000,
      maxPendingProposals: 100,
      maxProposalBatch: 10,
      maxProposalBatchBytes: 64 * 1024,
      maxPendingReads: 10,
      leaderSilenceMs: 250,
      bootId: `${id}-${origin}`,
    });
    drivers.set(id, driver);
    storages.set(id, storage);
    origins.set(id, origin);
    driver.start();
  };
  for (const [i, id] of IDS.entries()) await start(id, i, new MemoryLogStorage(), random.int(0, 100_000_000) / 1000);
  const live = (): Array<[NodeId, RaftDriver]> => [...drivers].filter(([id]) => !network.down.has(id));
  return {
    time,
    network,
    drivers,
    skews: skewOf,
    driver: (id) => drivers.get(id) as RaftDriver,
    trueNow: () => EPOCH + time.now,
    mono: (id) => (origins.get(id) as number) + time.now,
    errors: () => new Map(live().map(([id, d]) => [id, d.clusterClock().now() - (EPOCH + time.now)])),
    leader: () => live().find(([, d]) => d.node.role === 'leader')?.[0] ?? null,
    restart: async (id) => {
      (drivers.get(id) as RaftDriver).stop();
      const old = storages.get(id) as MemoryLogStorage;
      await old.close();
      // performance.now() starts near 0 in a new process.
      await start(id, IDS.indexOf(id), new MemoryLogStorage(old.disk), -time.now + 0.125);
    },
  };
}

/** Fails if a member that says it is synced is off by more than the tolerance. */
function syncedWithinTolerance(h: Harness, worst: { error: number }, toleranceMs = TOLERANCE_MS): () => void {
  return () => {
    for (const [id, error] of h.errors()) {
      if (!h.driver(id).clockSynced) continue;
      worst.error = Math.max(worst.error, Math.abs(error));
      if (Math.abs(error) > toleranceMs) throw new Error(`${id}'s cluster time is off by ${error} ms at ${h.time.now} ms`);
    }
  };
}

/** `a` leads and every member is synced, by true time 2 s. */
async function synced(h: Harness, check: () => void): Promise<void> {
  h.driver('a').node.campaign();
  await h.time.runUntil(2000, check);
  expect(h.leader()).toBe('a');
  for (const id of IDS) expect(h.driver(id).clockSynced, id).toBe(true);
}

/** |the offset `reporter` reports for `id` - expected| */
function offsetError(h: Harness, reporter: NodeId, id: NodeId, expected: number): number {
  return Math.abs((h.driver(reporter).clockOffsets().get(id)?.offsetMs ?? Infinity) - expected);
}

const constant =
  (ms: number) =>
  (): number =>
    ms;

describe('the cluster time over heartbeats', () => {
  it.each([
    ['leads', 'c'],
    ['follows', 'a'],
  ])('is within 50 ms of true time on every member when the member 60 s ahead %s', async (_name, leader) => {
    const h = await cluster({ c: constant(60_000) });
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst);
    h.driver(leader).node.campaign();
    await h.time.runUntil(1000, check);
    expect(h.leader()).toBe(leader);
    for (const id of IDS) expect(h.driver(id).clockSynced, id).toBe(true);
    await h.time.runUntil(5000, check);
    expect(worst.error).toBeLessThanOrEqual(TOLERANCE_MS);
    for (const [id, error] of h.errors()) expect(Math.abs(error), id).toBeLessThanOrEqual(TOLERANCE_MS);

    // The leader reports every member's offset from the cluster's time; c is 60 s off.
    const offsets = h.driver(leader).clockOffsets();
    expect([...offsets.keys()].sort()).toEqual(IDS);
    expect(Math.abs((offsets.get('c')?.offsetMs ?? 0) - 60_000)).toBeLessThanOrEqual(TOLERANCE_MS);
    expect(Math.abs(offsets.get('a')?.offsetMs ?? Infinity)).toBeLessThanOrEqual(TOLERANCE_MS);
    expect(Math.abs(offsets.get('b')?.offsetMs ?? Infinity)).toBeLessThanOrEqual(TOLERANCE_MS);
    for (const o of offsets.values()) {
      expect(o.rttMs).toBeLessThanOrEqual(10);
      expect(o.ageMs).toBeLessThan(1000);
    }
    // A follower knows itself.
    const follower = leader === 'c' ? 'b' : 'c';
    expect([...h.driver(follower).clockOffsets().keys()]).toEqual([follower]);
    for (const d of h.drivers.values()) expect(d.invalidClockStamps).toBe(0);
  });

  it('holds the time when the member 60 s ahead takes over, and when the old leader dies', async () => {
    const h = await cluster({ c: constant(60_000) });
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst);
    h.driver('a').node.campaign();
    await h.time.runUntil(1000, check);
    expect(h.leader()).toBe('a');
    h.driver('a').node.transferLeadership('c');
    await h.time.runUntil(2000, check);
    expect(h.leader()).toBe('c');
    // a dies: c sees two clocks, its own and b's, and holds over; a's estimate goes stale.
    h.network.down.add('a');
    h.driver('a').stop();
    await h.time.runUntil(2000 + CLOCK_OFFSET_MAX_AGE_MS + 3000, check);
    expect(h.leader()).toBe('c');
    for (const [id, error] of h.errors()) expect(Math.abs(error), id).toBeLessThanOrEqual(TOLERANCE_MS);
    const offsets = h.driver('c').clockOffsets();
    expect([...offsets.keys()].sort()).toEqual(['b', 'c']);
    expect(Math.abs((offsets.get('c')?.offsetMs ?? 0) - 60_000)).toBeLessThanOrEqual(TOLERANCE_MS);
    // The correction was last confirmed by a median when a's estimate went stale, 3 s ago.
    expect(offsets.get('c')?.ageMs).toBeGreaterThan(2500);
    expect(worst.error).toBeLessThanOrEqual(TOLERANCE_MS);
  });

  it('follows a follower whose clock drifts by 2 ms a second', async () => {
    const drift = (t: number): number => t * 0.002;
    const h = await cluster({ b: drift });
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst);
    h.driver('a').node.campaign();
    await h.time.runUntil(30_000, check);
    expect(h.leader()).toBe('a');
    // b's own clock is now 60 ms off; its cluster time is not.
    expect(drift(h.time.now)).toBe(60);
    expect(worst.error).toBeLessThanOrEqual(10);
    expect(Math.abs(h.errors().get('b') ?? Infinity)).toBeLessThanOrEqual(10);
    expect(Math.abs((h.driver('a').clockOffsets().get('b')?.offsetMs ?? 0) - 60)).toBeLessThanOrEqual(10);
  });

  it('is the local clock before sync, with no offsets', async () => {
    const h = await cluster({ c: constant(60_000) });
    const c = h.driver('c');
    expect(c.clockSynced).toBe(false);
    expect(c.clockOffsets().size).toBe(0);
    expect(c.clusterClock().now()).toBe(h.trueNow() + 60_000);
  });

  it('drops and counts hostile stamps without harm to the member or its time', async () => {
    const h = await cluster({ c: constant(60_000) });
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst);
    h.driver('a').node.campaign();
    await h.time.runUntil(1000, check);
    const a = h.driver('a');
    const c = h.driver('c');
    const term = a.node.term;
    const heartbeat = { type: 'heartbeat', from: 'a', to: 'c', term, commit: 0, readCtx: 0 } as const;
    const hostile: unknown[] = [
      { sentAt: Number.NaN },
      'soon',
      { sentAt: h.trueNow(), estimate: { offsetMs: 0, rttMs: 1, clusterOffsetMs: 1e300 } },
      { sentAt: h.trueNow(), estimate: { offsetMs: Number.POSITIVE_INFINITY, rttMs: 1, clusterOffsetMs: 0 } },
      { sentAt: h.trueNow(), estimate: { offsetMs: 0, rttMs: -5, clusterOffsetMs: 0 } },
    ];
    for (const clock of hostile) h.network.inject({ ...heartbeat, clock } as WireMessage);
    expect(c.invalidClockStamps).toBe(hostile.length);
    // An echo claiming a negative round trip, one of a heartbeat a hasn't sent yet, and one
    // without a wall offset.
    const local = EPOCH + h.time.now;
    const am = h.mono('a');
    const wallOffset = local - am;
    h.network.inject({ type: 'heartbeat-resp', from: 'b', to: 'a', term, readCtx: 0, clock: { echo: am - 10, receivedAt: am, sentAt: am + 100, wallOffset } });
    h.network.inject({ type: 'heartbeat-resp', from: 'b', to: 'a', term, readCtx: 0, clock: { echo: am + 5000, receivedAt: am, sentAt: am, wallOffset } });
    h.network.inject({ type: 'heartbeat-resp', from: 'b', to: 'a', term, readCtx: 0, clock: { echo: am - 10, receivedAt: am, sentAt: am } } as unknown as WireMessage);
    expect(a.invalidClockStamps).toBe(3);
    // A well-formed estimate from a deposed leader (an older term) is ignored, uncounted.
    const estimate = { offsetMs: 0, rttMs: 1, clusterOffsetMs: 30_000 };
    h.network.inject({ type: 'heartbeat', from: 'b', to: 'c', term: term - 1, commit: 0, readCtx: 0, clock: { sentAt: local, estimate } });
    expect(c.node.leader).toBe('a');
    expect(c.invalidClockStamps).toBe(hostile.length);
    await h.time.runUntil(3000, check);
    expect(h.leader()).toBe('a');
    expect(c.node.leader).toBe('a');
    expect(c.invalidMessages + a.invalidMessages).toBe(0);
    for (const [id, error] of h.errors()) expect(Math.abs(error), id).toBeLessThanOrEqual(TOLERANCE_MS);
    // And the cluster still commits.
    const proposal = a.propose(new Uint8Array([1]));
    await h.time.runUntil(3200, check);
    await expect(proposal).resolves.toMatchObject({ index: expect.any(Number) as number });
  });
});

/** Cluster time within this of true time, at every instant, whatever one wall clock does: network delays are 1 to 5 ms. */
const STEP_TOLERANCE_MS = 10;

describe('the cluster time when a wall clock misbehaves at runtime', () => {
  it.each([35_000, -35_000])("stays on true time on every member when the leader's wall clock steps by %i ms", async (step) => {
    const h = await cluster({});
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst, STEP_TOLERANCE_MS);
    await synced(h, check);
    const before = IDS.map((id) => h.driver(id).clusterClock().now());
    h.skews.set('a', () => step);
    // Right after the step, before any new sample: no member's cluster time moved.
    expect(IDS.map((id) => h.driver(id).clusterClock().now())).toEqual(before);
    await h.time.runUntil(2000 + 2 * CLOCK_OFFSET_MAX_AGE_MS, check);
    expect(h.leader()).toBe('a');
    expect(worst.error).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    // The leader's own clock is outvoted, and reported as off.
    expect(offsetError(h, 'a', 'a', step)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    expect(offsetError(h, 'a', 'b', 0)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    expect(offsetError(h, 'a', 'c', 0)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    for (const d of h.drivers.values()) expect(d.invalidClockStamps).toBe(0);
  });

  it("leaves a follower's cluster time alone when its wall clock steps, and reports the step", async () => {
    const h = await cluster({});
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst, STEP_TOLERANCE_MS);
    await synced(h, check);
    const before = h.driver('c').clusterClock().now();
    h.skews.set('c', () => 35_000);
    expect(h.driver('c').clusterClock().now()).toBe(before);
    // c sees its step at once, against the correction it holds; the leader, once it samples c again.
    expect(offsetError(h, 'c', 'c', 35_000)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    expect(offsetError(h, 'a', 'c', 0)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    await h.time.runUntil(2200, check);
    expect(offsetError(h, 'a', 'c', 35_000)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    await h.time.runUntil(2000 + CLOCK_OFFSET_MAX_AGE_MS, check);
    expect(worst.error).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
  });

  it('keeps the time when a member whose wall clock stepped while following takes over from a stopped leader', async () => {
    const h = await cluster({});
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst, STEP_TOLERANCE_MS);
    await synced(h, check);
    h.skews.set('c', () => 35_000);
    await h.time.runUntil(3000, check);
    h.network.down.add('a');
    h.driver('a').stop();
    await h.time.runUntil(4000, check);
    // Prevote keeps whoever timed out first: make sure it is c.
    if (h.leader() === 'b') h.driver('b').node.transferLeadership('c');
    await h.time.runUntil(4500, check);
    expect(h.leader()).toBe('c');
    // c sees two clocks, its own (35 s off) and b's: it holds over the correction it had as a
    // follower, on its monotonic clock, so its wall clock's step does not show.
    await h.time.runUntil(4500 + CLOCK_OFFSET_MAX_AGE_MS + 3000, check);
    expect(h.leader()).toBe('c');
    expect(worst.error).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    expect(offsetError(h, 'c', 'c', 35_000)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    expect(offsetError(h, 'c', 'b', 0)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
  });

  it.each([
    ['the leader', 'a'],
    ['a follower', 'c'],
  ])('ignores a frozen wall clock on %s', async (_name, frozen) => {
    const h = await cluster({});
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst, STEP_TOLERANCE_MS);
    await synced(h, check);
    h.skews.set(frozen, (t) => 2000 - t);
    await h.time.runUntil(2000 + 2 * CLOCK_OFFSET_MAX_AGE_MS, check);
    expect(h.leader()).toBe('a');
    expect(worst.error).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    // Reported as far behind as it has been frozen (as of the leader's latest sample of it).
    const offset = h.driver('a').clockOffsets().get(frozen)?.offsetMs ?? Infinity;
    expect(offset).toBeLessThanOrEqual(-2 * CLOCK_OFFSET_MAX_AGE_MS + 200);
    expect(offset).toBeGreaterThanOrEqual(-2 * CLOCK_OFFSET_MAX_AGE_MS - STEP_TOLERANCE_MS);
  });

  it('re-estimates a restarted follower, whose monotonic clock has a new origin', async () => {
    const h = await cluster({});
    const worst = { error: 0 };
    const check = syncedWithinTolerance(h, worst, STEP_TOLERANCE_MS);
    await synced(h, check);
    await h.time.runUntil(3000, check);
    // b comes back with its wall clock 60 s ahead; the leader still has samples of the old b.
    h.skews.set('b', () => 60_000);
    await h.restart('b');
    expect(h.driver('b').clockSynced).toBe(false);
    expect(h.errors().get('b')).toBe(60_000);
    await h.time.runUntil(3500, check);
    expect(h.driver('b').clockSynced).toBe(true);
    expect(offsetError(h, 'a', 'b', 60_000)).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    await h.time.runUntil(3000 + CLOCK_OFFSET_MAX_AGE_MS, check);
    expect(h.leader()).toBe('a');
    expect(worst.error).toBeLessThanOrEqual(STEP_TOLERANCE_MS);
    for (const d of h.drivers.values()) expect(d.invalidClockStamps).toBe(0);
  });
});
