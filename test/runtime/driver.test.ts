import { describe, expect, it } from 'vitest';
import { InvariantError } from '../../src/raft/invariant.js';
import { RaftNode } from '../../src/raft/node.js';
import { EntryType, type Entry, type Message } from '../../src/raft/types.js';
import type { DriverOptions } from '../../src/runtime/driver-options.js';
import { RaftDriver } from '../../src/runtime/driver.js';
import type { StateMachine } from '../../src/runtime/state-machine.js';
import { raftSettingsFor } from '../../src/runtime/member-settings.js';
import { SNAPSHOT_ASSEMBLY_IDLE_MS, splitSnapshot } from '../../src/runtime/snapshot-chunks.js';
import type { LogStorage } from '../../src/storage/log-storage.js';
import { MemoryDisk } from '../../src/storage/memory-disk.js';
import { MemoryLogStorage } from '../../src/storage/memory-log-storage.js';
import type { Timers } from '../../src/time/clock.js';
import { SeededRandom } from '../../src/time/random.js';
import { RecordingTransport } from '../fixtures/recording-transport.js';
import { NO_SNAPSHOT_STATE } from '../fixtures/state-machine.js';
import { VersionTooOldError } from '../../src/errors.js';
import { encodeCommand } from '../../src/runtime/commands.js';
import { encodeClusterPart, encodeMemberSnapshot } from '../../src/runtime/member-snapshot.js';
import { memberStateMachine } from '../../src/runtime/member-state-machine.js';
import type { SchedulerRuntime } from '../../src/runtime/scheduler/scheduler-runtime.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { ClusterVersionState } from '../../src/version/cluster-version.js';
import { SUPPORTED } from '../../src/version/versions.js';

/** Timers that fire when the test advances their time (by one timer at a time, in order). */
function manualTimers(): { readonly timers: Timers; readonly advance: (ms: number) => void } {
  let now = 0;
  let due: Array<{ at: number; run: () => void }> = [];
  const timers: Timers = {
    now: () => now,
    setTimeout: (run, ms) => {
      const t = { at: now + ms, run };
      due.push(t);
      return t;
    },
    clearTimeout: (t) => void (due = due.filter((d) => d !== t)),
  };
  const advance = (ms: number): void => {
    now += ms;
    const ready = due.filter((d) => d.at <= now);
    due = due.filter((d) => d.at > now);
    for (const d of ready) d.run();
  };
  return { timers, advance };
}

/** Timers that never fire by themselves: the test ticks the node when it wants. */
const frozenTimers: Timers = { now: () => 0, setTimeout: () => 0, clearTimeout: () => undefined };

async function makeDriver(
  storage: LogStorage,
  onFatal?: (e: unknown) => void,
  now: () => number = () => 0,
  extra: Partial<DriverOptions> = {},
  limits: { readonly maxApplyBatch?: number; readonly maxEntryBytes?: number } = {},
): Promise<{ driver: RaftDriver; transport: RecordingTransport }> {
  const stored = await storage.open();
  const node = new RaftNode({ id: 'a', voters: ['a', 'b', 'c'], electionTicks: 10, heartbeatTicks: 1, ...limits }, { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries }, new SeededRandom(1));
  const transport = new RecordingTransport();
  const driver = new RaftDriver({
    node,
    storage,
    transport,
    stateMachine: { apply: (e) => e.index, ...NO_SNAPSHOT_STATE },
    clock: { now },
    // Silences are measured on the timers' monotonic time base: it moves with the test's time.
    timers: { ...frozenTimers, now },
    tickMs: 10,
    requestTimeoutMs: 1000,
    maxPendingProposals: 100,
    maxProposalBatch: 10,
    maxProposalBatchBytes: 1024,
    maxPendingReads: 10,
    leaderSilenceMs: 100,
    bootId: 'test',
    ...(onFatal === undefined ? {} : { onFatal }),
    ...extra,
  });
  driver.start();
  return { driver, transport };
}

describe('proposals on a follower', () => {
  it('learn at once that their outcome is unknown when the leader they were forwarded to is replaced', async () => {
    const { driver, transport } = await makeDriver(new MemoryLogStorage());
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
    await settle();
    const forwarded = driver.propose(new Uint8Array([1]));
    await settle();
    // c leads a newer term before b said where the proposal went.
    transport.deliver({ type: 'heartbeat', from: 'c', to: 'a', term: 2, commit: 0, readCtx: 0 });
    await expect(forwarded).rejects.toMatchObject({ code: 'CRONRAFT_OUTCOME_UNKNOWN' });
  });

  it("made for a term of this member's leading are refused, not forwarded, once it no longer leads in that term", async () => {
    const { driver, transport } = await makeDriver(new MemoryLogStorage());
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
    await settle();
    transport.sent.length = 0;
    const planned = driver.propose(new Uint8Array([1]), undefined, 1);
    await expect(planned).rejects.toMatchObject({ code: 'CRONRAFT_NOT_LEADER' });
    expect(transport.sent.filter((m) => m.type === 'propose')).toEqual([]);
    // Any other proposal goes to the leader.
    void driver.propose(new Uint8Array([2])).catch(() => undefined);
    await settle();
    expect(transport.sent.filter((m) => m.type === 'propose')).toHaveLength(1);
  });

  it('made for a term of this member\'s leading are refused while it leads again in a later term', async () => {
    const { driver, transport } = await makeDriver(new MemoryLogStorage());
    /** Wins the next election: its prevotes and votes answered by b. */
    const win = async (term: number): Promise<void> => {
      driver.node.campaign();
      transport.deliver({ type: 'prevote-resp', from: 'b', to: 'a', term, reject: false });
      await settle();
      transport.deliver({ type: 'vote-resp', from: 'b', to: 'a', term, reject: false });
      await settle();
      expect(driver.node.role).toBe('leader');
      expect(driver.node.term).toBe(term);
    };
    await win(1);
    // b leads term 2, then a wins term 3: a plan of term 1 is stale, though a leads again.
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 2, commit: 0, readCtx: 0 });
    await settle();
    await win(3);
    const last = driver.node.log.lastIndex();
    let outcome: unknown = 'pending';
    driver.propose(new Uint8Array([1]), undefined, 1).then(
      () => (outcome = 'appended'),
      (error: unknown) => (outcome = error),
    );
    await settle();
    expect(outcome).toMatchObject({ code: 'CRONRAFT_NOT_LEADER' });
    expect(driver.node.log.lastIndex()).toBe(last);
    // A plan of the term it leads in is appended.
    void driver.propose(new Uint8Array([2]), undefined, 3).catch(() => undefined);
    await settle();
    expect(driver.node.log.lastIndex()).toBe(last + 1);
  });

  it('past the largest entry (maxEntryBytes) are refused with CRONRAFT_INVALID_ARGUMENT, neither forwarded nor appended', async () => {
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, undefined, {}, { maxEntryBytes: 8 });
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
    await settle();
    transport.sent.length = 0;
    await expect(driver.propose(new Uint8Array(9))).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'data' });
    expect(transport.sent.filter((m) => m.type === 'propose')).toEqual([]);
    void driver.propose(new Uint8Array(8)).catch(() => undefined);
    await settle();
    expect(transport.sent.filter((m) => m.type === 'propose')).toHaveLength(1);
  });

  it('fail at once when the known leader has been silent for too long', async () => {
    const { timers, advance } = manualTimers();
    // Silent for 50 ms: well within an election timeout (10 to 20 ticks), so the leader is still known.
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, timers.now, { timers, leaderSilenceMs: 50 });
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
    await settle();
    // Heard from b just now: the proposal is forwarded to it.
    const forwarded = driver.propose(new Uint8Array([1]));
    await settle();
    expect(transport.sent.some((m) => m.type === 'propose' && m.to === 'b')).toBe(true);
    for (let i = 0; i < 6; i++) advance(10);
    await expect(driver.propose(new Uint8Array([2]))).rejects.toMatchObject({ code: 'CRONRAFT_NOT_LEADER', leader: 'b' });
    driver.stop();
    await expect(forwarded).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });

  it("forward, rather than fail, after this member's own loop stood still: the leader's messages may be waiting for it", async () => {
    const { timers, advance } = manualTimers();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, timers.now, { timers, leaderSilenceMs: 50 });
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
    await settle();
    // The app's own synchronous work holds the loop for 300 ms: the ticks due meanwhile fire as one.
    advance(300);
    const sent = transport.sent.length;
    const afterStall = driver.propose(new Uint8Array([1]));
    await settle();
    expect(transport.sent.slice(sent).some((m) => m.type === 'propose' && m.to === 'b')).toBe(true);
    // Then silence while the loop runs counts: six ticks of 10 ms pass 50 ms.
    for (let i = 0; i < 6; i++) advance(10);
    await expect(driver.propose(new Uint8Array([2]))).rejects.toMatchObject({ code: 'CRONRAFT_NOT_LEADER', leader: 'b' });
    driver.stop();
    await expect(afterStall).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });
});

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('the driver orders effects', () => {
  it('sends a vote only once the vote is durable', async () => {
    const disk = new MemoryDisk({ manualSync: true });
    const { transport } = await makeDriver(new MemoryLogStorage(disk));
    transport.deliver({ type: 'vote', from: 'b', to: 'a', term: 1, lastIndex: 0, lastTerm: 0, transfer: false });
    await settle();
    expect(transport.sent.filter((m) => m.type === 'vote-resp')).toEqual([]);
    expect(disk.unsyncedWrites).toBe(1);
    disk.sync();
    await settle();
    expect(transport.sent.filter((m) => m.type === 'vote-resp')).toMatchObject([{ to: 'b', reject: false, term: 1 }]);
  });

  it('acknowledges appended entries only once they are durable', async () => {
    const disk = new MemoryDisk({ manualSync: true });
    const { transport } = await makeDriver(new MemoryLogStorage(disk));
    const entry = { index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'p' };
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    await settle();
    expect(transport.sent.filter((m) => m.type === 'append-resp')).toEqual([]);
    disk.sync();
    await settle();
    expect(transport.sent.filter((m) => m.type === 'append-resp')).toMatchObject([{ to: 'b', reject: false, index: 1 }]);
  });

  it("sends a leader's appends before its own write of their entries starts, flushes them right after it starts, and counts its copy only once durable", async () => {
    const disk = new MemoryDisk({ manualSync: true });
    const storage = new MemoryLogStorage(disk);
    const { driver, transport } = await makeDriver(storage);
    const appends = (): Message[] => transport.sent.filter((m) => m.type === 'append' && m.entries.some((e) => e.pid !== ''));
    // How many appends of proposals had been sent, and whether everything sent had been handed to
    // the network (not left for the end of the turn), when each write of entries started. The
    // flush comes after the write starts: on loopback it holds the thread for the receiver too.
    const atSave: Array<{ appends: number; flushed: boolean }> = [];
    const save = storage.save.bind(storage);
    storage.save = (batch) => {
      if (batch.entries.some((e) => e.pid !== '')) atSave.push({ appends: appends().length, flushed: transport.flushed === transport.sent.length });
      return save(batch);
    };
    // Leader of term 1: the votes are durable, then b votes for it.
    driver.node.campaign();
    transport.deliver({ type: 'prevote-resp', from: 'b', to: 'a', term: 1, reject: false });
    await settle();
    disk.sync();
    await settle();
    transport.deliver({ type: 'vote-resp', from: 'b', to: 'a', term: 1, reject: false });
    await settle();
    disk.sync();
    await settle();
    expect(driver.node.role).toBe('leader');
    // The followers take the leader's first (empty) entry: they are then sent entries as they come.
    for (const from of ['b', 'c']) transport.deliver({ type: 'append-resp', from, to: 'a', term: 1, index: 1, reject: false, hintIndex: 0, hintTerm: 0 });
    await settle();
    const proposed = driver.propose(new Uint8Array([7]));
    await settle();
    // Both followers' appends were sent before the leader's own write started, and flushed after.
    expect(atSave).toEqual([{ appends: 2, flushed: false }]);
    expect(transport.sent.slice(0, transport.flushed).filter((m) => appends().includes(m))).toHaveLength(2);
    const index = (appends()[0] as Extract<Message, { type: 'append' }>).entries.at(-1)!.index;
    // One follower's copy is not a majority while the leader's own is not durable.
    transport.deliver({ type: 'append-resp', from: 'b', to: 'a', term: 1, index, reject: false, hintIndex: 0, hintTerm: 0 });
    await settle();
    expect(driver.node.log.committed).toBeLessThan(index);
    disk.sync();
    await expect(proposed).resolves.toMatchObject({ index });
  });

  it('stops, reports once, and fails waiting proposals when the disk fails', async () => {
    const failing = new MemoryLogStorage();
    const fatal: unknown[] = [];
    const { driver, transport } = await makeDriver(failing, (e) => fatal.push(e));
    failing.save = (): Promise<void> => Promise.reject(new Error('disk on fire'));
    // Become leader of term 1 in a three-member cluster: the campaign's write fails.
    driver.node.campaign();
    transport.deliver({ type: 'prevote-resp', from: 'b', to: 'a', term: 1, reject: false });
    await settle();
    expect(fatal).toHaveLength(1);
    expect(String(fatal[0])).toContain('disk on fire');
    await expect(driver.propose(new Uint8Array([1]))).rejects.toMatchObject({ code: 'CRONRAFT_FATAL' });
  });

  it('fails waiting read barriers too when the disk fails, rather than leaving them to wait with no loop to time them out', async () => {
    const { timers } = manualTimers();
    const failing = new MemoryLogStorage();
    const fatal: unknown[] = [];
    const { driver, transport } = await makeDriver(failing, (e) => fatal.push(e), timers.now, { timers });
    const entry = { index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'p' };
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 1 });
    await settle();
    // A read asked of the leader, b, which has not answered.
    let outcome: unknown = 'waiting';
    driver.readBarrier().then(
      () => (outcome = 'served'),
      (error: unknown) => (outcome = error),
    );
    await settle();
    failing.save = (): Promise<void> => Promise.reject(new Error('disk on fire'));
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 1, prevTerm: 1, entries: [{ ...entry, index: 2 }], commit: 1 });
    await settle();
    expect(fatal).toHaveLength(1);
    // No timer ran: the read settles because the member stopped, not because it timed out.
    expect(outcome).toMatchObject({ code: 'CRONRAFT_FATAL' });
  });
});

describe("a leader's commit index", () => {
  /** A leader of term 1 on manual timers, both followers caught up with its first entry. */
  async function leaderOnTimers(): Promise<{ driver: RaftDriver; transport: RecordingTransport; advance: (ms: number) => void }> {
    const { timers, advance } = manualTimers();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(new MemoryDisk()), undefined, () => 0, { timers });
    driver.node.campaign();
    transport.deliver({ type: 'prevote-resp', from: 'b', to: 'a', term: 1, reject: false });
    await settle();
    transport.deliver({ type: 'vote-resp', from: 'b', to: 'a', term: 1, reject: false });
    await settle();
    for (const from of ['b', 'c']) transport.deliver({ type: 'append-resp', from, to: 'a', term: 1, index: 1, reject: false, hintIndex: 0, hintTerm: 0 });
    await settle();
    expect(driver.node.role).toBe('leader');
    return { driver, transport, advance };
  }

  const acknowledge = async (transport: RecordingTransport, index: number, from = 'b'): Promise<void> => {
    transport.deliver({ type: 'append-resp', from, to: 'a', term: 1, index, reject: false, hintIndex: 0, hintTerm: 0 });
    await settle();
  };

  it('is told to each follower that holds its entries a turn after it moved (or after that follower caught up) when no append carried it, not at the next tick', async () => {
    const { driver, transport, advance } = await leaderOnTimers();
    const { index } = await (async () => {
      const proposed = driver.propose(new Uint8Array([7]));
      await settle();
      const sent = transport.sent.filter((m): m is Extract<Message, { type: 'append' }> => m.type === 'append' && m.entries.length > 0);
      await acknowledge(transport, sent.at(-1)!.entries.at(-1)!.index);
      return proposed;
    })();
    const toldOf = (to: string): boolean => transport.sent.some((m) => m.type === 'append' && m.to === to && m.commit >= index);
    expect(driver.node.log.committed).toBe(index);
    expect([toldOf('b'), toldOf('c')]).toEqual([false, false]);
    // A timer of no delay, well before the tick (10 ms); c has not said it holds the entry yet.
    advance(0);
    await settle();
    expect([toldOf('b'), toldOf('c')]).toEqual([true, false]);
    // c holds it now: the commit does not move, and c is told of it all the same.
    await acknowledge(transport, index, 'c');
    expect(toldOf('c')).toBe(false);
    advance(0);
    await settle();
    expect(toldOf('c')).toBe(true);
  });

  it('is not sent again on its own when the next proposal, made as the last one applied, carried it', async () => {
    const { driver, transport, advance } = await leaderOnTimers();
    let next: Promise<unknown> | undefined;
    const first = driver.propose(new Uint8Array([7])).then((r) => {
      next = driver.propose(new Uint8Array([8]));
      return r;
    });
    await settle();
    const appends = (): Extract<Message, { type: 'append' }>[] => transport.sent.filter((m): m is Extract<Message, { type: 'append' }> => m.type === 'append');
    await acknowledge(transport, appends().at(-1)!.entries.at(-1)!.index);
    const { index } = await first;
    expect(next).toBeDefined();
    await settle();
    const before = appends().length;
    expect(appends().slice(-2).map((m) => [m.to, m.commit, m.entries.length])).toEqual([
      ['b', index, 1],
      ['c', index, 1],
    ]);
    advance(0);
    await settle();
    expect(appends()).toHaveLength(before);
  });
});

describe('read barriers', () => {
  it("are asked of the leader again when no answer came within leaderSilenceMs, rather than waiting out the request timeout", async () => {
    const { timers, advance } = manualTimers();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, timers.now, { timers });
    const entry = { index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'p' };
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 1 });
    await settle();
    let read: number | null = null;
    void driver.readBarrier().then((index) => (read = index));
    await settle();
    const asked = (): Array<Extract<Message, { type: 'read-index' }>> => transport.sent.flatMap((m) => (m.type === 'read-index' && m.to === 'b' ? [m] : []));
    expect(asked()).toHaveLength(1);
    // The request is lost. Within an election timeout (leaderSilenceMs 100), nothing more.
    for (let ms = 0; ms < 90; ms += 10) advance(10);
    await settle();
    expect(asked()).toHaveLength(1);
    // The leader is alive (its heartbeat keeps this member a follower), and the read is asked again.
    transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 1, readCtx: 0 });
    for (let ms = 0; ms < 20; ms += 10) advance(10);
    await settle();
    expect(asked()).toHaveLength(2);
    expect(asked()[1]).toMatchObject({ ctx: asked()[0]!.ctx });
    transport.deliver({ type: 'read-index-resp', from: 'b', to: 'a', term: 1, ctx: asked()[1]!.ctx, index: 1, reject: false });
    await settle();
    expect(read).toBe(1);
  });
});

describe('messages the protocol cannot take', () => {
  const entry = (index: number, term = 1): { index: number; term: number; type: EntryType; data: Uint8Array; pid: string } => ({ index, term, type: EntryType.Normal, data: new Uint8Array([index]), pid: `p${index}` });

  it('are counted when they only break the shape the codec promises, and the member carries on', async () => {
    const fatal: unknown[] = [];
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), (e) => fatal.push(e));
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: null as unknown as [], commit: 0 });
    await settle();
    expect(driver.invalidMessages).toBe(1);
    expect(fatal).toEqual([]);
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry(1)], commit: 1 });
    await settle();
    expect(driver.node.log.committed).toBe(1);
  });

  it('stop the member with CRONRAFT_FATAL when stepping one meets a broken invariant of its state, whatever the message', async () => {
    const fatal: unknown[] = [];
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), (e) => fatal.push(e));
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry(1), entry(2), entry(3)], commit: 3 });
    await settle();
    // A bug drops entries 1 and 2 behind the node's back: its log no longer holds what its
    // latest snapshot (none) does not cover. No message can do this; it is the state that broke.
    driver.node.log.compact(2);
    // It leads term 2, with b's votes.
    driver.node.campaign();
    transport.deliver({ type: 'prevote-resp', from: 'b', to: 'a', term: 2, reject: false });
    await settle();
    transport.deliver({ type: 'vote-resp', from: 'b', to: 'a', term: 2, reject: false });
    await settle();
    expect(driver.node.role).toBe('leader');
    // c answers that it holds none of it: what c lacks is older than the log, and the snapshot
    // that should stand for it is missing.
    const probe = transport.sent.findLast((m) => m.type === 'append' && m.to === 'c');
    transport.deliver({ type: 'append-resp', from: 'c', to: 'a', term: 2, index: probe?.type === 'append' ? probe.prevIndex : 0, reject: true, hintIndex: 0, hintTerm: 0 });
    await settle();
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toBeInstanceOf(InvariantError);
    expect(driver.invalidMessages).toBe(0);
    await expect(driver.propose(new Uint8Array([1]))).rejects.toMatchObject({ code: 'CRONRAFT_FATAL' });
  });
});

/** A state machine that records what it is asked, to check the order of restores and applies. */
function recordingStateMachine(accepts = true): StateMachine & { readonly log: string[] } {
  const log: string[] = [];
  return {
    log,
    apply: (e) => log.push(`apply ${e.index}`),
    snapshot: () => {
      log.push('snapshot');
      return new Uint8Array([42]);
    },
    restore: (data) => log.push(`restore ${[...data].join(',')}`),
    acceptsSnapshot: () => accepts,
  };
}

describe('snapshots in the driver', () => {
  const entry = (index: number): { index: number; term: number; type: EntryType; data: Uint8Array; pid: string } => ({ index, term: 1, type: EntryType.Normal, data: new Uint8Array([index]), pid: `p${index}` });

  it("installs a leader's snapshot: answers once it is durable, restores the state before the entries after it", async () => {
    const disk = new MemoryDisk({ manualSync: true });
    const sm = recordingStateMachine();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(disk), undefined, undefined, { stateMachine: sm });
    transport.deliver({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 5, term: 1, data: new Uint8Array([9]) } });
    await settle();
    expect(transport.sent.filter((m) => m.type === 'append-resp')).toEqual([]);
    disk.sync();
    await settle();
    expect(transport.sent.filter((m) => m.type === 'append-resp')).toMatchObject([{ to: 'b', reject: false, index: 5 }]);
    expect(disk.read().snapshot).toMatchObject({ index: 5, term: 1, data: new Uint8Array([9]) });
    expect(disk.read().hardState.commit).toBe(5);
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 5, prevTerm: 1, entries: [entry(6)], commit: 6 });
    await settle();
    expect(sm.log).toEqual(['restore 9', 'apply 6']);
    expect(driver.snapshotsInstalled).toBe(1);
  });

  it('joins a snapshot sent in chunks, and drops one whose next chunk does not come in time', async () => {
    // Timers the test fires: the driver's tick is what expires a snapshot left unfinished.
    const { timers, advance } = manualTimers();
    const sm = recordingStateMachine();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, timers.now, { stateMachine: sm, timers });
    const chunks = (index: number): ReturnType<typeof splitSnapshot> => splitSnapshot({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index, term: 1, data: Uint8Array.from({ length: 30 }, (_, i) => i) } }, 10);
    const first = chunks(5);
    transport.deliver(first[0]!);
    transport.deliver(first[1]!);
    advance(SNAPSHOT_ASSEMBLY_IDLE_MS);
    await settle();
    // The last chunk alone no longer completes it.
    transport.deliver(first[2]!);
    await settle();
    expect(driver.snapshotsInstalled).toBe(0);
    // A snapshot whose chunks keep coming is joined and installed.
    const second = chunks(6);
    for (const c of second) {
      advance(SNAPSHOT_ASSEMBLY_IDLE_MS - 1);
      transport.deliver(c);
    }
    await settle();
    expect(driver.snapshotsInstalled).toBe(1);
    expect(sm.log[0]).toBe(`restore ${Array.from({ length: 30 }, (_, i) => i).join(',')}`);
  });

  it('drops and counts a snapshot the state machine cannot read, changing nothing', async () => {
    const disk = new MemoryDisk();
    const sm = recordingStateMachine(false);
    const { driver, transport } = await makeDriver(new MemoryLogStorage(disk), undefined, undefined, { stateMachine: sm });
    transport.deliver({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 5, term: 1, data: new Uint8Array([0xff]) } });
    await settle();
    expect(driver.invalidSnapshots).toBe(1);
    expect(sm.log).toEqual([]);
    expect(transport.sent).toEqual([]);
    expect(driver.node.log.lastIndex()).toBe(0);
    expect(disk.read().snapshot.index).toBe(0);
  });

  it("a compaction overtaken by a leader's snapshot, queued while its write was in flight, gives way to it", async () => {
    const disk = new MemoryDisk({ manualSync: true });
    const fatal: unknown[] = [];
    const { driver, transport } = await makeDriver(new MemoryLogStorage(disk), (e) => fatal.push(e), undefined, { stateMachine: recordingStateMachine(), compaction: { everyEntries: 4, retainEntries: 0 } });
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [1, 2, 3, 4, 5].map(entry), commit: 5 });
    await settle();
    expect(driver.snapshotsTaken).toBe(1);
    transport.deliver({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 10, term: 1, data: new Uint8Array([7]) } });
    await settle();
    for (let i = 0; i < 5; i++) {
      disk.sync();
      await settle();
    }
    expect(fatal).toEqual([]);
    expect(disk.read().snapshot).toMatchObject({ index: 10, data: new Uint8Array([7]) });
    expect(transport.sent.filter((m) => m.type === 'append-resp').at(-1)).toMatchObject({ index: 10, reject: false });
  });

  it('compacts as it applies a long run of entries committed at once, one interval at a time', async () => {
    const sm = recordingStateMachine();
    const compaction = { everyEntries: 4, retainEntries: 0 };
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), undefined, undefined, { stateMachine: sm, compaction }, raftSettingsFor(compaction));
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(entry), commit: 10 });
    await settle();
    expect(sm.log).toEqual(['apply 1', 'apply 2', 'apply 3', 'apply 4', 'snapshot', 'apply 5', 'apply 6', 'apply 7', 'apply 8', 'snapshot', 'apply 9', 'apply 10']);
    expect(driver.snapshotsTaken).toBe(2);
  });

  describe('a snapshot taken in steps', () => {
    /** Timers whose zero-delay callbacks (the snapshot's steps) the test runs by hand. */
    /** Timers whose zero-delay timeouts run when the test says (runSteps), on a clock the test moves (`clock.ms`). */
    function steppedTimers(): { timers: Timers; runSteps: () => number; pending: () => number; clock: { ms: number } } {
      let due: Array<{ run: () => void; cancelled: boolean }> = [];
      const clock = { ms: 0 };
      const timers: Timers = {
        now: () => clock.ms,
        setTimeout: (run, delayMs) => {
          if (delayMs !== 0) return 0;
          const handle = { run, cancelled: false };
          due.push(handle);
          return handle;
        },
        clearTimeout: (handle) => {
          if (typeof handle === 'object' && handle !== null) (handle as { cancelled: boolean }).cancelled = true;
        },
      };
      const pending = (): number => due.filter((d) => !d.cancelled).length;
      const runSteps = (): number => {
        let ran = 0;
        while (pending() > 0) {
          const now = due.filter((d) => !d.cancelled);
          due = [];
          for (const d of now) {
            d.run();
            ran++;
          }
        }
        return ran;
      };
      return { timers, runSteps, pending, clock };
    }

    /** A state machine whose snapshot takes `stepsNeeded` steps and holds the applied index it began at. */
    function steppedStateMachine(stepsNeeded: number): StateMachine & { readonly log: string[] } {
      const sm = recordingStateMachine();
      let applied = 0;
      return {
        ...sm,
        apply: (e) => ((applied = e.index), sm.apply(e)),
        snapshotInSteps: () => {
          const at = applied;
          let taken = 0;
          sm.log.push(`begin ${at}`);
          return { step: () => (++taken < stepsNeeded ? null : new Uint8Array([at])) };
        },
      };
    }

    /** A driver whose state machine takes `stepsNeeded` steps per snapshot, compacting every 4 entries. */
    async function steppedDriver(stepsNeeded: number, onFatal?: (e: unknown) => void, limits: { readonly maxApplyBatch?: number } = {}): Promise<{ driver: RaftDriver; transport: RecordingTransport; sm: StateMachine & { readonly log: string[] }; appendCommitted: (from: number, to: number) => void } & ReturnType<typeof steppedTimers>> {
      const stepping = steppedTimers();
      const sm = steppedStateMachine(stepsNeeded);
      const { driver, transport } = await makeDriver(new MemoryLogStorage(), onFatal, undefined, { stateMachine: sm, timers: stepping.timers, compaction: { everyEntries: 4, retainEntries: 0 } }, limits);
      /** Entries `from`..`to` from leader b, committed at once. */
      const appendCommitted = (from: number, to: number): void => {
        const entries = Array.from({ length: to - from + 1 }, (_, i) => entry(from + i));
        transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: from - 1, prevTerm: from === 1 ? 0 : 1, entries, commit: to });
      };
      return { driver, transport, sm, appendCommitted, ...stepping };
    }

    it('goes one step a turn while entries apply, and compacts to the index it began at', async () => {
      const { driver, sm, appendCommitted, runSteps } = await steppedDriver(3);
      appendCommitted(1, 4);
      await settle();
      expect(sm.log.at(-1)).toBe('begin 4');
      expect(driver.snapshotsTaken).toBe(0);
      // Entries go on applying between the steps, up to two intervals past the last snapshot
      // (none yet: 8); no second snapshot begins meanwhile.
      appendCommitted(5, 8);
      await settle();
      expect(sm.log.filter((l) => l.startsWith('begin'))).toEqual(['begin 4']);
      expect(runSteps()).toBe(2);
      await settle();
      expect(driver.snapshotsTaken).toBe(1);
      expect(driver.node.latestSnapshot).toMatchObject({ index: 4, data: new Uint8Array([4]) });
      // Its three steps, and the call that handed it to storage.
      expect(driver.lastSnapshot).toMatchObject({ steps: 4 });
    });

    it('is taken at once when applying reaches two intervals past the last snapshot, and the entries held apply', async () => {
      // A Ready hands out one interval at most, as a member's does.
      const { maxApplyBatch } = raftSettingsFor({ everyEntries: 4, retainEntries: 0 });
      const { driver, transport, sm, appendCommitted, pending, clock } = await steppedDriver(3, undefined, { maxApplyBatch });
      // What member-bounds.ts counts as each entry applies: the entries kept, applied and durable.
      const kept: number[] = [];
      const apply = sm.apply.bind(sm);
      Object.assign(sm, { apply: (e: Entry) => (kept.push(Math.min(e.index, driver.node.log.stable) - driver.node.log.firstIndex() + 1), apply(e)) });
      // Each step of a snapshot takes a millisecond.
      const inSteps = sm.snapshotInSteps?.bind(sm);
      const timedSteps = (): { step: () => Uint8Array | null } => {
        const steps = inSteps?.();
        return { step: () => ((clock.ms += 1), steps?.step() ?? null) };
      };
      Object.assign(sm, { snapshotInSteps: timedSteps });
      appendCommitted(1, 4);
      await settle();
      expect(sm.log.at(-1)).toBe('begin 4');
      // Sixteen more, durable here, then committed before the next step: applying stops at 8
      // (two intervals of 4 past the last snapshot, none yet), the rest of the snapshot at 4 is
      // taken at once and compacted, and so on, each snapshot compacted before applying passes
      // two intervals after it.
      const entries = Array.from({ length: 16 }, (_, i) => entry(5 + i));
      transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 4, prevTerm: 1, entries, commit: 4 });
      await settle();
      expect(driver.node.log.stable).toBe(20);
      transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 20, prevTerm: 1, entries: [], commit: 20 });
      await settle();
      expect(driver.node.log.applied).toBe(20);
      expect(sm.log.filter((l) => l.startsWith('begin'))).toEqual(['begin 4', 'begin 12', 'begin 16']);
      expect(driver.snapshotsTaken).toBe(2);
      expect(driver.node.latestSnapshot).toMatchObject({ index: 12, data: new Uint8Array([12]) });
      // The one at 12 was finished at once: its first step as it began, the other two in one turn
      // of the loop (its longest stand-still), and the call that handed it to storage.
      expect(driver.lastSnapshot).toMatchObject({ steps: 4, loopMs: 3, longestStepMs: 2 });
      // Within the bound of three intervals (12) all along; without the hold, 20 at the end.
      expect(Math.max(...kept)).toBe(8);
      // The last begins in steps again.
      expect(pending()).toBe(1);
    });

    it('compacts once the Readies before it are handled, when its last step comes right after an append', async () => {
      const fatal: unknown[] = [];
      const { driver, appendCommitted, runSteps } = await steppedDriver(2, (e) => fatal.push(e));
      appendCommitted(1, 4);
      await settle();
      // The node takes entries 5..9, committed, and the last step runs before the loop hands them to storage.
      appendCommitted(5, 9);
      expect(runSteps()).toBe(1);
      await settle();
      expect(fatal).toEqual([]);
      expect(driver.snapshotsTaken).toBe(1);
      expect(driver.node.latestSnapshot.index).toBe(4);
    });

    it("is abandoned when a leader's snapshot replaces the state, and when the member stops", async () => {
      const { driver, transport, sm, appendCommitted, pending } = await steppedDriver(3);
      appendCommitted(1, 4);
      await settle();
      expect(pending()).toBe(1);
      appendCommitted(5, 8);
      await settle();
      expect(driver.node.log.applied).toBe(8);
      transport.deliver({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 20, term: 1, data: new Uint8Array([20]) } });
      await settle();
      expect(pending()).toBe(0);
      expect(driver.snapshotsTaken).toBe(0);
      expect(driver.node.latestSnapshot.index).toBe(20);
      // A later compaction begins afresh, and stopping abandons it too.
      appendCommitted(21, 24);
      await settle();
      expect(sm.log.at(-1)).toBe('begin 24');
      expect(pending()).toBe(1);
      driver.stop();
      expect(pending()).toBe(0);
    });
  });

  it('compacts once everyEntries are applied: the snapshot is stored after the entries, with the commit point, and read back at start', async () => {
    const disk = new MemoryDisk();
    const sm = recordingStateMachine();
    const compaction = { everyEntries: 4, retainEntries: 1 };
    const first = new MemoryLogStorage(disk);
    const { driver, transport } = await makeDriver(first, undefined, undefined, { stateMachine: sm, compaction });
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries: [1, 2, 3, 4, 5].map(entry), commit: 5 });
    await settle();
    expect(sm.log).toEqual(['apply 1', 'apply 2', 'apply 3', 'apply 4', 'apply 5', 'snapshot']);
    expect(driver.snapshotsTaken).toBe(1);
    // In memory, one entry is kept behind the snapshot for a follower a little behind.
    expect(driver.node.log.firstIndex()).toBe(5);
    const stored = disk.read();
    expect(stored.snapshot).toMatchObject({ index: 5, term: 1, data: new Uint8Array([42]) });
    expect(stored.entries).toEqual([]);
    expect(stored.hardState.commit).toBe(5);
    driver.stop();
    await first.close();
    // A restarted member starts from the snapshot.
    const restarted = recordingStateMachine();
    const storage = new MemoryLogStorage(disk);
    await makeDriver(storage, undefined, undefined, { stateMachine: restarted });
    expect(restarted.log).toEqual(['restore 42']);
  });
});

describe('a cluster version this member cannot read', () => {
  /** The member's own state machine (this release's versions) over an empty scheduler state. */
  function versionedStateMachine(): { readonly sm: StateMachine; readonly versions: ClusterVersionState } {
    const state = new SchedulerState();
    const scheduler = { state, apply: (index: number, command: SchedulerCommand) => state.apply(index, command), versionRaised: (version: number) => state.versionRaised(version), restore: () => undefined } as unknown as SchedulerRuntime;
    const versions = new ClusterVersionState(SUPPORTED, () => true);
    return { sm: memberStateMachine(() => scheduler, versions), versions };
  }
  const next = SUPPORTED.stateMachine.max + 1;
  const entry = (index: number, data: Uint8Array): { index: number; term: number; type: EntryType; data: Uint8Array; pid: string } => ({ index, term: 1, type: EntryType.Normal, data, pid: `p${index}` });

  it('stops the member at an activation of it, without applying the entry or any after it', async () => {
    const fatal: unknown[] = [];
    const { sm, versions } = versionedStateMachine();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(), (e) => fatal.push(e), undefined, { stateMachine: sm });
    const announce = encodeCommand({ kind: 'cluster', command: { type: 'announce', member: 'b', protocol: [1, 1], stateMachine: [1, next] } });
    // This release's versions one at a time up to its last, then the one it cannot read.
    const raises = Array.from({ length: SUPPORTED.stateMachine.max - 1 }, (_, i) => encodeCommand({ kind: 'cluster', command: { type: 'activate', from: i + 1, to: i + 2 } }));
    const activate = encodeCommand({ kind: 'cluster', command: { type: 'activate', from: SUPPORTED.stateMachine.max, to: next } });
    const after = encodeCommand({ kind: 'user', data: Uint8Array.of(1) });
    const entries = [announce, ...raises, activate, after].map((data, i) => entry(i + 1, data));
    const activationIndex = entries.length - 1;
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 1, prevIndex: 0, prevTerm: 0, entries, commit: entries.length });
    await settle();
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toBeInstanceOf(VersionTooOldError);
    expect(fatal[0]).toMatchObject({ code: 'CRONRAFT_VERSION_TOO_OLD', needs: next, reads: SUPPORTED.stateMachine.max });
    // The entry before it applied; the activation did not, and the member counts nothing from it on as applied.
    expect(versions.members.has('b')).toBe(true);
    expect(versions.active).toBe(SUPPORTED.stateMachine.max);
    expect(driver.node.log.applied).toBeLessThan(activationIndex);
    await expect(driver.propose(new Uint8Array([1]))).rejects.toMatchObject({ code: 'CRONRAFT_FATAL', cause: { code: 'CRONRAFT_VERSION_TOO_OLD' } });
  });

  it("stops the member at a leader's snapshot of it, taking nothing in", async () => {
    const fatal: unknown[] = [];
    const disk = new MemoryDisk();
    const { sm } = versionedStateMachine();
    const { driver, transport } = await makeDriver(new MemoryLogStorage(disk), (e) => fatal.push(e), undefined, { stateMachine: sm });
    const data = encodeMemberSnapshot(encodeSchedulerSnapshot(new SchedulerState()), encodeClusterPart([next, 7, []]));
    transport.deliver({ type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 9, term: 1, data } });
    await settle();
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toMatchObject({ code: 'CRONRAFT_VERSION_TOO_OLD', needs: next });
    expect(driver.snapshotsInstalled).toBe(0);
    expect(disk.read().snapshot.index).toBe(0);
  });
});
