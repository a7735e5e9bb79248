/**
 * What a member reports against its named bounds (Member.bounds), which the simulator's `bounds`
 * checker holds it to: among them fan-out's bytes as the snapshots take them, and the last
 * snapshot it took against what a member behind takes in (be1525e).
 */
import { describe, expect, it } from 'vitest';
import type { MemberSettings } from '../../src/runtime/member-settings.js';
import { FANOUT_DEFAULTS } from '../../src/fanout/state.js';
import { MAX_SNAPSHOT_BYTES } from '../../src/transport/constants.js';
import { SCHEDULER_DEFAULTS } from '../../src/scheduler/state.js';
import { CLAIM_BYTES_VERSION, MEMBERSHIP_VERSION, SNAPSHOT_SHARES_VERSION } from '../../src/version/versions.js';
import { MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

describe('Member.bounds', () => {
  it("holds the last snapshot's bytes to MAX_SNAPSHOT_BYTES, and each part's bytes to its share of it", async () => {
    const small: MemberSettings = { ...SETTINGS, compaction: { everyEntries: 20, retainEntries: 5 } };
    const sim = new MembershipSim(7, small);
    const { leader } = await sim.foundersLed(MEMBERSHIP_VERSION, 1000);
    await sim.until('the leader took a snapshot', () => ((leader.driver?.snapshotsTaken ?? 0) > 0 ? true : undefined));
    const bounds = new Map((leader.member?.bounds() ?? []).map((b) => [b.name, b]));
    expect(bounds.get('bytes of the last snapshot taken')).toEqual({ name: 'bytes of the last snapshot taken', value: leader.driver?.lastSnapshot?.bytes, limit: MAX_SNAPSHOT_BYTES, whenFull: 'refuses' });
    expect(leader.driver?.lastSnapshot?.bytes).toBeGreaterThan(0);
    const fanout = leader.member?.fanout;
    expect(bounds.get('bytes of unsettled items (but the members of leases)')).toMatchObject({ value: fanout?.boundedUnsettledBytes, limit: FANOUT_DEFAULTS.maxUnsettledBytes });
    expect(bounds.get('bytes of dead letters')).toMatchObject({ value: fanout?.deadLetterBytes, limit: FANOUT_DEFAULTS.maxDeadLetterBytes });
    // The cluster rose to the version that bounds the kept claims in bytes (CLAIM_BYTES_VERSION).
    expect(leader.member?.versions.active).toBe(CLAIM_BYTES_VERSION);
    const state = leader.member?.scheduler.state;
    expect(state?.claimBytes).toBeGreaterThan(0);
    expect(bounds.get('bytes of kept claims')).toEqual({ name: 'bytes of kept claims', value: state?.claimBytes, limit: SCHEDULER_DEFAULTS.maxClaimBytes, whenFull: 'forgets' });
    // And its jobs, locks, topics and leases by what they take too (SNAPSHOT_SHARES_VERSION, the same).
    expect(leader.member?.versions.active).toBe(SNAPSHOT_SHARES_VERSION);
    expect(state?.jobBytes).toBeGreaterThan(0);
    expect(bounds.get('bytes of jobs')).toEqual({ name: 'bytes of jobs', value: state?.jobBytes, limit: SCHEDULER_DEFAULTS.maxJobBytes, whenFull: 'refuses' });
    expect(bounds.get('bytes of locks')).toEqual({ name: 'bytes of locks', value: state?.lockBytes, limit: SCHEDULER_DEFAULTS.maxLockBytes, whenFull: 'refuses' });
    expect(bounds.get('bytes of topics')).toEqual({ name: 'bytes of topics', value: fanout?.topicBytes, limit: FANOUT_DEFAULTS.maxTopicBytes, whenFull: 'refuses' });
    expect(bounds.get('bytes of the members of leases')).toEqual({ name: 'bytes of the members of leases', value: fanout?.leaseBytes, limit: FANOUT_DEFAULTS.maxLeaseBytes, whenFull: 'waits' });
  });
});
