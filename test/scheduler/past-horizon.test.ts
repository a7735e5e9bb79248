import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { MISSED, type AssignMode } from '../../src/scheduler/command.js';
import { claimKey } from '../../src/scheduler/records.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { FIRST_CLUSTER_VERSION } from '../../src/version/versions.js';

afterEach(stopClusters);

const HORIZON_MS = 3000;
const SLOT_MS = T0 + 1000;
const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' as const } };

/**
 * The state a member finds as it restarts past the reassignment horizon (its log or a snapshot):
 * the `{ at }` job `once` registered by a and b in `mode`, its slot claimed for `assignees`
 * under token 3, with b's run started (by its previous process) when `bStarted`, and a's outcome
 * when `aSucceeded`.
 */
function stateFound(mode: AssignMode, assignees: readonly string[], bStarted: boolean, aSucceeded = false): Uint8Array {
  const s = new SchedulerState();
  ['a', 'b'].forEach((member, i) => s.apply(i + 1, { type: 'register', job: 'once', spec: parseSpec({ at: new Date(SLOT_MS) }), mode, policy, member, atMs: T0 }));
  s.apply(3, { type: 'claim', job: 'once', slotMs: SLOT_MS, assignees: [...assignees] });
  if (bStarted) s.apply(4, { type: 'started', job: 'once', slotMs: SLOT_MS, token: 3, member: 'b', atMs: SLOT_MS });
  if (aSucceeded) s.apply(5, { type: 'outcome', job: 'once', slotMs: SLOT_MS, token: 3, member: 'a', outcome: 'succeeded', atMs: SLOT_MS + 10 });
  return encodeSchedulerSnapshot(s);
}

/** Two members that restore `snapshot` at T0 + 5 s, two seconds past the slot's horizon, and run until T0 + 8 s. */
async function restartedPastHorizon(snapshot: Uint8Array, version?: number): Promise<Cluster> {
  const c = track(new Cluster(['a', 'b'], 5, { reassignHorizonMs: HORIZON_MS }));
  if (version !== undefined) c.version = version;
  // Past the log's own entries, so that entries applied from now on come after them.
  for (let i = 0; i < 5; i++) c.log.push({ type: 'unregister', job: 'none', member: 'z' });
  await c.time.advanceTo(T0 + 5000);
  for (const m of c.members.values()) m.restore(snapshot);
  c.schedule(['a', 'b'], 'once', { at: SLOT_MS }, 10);
  await c.time.advanceTo(T0 + 8000);
  return c;
}

// A member that learned of its claim only past the horizon (restarted, cut off) left it without
// an outcome for good, where no leader records one for it (seen reading the code around what the
// simulator found once it drew short horizons).
describe('a claim a member learns of past the reassignment horizon', () => {
  it("is reported interrupted for the member's share of a mode 'all' slot, which no leader moves or expires", async () => {
    const c = await restartedPastHorizon(stateFound('all', ['a', 'b'], false, true));
    expect(c.runs).toEqual([]);
    const claim = c.state('a').claims.get(claimKey('once', SLOT_MS))!;
    expect(claim.outcomes.get('a')).toMatchObject({ outcome: 'succeeded', token: 3 });
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: 'interrupted', token: 3 });
    expect(claim.outcomes.get('b')?.error).toMatch(/past the reassignment horizon/);
  });

  it('is reported interrupted when its run started in an earlier process, then recorded missed by the leader (cluster version 3)', async () => {
    const c = await restartedPastHorizon(stateFound('one', ['b'], true));
    expect(c.runs).toEqual([]);
    const claim = c.state('a').claims.get(claimKey('once', SLOT_MS))!;
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: MISSED, token: claim.token });
    const reported = c.log.find((command) => command.type === 'outcome');
    expect(reported).toMatchObject({ member: 'b', outcome: 'interrupted', token: 3 });
    // Under an earlier version the interruption is where the slot's story ends: the log showed the run in progress for good before.
    const old = await restartedPastHorizon(stateFound('one', ['b'], true), FIRST_CLUSTER_VERSION);
    expect(old.state('a').claims.get(claimKey('once', SLOT_MS))?.outcomes.get('b')).toMatchObject({ outcome: 'interrupted', token: 3 });
  });

  it('is reported interrupted when nothing of it ran (mode one), then recorded missed; before version 3 the leader records it missed alone', async () => {
    const c = await restartedPastHorizon(stateFound('one', ['b'], false));
    expect(c.runs).toEqual([]);
    // As of the slot's instant, where its horizon counted from: no news that would start it again.
    expect(c.log.filter((command) => command.type === 'outcome')).toMatchObject([{ member: 'b', outcome: 'interrupted', token: 3, atMs: SLOT_MS }]);
    const claim = c.state('a').claims.get(claimKey('once', SLOT_MS))!;
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: MISSED, token: claim.token });
    const old = await restartedPastHorizon(stateFound('one', ['b'], false), FIRST_CLUSTER_VERSION);
    expect(old.log.filter((command) => command.type === 'outcome')).toEqual([]);
    const oldClaim = old.state('a').claims.get(claimKey('once', SLOT_MS))!;
    expect(oldClaim.outcomes.get('b')).toMatchObject({ outcome: MISSED, token: oldClaim.token });
  });
});
