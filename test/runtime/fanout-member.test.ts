import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import type { ItemContext } from '../../src/runtime/fanout/consumer.js';
import { PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import type { TopicRecord } from '../../src/fanout/state.js';
import type { NodeId } from '../../src/raft/types.js';
import type { Member } from '../../src/runtime/member.js';
import { decodeEntry, mayBeFanoutCommand } from '../../src/runtime/commands.js';
import type { MemberSettings } from '../../src/runtime/member-settings.js';
import { FANOUT_VERSION, SUPPORTED, type VersionSupport } from '../../src/version/versions.js';
import { drainMicrotasks } from '../../simulations/scheduler.js';
import { FOUNDERS, LIMIT_MS, MembershipSim, SETTINGS as MEMBER_SETTINGS } from '../fixtures/membership-sim.js';

/** The production member of `id`, which must be running. */
function memberOf(sim: MembershipSim, id: NodeId): Member {
  const member = sim.get(id).member;
  if (member === undefined || member === null) throw new Error(`${id} has no member`);
  return member;
}

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 2, timeoutMs: 5000, backoffMs: 100, ratePerSecond: null, maxPending: null };

/** Fan-out on the production member, on simulated time (issue 19). */
describe('fan-out on the production member', () => {
  it('items emitted on a follower run once each across the consumers, and the topic settles', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const runs: Array<{ member: string; ctx: ItemContext }> = [];
    for (const id of FOUNDERS) {
      const member = sim.get(id).member;
      if (member === undefined || member === null) throw new Error(`${id} has no member`);
      await sim.settle(member.fanoutRuntime.consume('t', (_data, ctx) => void runs.push({ member: id, ctx }), SETTINGS));
    }
    const leader = await sim.until('a leader', () => sim.leader());
    const follower = sim.get(FOUNDERS.find((id) => id !== leader.id) as string).member;
    const items = Array.from({ length: 50 }, (_, i) => ({ data: Uint8Array.of(i), key: null }));
    await sim.settle(follower?.fanoutRuntime.emit('t', items, null) as Promise<unknown>);
    await sim.until('every item done', () => (leader.member?.fanout.topics.get('t')?.counts.done === 50 ? true : undefined));
    expect(new Set(runs.map((r) => r.ctx.id)).size).toBe(50);
    expect(runs).toHaveLength(50);
    // Spread over the consumers.
    expect(new Set(runs.map((r) => r.member)).size).toBeGreaterThan(1);
    // Every member settles the same way, once it applied the last outcomes.
    await sim.until('every member settled', () => (FOUNDERS.every((id) => sim.get(id).member?.fanout.items.size === 0) ? true : undefined));
    for (const id of FOUNDERS) expect(sim.get(id).member?.fanout.topics.get('t')?.counts).toMatchObject({ emitted: 50, done: 50, stale: 0 });
  });

  it("leases an emit's items as the leader appends it: the leases are in the leader's log when the emit applies, and run the items", async () => {
    const sim = new MembershipSim(4);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const runs: number[] = [];
    for (const id of FOUNDERS) await sim.settle(memberOf(sim, id).fanoutRuntime.consume('t', (_data, ctx) => void runs.push(ctx.id), SETTINGS));
    const leader = await sim.until('a leader', () => sim.leader());
    await sim.until('every consumer registered on the leader', () => (leader.member?.fanout.topics.get('t')?.consumers.size === 3 ? true : undefined));
    // As the leader applies each emit: the leases after it in its log, and the ids they name.
    const seen: Array<{ ids: number[]; leased: number[] }> = [];
    sim.onFanoutApplied = (id, index, command, result) => {
      if (id !== leader.id || command.type !== 'emit' || !result.ok) return;
      const leased: number[] = [];
      const log = leader.driver?.node.log;
      for (let at = index + 1; log !== undefined && at <= log.lastIndex(); at++) {
        const decoded = decodeEntry(log.entry(at)?.data ?? new Uint8Array(0), FANOUT_VERSION, SUPPORTED);
        if (decoded.kind === 'fanout' && decoded.command.type === 'lease') leased.push(...decoded.command.ids);
      }
      seen.push({ ids: Array.from({ length: result.count ?? 0 }, (_, i) => (result.firstId ?? 0) + i), leased });
    };
    const follower = memberOf(sim, FOUNDERS.find((id) => id !== leader.id) as NodeId);
    const items = (n: number, key: string | null = null): Array<{ data: Uint8Array; key: string | null }> => Array.from({ length: n }, (_, i) => ({ data: Uint8Array.of(i), key }));
    await sim.settle(follower.fanoutRuntime.emit('t', items(10), null));
    await sim.settle(memberOf(sim, leader.id).fanoutRuntime.emit('t', items(10), null));
    await sim.until('every item run', () => (runs.length === 20 ? true : undefined));
    expect(seen).toHaveLength(2);
    for (const emit of seen) expect(emit.leased).toEqual(expect.arrayContaining(emit.ids));
    // A keyed emit is leased once it applied: not early.
    await sim.until('every item done', () => (leader.member?.fanout.items.size === 0 ? true : undefined));
    await sim.settle(follower.fanoutRuntime.emit('t', items(2, 'k'), null));
    await sim.until('the keyed items run', () => (runs.length === 22 ? true : undefined));
    expect(seen[2]?.leased).toEqual([]);
    expect(new Set(runs).size).toBe(22);
    // The leader applied the fan-out entries it appended from the decodings it made as it
    // appended them (the very bytes its log keeps), not decoded again; a follower decodes each once.
    expect(memberOf(sim, leader.id).appendedDecodings.served).toBeGreaterThanOrEqual(3);
    expect(follower.appendedDecodings.served).toBe(0);
  });

  it('gives a member being sent a snapshot no new items, though it answers and its clock is measured; once caught up, it gets its share', async () => {
    // A small compaction interval: the leader's log moves past a member down for a few seconds.
    const small: MemberSettings = { ...MEMBER_SETTINGS, compaction: { everyEntries: 20, retainEntries: 5 } };
    const sim = new MembershipSim(9, small);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    // Each run holds its item until released (or aborted), so that what each member holds shows.
    const held: Array<() => void> = [];
    const started: NodeId[] = [];
    const hold =
      (member: NodeId) =>
      (_data: Uint8Array, ctx: ItemContext): Promise<void> =>
        new Promise<void>((resolve) => {
          started.push(member);
          held.push(resolve);
          ctx.signal.addEventListener('abort', () => resolve());
        });
    const settings: ConsumerSettings = { ...SETTINGS, parallelism: 2 };
    for (const id of FOUNDERS) await sim.settle(memberOf(sim, id).fanoutRuntime.consume('t', hold(id), settings));
    const leader = await sim.until('a leader', () => sim.leader());
    const topic = (): TopicRecord | undefined => leader.member?.fanout.topics.get('t');
    await sim.until('every consumer registered on the leader', () => (topic()?.consumers.size === 3 ? true : undefined));
    const victim = FOUNDERS.find((id) => id !== leader.id) as NodeId;

    // The victim is down while the leader compacts past what it holds, then comes back.
    const match = leader.driver?.node.progressOf(victim)?.match ?? 0;
    sim.get(victim).crash();
    await sim.until('the leader compacted past the victim', () => ((leader.driver?.node.log.firstIndex() ?? 0) > match + 1 ? true : undefined));
    const back = await sim.restart(victim);

    // Its disk is slow: while the snapshot waits for it, it answers heartbeats and its clock is measured.
    const slowly = async (what: string, done: () => boolean, each: () => void = () => undefined): Promise<void> => {
      const until = sim.scheduler.nowMs + LIMIT_MS;
      while (!done()) {
        each();
        if (!sim.scheduler.step(until)) throw new Error(`not within ${LIMIT_MS} simulated ms: ${what}`);
        await drainMicrotasks();
        for (const m of sim.members.values()) if (m.up) m.scheduleSync(() => (m === back ? 3_000 : 1), (pending) => pending);
      }
    };
    const beingSent = (): boolean => leader.driver?.node.progressOf(victim)?.state === 'snapshot';
    await slowly('the victim live and measured while a snapshot is on its way', () => beingSent() && leader.driver?.clockOffsets().has(victim) === true && leader.driver.contact.lastHeard(victim) !== undefined);

    // More items than the two others may hold (their parallelism and its prefetch each): they
    // take what they may, and the rest wait.
    const holds = settings.parallelism * (1 + PREFETCH_PER_PARALLELISM);
    const count = 2 * holds + 4;
    let emitted = false;
    void leader.member?.fanoutRuntime.emit('t', Array.from({ length: count }, (_, i) => ({ data: Uint8Array.of(i), key: null })), null).then(() => (emitted = true));
    let leasedToVictim = 0;
    let waitedWhileSent = 0;
    const look = (): void => {
      if (!beingSent()) return;
      leasedToVictim = Math.max(leasedToVictim, topic()?.inFlight.get(victim) ?? 0);
      if (emitted && (topic()?.ready.size ?? 0) > 0) waitedWhileSent++;
    };
    const startedAt = sim.scheduler.nowMs;
    await slowly('a while after the emit, the snapshot still on its way', () => !beingSent() || (emitted && sim.scheduler.nowMs - startedAt > 500), look);
    expect(beingSent()).toBe(true);
    expect(leasedToVictim).toBe(0);
    expect(waitedWhileSent).toBeGreaterThan(0);
    expect(topic()?.inFlight.get(victim)).toBeUndefined();
    expect([...(topic()?.inFlight.values() ?? [])]).toEqual([holds, holds]);

    // Once it has installed the snapshot and registered its handler of this life (as Cluster
    // does, again until it applies), it runs those that waited, its parallelism at once.
    await sim.until('the victim installed the snapshot', () => ((back.driver?.snapshotsInstalled ?? 0) > 0 ? true : undefined));
    for (;;) {
      const registered = await sim.settle(memberOf(sim, victim).fanoutRuntime.consume('t', hold(victim), settings)).then(
        () => true,
        () => false,
      );
      if (registered) break;
      await sim.run(100);
    }
    await sim.until('the victim runs its share', () => (started.filter((m) => m === victim).length === 2 ? true : undefined));
    await sim.until('every item done', () => {
      for (const release of held.splice(0)) release();
      return topic()?.counts.done === count ? true : undefined;
    });
  });

  it('a member whose disk fails starts no item after, though a run ends and it holds more; aborts the one it still runs once its lease runs out; the others run them all', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    // Each run holds its item until released, or until it is aborted.
    const held: Array<{ member: NodeId; release: () => void }> = [];
    const started: Array<{ member: NodeId; id: number; at: number }> = [];
    const aborted: Array<{ member: NodeId; at: number }> = [];
    const hold =
      (member: NodeId) =>
      (_data: Uint8Array, ctx: ItemContext): Promise<void> =>
        new Promise<void>((resolve) => {
          started.push({ member, id: ctx.id, at: sim.scheduler.nowMs });
          held.push({ member, release: resolve });
          ctx.signal.addEventListener('abort', () => {
            aborted.push({ member, at: sim.scheduler.nowMs });
            resolve();
          });
        });
    const settings: ConsumerSettings = { ...SETTINGS, parallelism: 2 };
    for (const id of FOUNDERS) await sim.settle(memberOf(sim, id).fanoutRuntime.consume('t', hold(id), settings));
    const leader = await sim.until('a leader', () => sim.leader());
    const topic = (): TopicRecord | undefined => leader.member?.fanout.topics.get('t');
    await sim.until('every consumer registered on the leader', () => (topic()?.consumers.size === 3 ? true : undefined));
    const victim = sim.get(FOUNDERS.find((id) => id !== leader.id) as NodeId);
    // More than every member holds (its parallelism running, its prefetch waiting): the victim
    // holds items it has not started when its disk fails.
    const count = 3 * settings.parallelism * (1 + PREFETCH_PER_PARALLELISM) + 6;
    void leader.member?.fanoutRuntime.emit('t', Array.from({ length: count }, (_, i) => ({ data: Uint8Array.of(i), key: null })), null);
    await sim.until('the victim runs its parallelism and holds more', () => (started.filter((r) => r.member === victim.id).length === settings.parallelism && (topic()?.inFlight.get(victim.id) ?? 0) > settings.parallelism ? true : undefined));
    // What it proposes once its failure is known: the outcome of each run that ends after, tried
    // once (it fails at once), and not again every RETRY_OUTCOMES_MS.
    const proposedAfter: number[] = [];
    const driver = memberOf(sim, victim.id).driver;
    const propose = driver.propose.bind(driver);
    driver.propose = (...args) => {
      // Fan-out's alone: the outcomes of the sim's mode 'all' job are proposed alike, as many as
      // its runs that end after the failure, which depends on where its slots fall.
      if (driver.fatalError !== null && mayBeFanoutCommand(args[0])) proposedAfter.push(sim.scheduler.nowMs);
      return propose(...args);
    };
    victim.disk.write = (): Promise<void> => Promise.reject(new Error('disk on fire'));
    await sim.until('the victim fails', () => sim.fatal.get(victim.id));
    const failedAt = sim.scheduler.nowMs;
    proposedAfter.length = 0;
    // One of its runs ends: a free place, and items waiting in its prefetch for one.
    const first = held.findIndex((r) => r.member === victim.id);
    held.splice(first, 1)[0]?.release();
    // The others finish what they run, and so take all the rest, the victim's included; the
    // victim's runs are never released.
    await sim.until('every item done', () => {
      for (const h of held.filter((r) => r.member !== victim.id)) h.release();
      held.splice(0, held.length, ...held.filter((r) => r.member === victim.id));
      return topic()?.counts.done === count ? true : undefined;
    });
    expect(started.filter((r) => r.member === victim.id && r.at > failedAt)).toEqual([]);
    // The run it still held was aborted once its lease ran out (no leader heard: its driver takes no message).
    const victimAborts = aborted.filter((a) => a.member === victim.id);
    expect(victimAborts).toHaveLength(settings.parallelism - 1);
    for (const a of victimAborts) expect(a.at).toBeGreaterThan(failedAt);
    // The outcome of each run that ended after the failure was proposed once, and not again.
    expect(proposedAfter).toHaveLength(1 + victimAborts.length);
    // What it ran started again elsewhere.
    const ranOnVictim = new Set(started.filter((r) => r.member === victim.id).map((r) => r.id));
    for (const id of ranOnVictim) expect(started.some((r) => r.id === id && r.member !== victim.id)).toBe(true);
  });

  it('refuses an emit and a registration with CRONRAFT_VERSION_NOT_ACTIVE while a member cannot read cluster version 3, and takes them once it can', async () => {
    const sim = new MembershipSim(10);
    const withoutFanout: VersionSupport = { ...SUPPORTED, stateMachine: { min: 1, max: FANOUT_VERSION - 1 } };
    await sim.start('m1');
    await sim.start('m2');
    await sim.start('m3', withoutFanout);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION - 1) ? true : undefined));
    await sim.run(5_000);
    const leader = await sim.until('a leader', () => sim.leader());
    expect(leader.member?.versions.active).toBe(FANOUT_VERSION - 1);
    const item = [{ data: Uint8Array.of(1), key: null }];
    await expect(sim.settle(memberOf(sim, leader.id).fanoutRuntime.emit('t', item, null))).rejects.toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: FANOUT_VERSION });
    await expect(sim.settle(memberOf(sim, leader.id).fanoutRuntime.consume('t', () => undefined, SETTINGS))).rejects.toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: FANOUT_VERSION });
    expect(leader.member?.fanout.topics.size).toBe(0);
    // Once m3 runs this release, the version rises and both are taken.
    sim.get('m3').crash();
    sim.get('m3').versions = SUPPORTED;
    await sim.restart('m3');
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const now = await sim.until('a leader', () => sim.leader());
    await sim.settle(memberOf(sim, now.id).fanoutRuntime.consume('t', () => undefined, SETTINGS));
    await sim.settle(memberOf(sim, now.id).fanoutRuntime.emit('t', item, null));
    await sim.until('the item done', () => (now.member?.fanout.topics.get('t')?.counts.done === 1 ? true : undefined));
  });

  it('an emit made before cluster version 3 waits for it and is then proposed; one whose run ended meanwhile proposes nothing', async () => {
    const sim = new MembershipSim(12);
    for (const id of FOUNDERS) await sim.start(id);
    const member = memberOf(sim, FOUNDERS[0] as NodeId);
    // A new cluster: version 1 until every member announced, then a step at a time.
    expect(member.versions.active).toBeLessThan(FANOUT_VERSION);
    const outcome = (p: Promise<unknown>): (() => unknown) => {
      let settled: unknown = 'pending';
      p.then(
        () => (settled = 'resolved'),
        (error: unknown) => (settled = error),
      );
      return () => settled;
    };
    let ended: Error | null = null;
    const kept = outcome(member.fanoutRuntime.emit('t', [{ data: Uint8Array.of(1), key: null }], null));
    const abandoned = outcome(member.fanoutRuntime.emit('t', [{ data: Uint8Array.of(2), key: null }], null, () => ended));
    await sim.run(50);
    expect([kept(), abandoned()]).toEqual(['pending', 'pending']);
    // The slot's run that emits the second ends before the version comes.
    ended = new Error('the run ended');
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    await sim.until('both emits settled', () => (kept() !== 'pending' && abandoned() !== 'pending' ? true : undefined));
    expect(kept()).toBe('resolved');
    expect(abandoned()).toBe(ended);
    await sim.run(1000);
    expect(member.fanout.topics.get('t')?.counts.emitted).toBe(1);
  });

  it("settles an emitter's batch once the snapshot it installed shows every item done (its entries' outcomes never applied there)", async () => {
    const small: MemberSettings = { ...MEMBER_SETTINGS, compaction: { everyEntries: 20, retainEntries: 5 } };
    const sim = new MembershipSim(11, small);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    const [emitterId, otherId] = FOUNDERS.filter((id) => id !== leader.id) as [NodeId, NodeId];

    // The leader and the other follower consume, holding each item until released.
    const held: Array<() => void> = [];
    const hold = (): Promise<void> => new Promise<void>((resolve) => held.push(resolve));
    for (const id of [leader.id, otherId]) await sim.settle(memberOf(sim, id).fanoutRuntime.consume('t', hold, SETTINGS));
    await sim.until('both consumers registered', () => (leader.member?.fanout.topics.get('t')?.consumers.size === 2 ? true : undefined));

    // The emitter (a follower, alive throughout) emits; its emit resolves once applied there.
    const emitter = memberOf(sim, emitterId);
    const batch = await sim.settle(emitter.fanoutRuntime.emit('t', Array.from({ length: 5 }, (_, i) => ({ data: Uint8Array.of(1, i), key: null })), null));
    expect(batch.count).toBe(5);

    // It is cut off; the items run and settle; the leader compacts past it.
    const match = leader.driver?.node.progressOf(emitterId)?.match ?? 0;
    for (const id of FOUNDERS) {
      if (id === emitterId) continue;
      sim.network.block(id, emitterId);
      sim.network.block(emitterId, id);
    }
    await sim.until('every item done on the leader', () => {
      for (const release of held.splice(0)) release();
      return leader.member?.fanout.topics.get('t')?.counts.done === 5 ? true : undefined;
    });
    await sim.until('the leader compacted past the emitter', () => ((leader.driver?.node.log.firstIndex() ?? 0) > match + 1 ? true : undefined));

    // Healed: it installs the leader's snapshot, which shows the topic settled.
    sim.network.healAll();
    await sim.until('the emitter installed a snapshot', () => ((sim.get(emitterId).driver?.snapshotsInstalled ?? 0) > 0 ? true : undefined));
    await sim.until('the emitter shows its items done', () => (emitter.fanout.topics.get('t')?.counts.done === 5 && emitter.fanout.items.size === 0 ? true : undefined));
    expect(emitter.fanout.batches.has(batch.id)).toBe(false);

    // The batch is settled in the state this member holds: settled() says so (it waited until
    // its timeout before, and the batch stayed tracked for good).
    const outcome = await sim.settle(batch.settled({ timeoutMs: 20_000 })).then(
      (summary) => summary,
      (error: { code?: string; message?: string }) => ({ error: error.code, message: error.message }),
    );
    expect({ outcome, openBatchesTracked: emitter.fanoutRuntime.batches.open }).toEqual({ outcome: { topic: 't', count: 5, done: 5, dead: 0 }, openBatchesTracked: 0 });
  });
});

describe('odd values thrown by a consumer on the production member', () => {
  it.each([
    ['an object of no prototype', (): never => {
      throw Object.create(null);
    }],
    ['a rejection with an object whose toString throws', async (): Promise<never> => {
      throw { toString: (): never => { throw new Error('no'); } };
    }],
  ])('%s is a failed attempt: after its retries the item goes to the dead letters', async (_what, handler) => {
    const sim = new MembershipSim(5);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const settings: ConsumerSettings = { ...SETTINGS, retries: 1, backoffMs: 10 };
    for (const id of FOUNDERS) await sim.settle(memberOf(sim, id).fanoutRuntime.consume('t', handler, settings));
    const leader = await sim.until('a leader', () => sim.leader());
    await sim.until('every consumer registered on the leader', () => (leader.member?.fanout.topics.get('t')?.consumers.size === 3 ? true : undefined));
    await sim.settle(memberOf(sim, leader.id).fanoutRuntime.emit('t', [{ data: Uint8Array.of(1), key: null }], null));
    // Before: String() of it threw in the consumer, no outcome was recorded, and the item was
    // taken back at its lease's end, again and again, never failing.
    await sim.until('the item dead', () => (leader.member?.fanout.topics.get('t')?.counts.dead === 1 ? true : undefined));
    expect(leader.member?.fanout.topics.get('t')?.counts).toMatchObject({ failed: 2, dead: 1 });
  });
});
