import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { type AssignMode } from '../../src/scheduler/command.js';
import { claimKey } from '../../src/scheduler/records.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { FIRST_CLUSTER_VERSION } from '../../src/version/versions.js';

afterEach(stopClusters);

const HORIZON_MS = 3000;
const SLOT_MS = T0 + 1000;
const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' as const } };

/** As test/scheduler/past-horizon.test.ts: the `{ at }` job `once`, its slot claimed for b under token 3, nothing run. */
function stateFound(mode: AssignMode): Uint8Array {
  const s = new SchedulerState();
  ['a', 'b'].forEach((member, i) => s.apply(i + 1, { type: 'register', job: 'once', spec: parseSpec({ at: new Date(SLOT_MS) }), mode, policy, member, atMs: T0 }));
  s.apply(3, { type: 'claim', job: 'once', slotMs: SLOT_MS, assignees: ['b'] });
  return encodeSchedulerSnapshot(s);
}

const DELAY_SPEC = { delayAfterCompletion: 1000, initialDelay: 1000 } as const;

/** The fixed-delay job `sync`, its first slot (T0 + 1 s) claimed for b under token 3 and started there by b's previous process. */
function delayStateFound(): Uint8Array {
  const s = new SchedulerState();
  ['a', 'b'].forEach((member, i) => s.apply(i + 1, { type: 'register', job: 'sync', spec: parseSpec(DELAY_SPEC), mode: 'one', policy, member, atMs: T0 }));
  s.apply(3, { type: 'claim', job: 'sync', slotMs: SLOT_MS, assignees: ['b'] });
  s.apply(4, { type: 'started', job: 'sync', slotMs: SLOT_MS, token: 3, member: 'b', atMs: SLOT_MS });
  return encodeSchedulerSnapshot(s);
}

/**
 * b restores the state at T0 + 5 s (past the horizon) while no leader answers its read barriers
 * for three seconds (an election, a loaded leader: #stillHeld gives up after 20 tries, about 2 s),
 * then answers again; b stays reachable (holding) throughout. Runs to T0 + 60 s.
 */
async function pastHorizonBarrierDown(version?: number, job: 'once' | 'sync' = 'once'): Promise<Cluster> {
  let barrierDown = true;
  const c = track(
    new Cluster(['a', 'b'], 5, { reassignHorizonMs: HORIZON_MS }, (id) =>
      id === 'b' ? { barrier: () => (barrierDown ? c.time.sleep(5).then(() => Promise.reject(new Error('no leader'))) : c.time.sleep(5)) } : {},
    ),
  );
  if (version !== undefined) c.version = version;
  for (let i = 0; i < 5; i++) c.log.push({ type: 'unregister', job: 'none', member: 'z' });
  await c.time.advanceTo(T0 + 5000);
  for (const m of c.members.values()) m.restore(job === 'once' ? stateFound('one') : delayStateFound());
  if (job === 'once') c.schedule(['a', 'b'], 'once', { at: SLOT_MS }, 10);
  else c.schedule(['a', 'b'], 'sync', DELAY_SPEC, 10);
  await c.time.advanceTo(T0 + 8000);
  barrierDown = false;
  await c.time.advanceTo(T0 + 60_000);
  return c;
}

describe('a claim found past the horizon whose report found no leader for a moment (cluster version 3)', () => {
  it('ends with an outcome, as it does before version 3', async () => {
    // Before version 3 the leader records it missed by itself.
    const old = await pastHorizonBarrierDown(FIRST_CLUSTER_VERSION);
    expect(old.state('a').claims.get(claimKey('once', SLOT_MS))?.outcomes.get('b')?.outcome).toBe('missed');
    // From version 3 the leader leaves the claim to b (reachable): b reports it although no
    // leader confirmed it within the barrier's tries (without that, nothing ever armed or
    // reported the claim again, and the slot waited for good).
    const c = await pastHorizonBarrierDown();
    expect(c.log.filter((command) => command.type === 'outcome' || command.type === 'expire')).not.toEqual([]);
    expect(c.state('a').claims.get(claimKey('once', SLOT_MS))?.outcomes.get('b')?.outcome).toBeDefined();
  });
});

describe("a fixed-delay job whose run b's earlier process started, found past the horizon while no leader answered b's barrier for a moment (cluster version 3)", () => {
  it('runs again, as it does before version 3', async () => {
    const old = await pastHorizonBarrierDown(FIRST_CLUSTER_VERSION, 'sync');
    expect(old.runs.filter((r) => r.job === 'sync').length).toBeGreaterThan(10);
    // From version 3 the leader counts the run from when it last saw b (every plan: b is
    // reachable), so the run goes on until b reports it: had b given up its report with the
    // barrier, no next slot would ever be claimed.
    const c = await pastHorizonBarrierDown(undefined, 'sync');
    expect(c.runs.filter((r) => r.job === 'sync').length).toBeGreaterThan(10);
  });
});
