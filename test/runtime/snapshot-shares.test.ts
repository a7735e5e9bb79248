/**
 * Every part of a member's replicated state full at once still makes a snapshot that a member
 * behind takes in (snapshot-shares.ts, issue 16: "a member never adopts a value it could not
 * survive"). Before the shares, the scheduler's jobs and locks and fan-out's topics were bounded
 * by number alone: with long names on seven members, 10,000 jobs and 10,000 locks took 8 and 6
 * MB of a snapshot, beside fan-out's 26 MiB and the claims' 4 MiB.
 */
import { describe, expect, it } from 'vitest';
import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { MAX_ERROR_LENGTH, MAX_ITEM_BYTES, MAX_TOPIC_LENGTH } from '../../src/fanout/command.js';
import { FANOUT_DEFAULTS, FanoutState } from '../../src/fanout/state.js';
import { encodeFanoutSnapshot } from '../../src/fanout/state-snapshot.js';
import { encodeClusterPart, encodeMemberSnapshot } from '../../src/runtime/member-snapshot.js';
import { MAX_RUN_ERROR_LENGTH, type SchedulerCommand } from '../../src/scheduler/command.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { MAX_ASSIGNED_MEMBERS } from '../../src/scheduler/assigned-counts.js';
import { SCHEDULER_DEFAULTS, SchedulerState } from '../../src/scheduler/state.js';
import { SNAPSHOT_SHARES } from '../../src/snapshot-shares.js';
import { MAX_ID_LENGTH, MAX_SNAPSHOT_BYTES } from '../../src/transport/constants.js';
import { MAX_MEMBERS_SAVED } from '../../src/version/cluster-version.js';
import { SNAPSHOT_SHARES_VERSION } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const V = SNAPSHOT_SHARES_VERSION;
/** Seven members with ids as long as the transport takes. */
const MEMBERS = Array.from({ length: 7 }, (_, i) => `${'h'.repeat(MAX_ID_LENGTH - 5)}:${7000 + i}`);
/** A name of `length` characters of three bytes each, numbered to keep it apart. */
const longName = (i: number, length = MAX_TOPIC_LENGTH): string => `${i}:`.concat('語'.repeat(length)).slice(0, length);
/** Fan-out's frame: its array's head, version and next id, and its lists' heads. */
const FANOUT_FRAME_BYTES = 32;
const SETTINGS: ConsumerSettings = { parallelism: 10_000, retries: 0, timeoutMs: 60_000, backoffMs: 100, ratePerSecond: null, maxPending: null };

/** The scheduler's jobs, locks and claims, each until its share refuses or forgets. */
function fullScheduler(): SchedulerState {
  const state = new SchedulerState();
  let index = 0;
  const apply = (command: SchedulerCommand): ReturnType<SchedulerState['apply']> => state.apply(++index, command, V);
  for (let j = 0; ; j++) {
    const register = (member: string): SchedulerCommand => ({ type: 'register', job: longName(j), spec: { kind: 'cron', expression: '*/5 * * * *', tz: 'America/Argentina/ComodRivadavia' }, mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member, atMs: T0 });
    if (!apply(register(MEMBERS[0] as string)).ok) break;
    for (const member of MEMBERS.slice(1)) apply(register(member));
  }
  for (let l = 0; apply({ type: 'lock', name: longName(l), member: MEMBERS[l % MEMBERS.length] as string, atMs: T0, untilMs: T0 + 1e12 }).ok; l++);
  const error = '語'.repeat(MAX_RUN_ERROR_LENGTH);
  const job = longName(0);
  for (let k = 1; k <= 2000; k++) {
    const slotMs = T0 + k * 300_000;
    // Each claim to one of 400 members, as many as come and go in a long life: the counts of
    // assignments keep the members assigned to last.
    const member = `${'h'.repeat(MAX_ID_LENGTH - 6)}:${String(k % 400).padStart(5, '0')}`;
    const claimed = apply({ type: 'claim', job, slotMs, assignees: [member] });
    if (!claimed.ok) throw new Error(`claim ${k} refused`);
    apply({ type: 'outcome', job, slotMs, token: index, member, outcome: 'failed', error, atMs: slotMs });
  }
  return state;
}

/** Fan-out's topics, dead letters, unsettled items and leases, each until its share refuses or forgets. */
function fullFanout(): FanoutState {
  const state = new FanoutState();
  let index = 0;
  const apply = (command: FanoutCommand): ReturnType<FanoutState['apply']> => state.apply(++index, command);
  const member = MEMBERS[0] as string;
  const origin = { job: longName(0), slotMs: T0 };
  const emit = (topic: string, count: number, bytes: number): ReturnType<FanoutState['apply']> => apply({ type: 'emit', topic, items: Array.from({ length: count }, () => ({ data: new Uint8Array(bytes), key: null })), origin, atMs: T0 });
  for (let t = 0; ; t++) {
    let taken = true;
    for (const m of MEMBERS) taken = apply({ type: 'consume', topic: longName(t), member: m, settings: SETTINGS }).ok && taken;
    if (!taken) break;
  }
  // Dead letters past their share (the oldest forgotten): items that fail once, with no retry.
  const dead = longName(0);
  for (let k = 0; k < 40; k++) {
    const emitted = emit(dead, 1, MAX_ITEM_BYTES);
    const id = emitted.ok ? (emitted.firstId ?? 0) : 0;
    const lease = apply({ type: 'lease', member, ids: [id], atMs: T0 });
    apply({ type: 'done', member, outcomes: [{ id, token: lease.ok ? index : 0, error: 'x'.repeat(MAX_ERROR_LENGTH) }], atMs: T0 });
  }
  // Unsettled items until the emits are refused, then leases until they leave items pending.
  const work = longName(1);
  while (emit(work, 256, 1024).ok);
  while (emit(work, 1, 1024).ok);
  const ids = [...state.items.keys()];
  for (let k = 0; k < ids.length; k += 1000) apply({ type: 'lease', member, ids: ids.slice(k, k + 1000), atMs: T0 });
  return state;
}

describe('snapshot shares', () => {
  it('come to no more than what a member behind takes in, and are the bounds the states keep to by default', () => {
    const total = Object.values(SNAPSHOT_SHARES).reduce((sum, share) => sum + share, 0);
    expect(total).toBeLessThanOrEqual(MAX_SNAPSHOT_BYTES);
    expect(SCHEDULER_DEFAULTS).toMatchObject({ maxClaimBytes: SNAPSHOT_SHARES.claims, maxJobBytes: SNAPSHOT_SHARES.jobs, maxLockBytes: SNAPSHOT_SHARES.locks });
    expect(FANOUT_DEFAULTS).toMatchObject({ maxUnsettledBytes: SNAPSHOT_SHARES.unsettledItems, maxLeaseBytes: SNAPSHOT_SHARES.leases, maxDeadLetterBytes: SNAPSHOT_SHARES.deadLetters, maxTopicBytes: SNAPSHOT_SHARES.topics });
  });

  it('every part full at once, with long names on seven members: the member snapshot is one a member behind takes in', () => {
    const scheduler = fullScheduler();
    const fanout = fullFanout();
    // Each part full: within a record of its share (the largest here is a claim or a dead letter).
    const near = (value: number, share: number, record: number): void => {
      expect(value).toBeLessThanOrEqual(share);
      expect(value).toBeGreaterThan(share - record);
    };
    near(scheduler.jobBytes, SNAPSHOT_SHARES.jobs, 4096);
    near(scheduler.lockBytes, SNAPSHOT_SHARES.locks, 2048);
    near(scheduler.claimBytes, SNAPSHOT_SHARES.claims, 4096);
    near(fanout.topicBytes, SNAPSHOT_SHARES.topics, 8192);
    near(fanout.deadLetterBytes, SNAPSHOT_SHARES.deadLetters, MAX_ITEM_BYTES + 4096);
    near(fanout.boundedUnsettledBytes, SNAPSHOT_SHARES.unsettledItems, 4096);
    near(fanout.leaseBytes, SNAPSHOT_SHARES.leases, 1024);
    // The cluster's part at its most: the versions of as many members as it keeps, ids as long as they go.
    const versions = Array.from({ length: MAX_MEMBERS_SAVED }, (_, i) => [`${'v'.repeat(MAX_ID_LENGTH - 6)}:${String(i).padStart(5, '0')}`, 1, 2, 1, 3]);
    const cluster = encodeClusterPart([V, T0, versions]);
    const schedulerBytes = encodeSchedulerSnapshot(scheduler);
    const fanoutBytes = encodeFanoutSnapshot(fanout);
    const snapshot = encodeMemberSnapshot(schedulerBytes, cluster, fanoutBytes);
    expect(snapshot.byteLength).toBeLessThanOrEqual(MAX_SNAPSHOT_BYTES);
    // The rest, which no share counts, is within the share kept for it: the cluster's part, the
    // scheduler's counts of assignments and its frame (all but its jobs, claims, locks and their
    // lists), the member snapshot's frame, and fan-out's (its counts cover all but its frame).
    expect(scheduler.assigned.size).toBe(MAX_ASSIGNED_MEMBERS);
    const top = JSON.parse(Buffer.from(schedulerBytes).toString('utf8')) as unknown[];
    const records = [top[1], top[2], top[3], top[5], top[6]].reduce<number>((sum, part) => sum + Buffer.byteLength(JSON.stringify(part)), 0);
    const frames = snapshot.byteLength - schedulerBytes.byteLength - cluster.byteLength - fanoutBytes.byteLength;
    expect(fanoutBytes.byteLength).toBeLessThanOrEqual(FANOUT_FRAME_BYTES + fanout.topicBytes + fanout.unsettledBytes + fanout.deadLetterBytes);
    expect(schedulerBytes.byteLength - records + cluster.byteLength + frames + FANOUT_FRAME_BYTES).toBeLessThanOrEqual(SNAPSHOT_SHARES.rest);
  });
});
