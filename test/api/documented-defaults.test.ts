import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/cluster-options.js';
import { validateJobOptions } from '../../src/job-options.js';
import { registrationForm } from '../../src/runtime/scheduler/registrations.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { exclusiveArguments } from '../../src/api/run-exclusive.js';
import { emitKeyOf } from '../../src/fanout/items.js';
import { consumerSettings } from '../../src/cluster-fanout.js';
import { backoffMs, FanoutState } from '../../src/fanout/state.js';
import { MAX_ITEMS_PER_EMIT, type FanoutCommand } from '../../src/fanout/command.js';

/**
 * The defaults the README's tables and lists name, as numbers: each compared to the figure the
 * README prints, not to the constant it comes from, so that a changed default fails here until
 * the README says so too.
 */
describe("the README's defaults", () => {
  it('are what an option given as undefined takes, as one not given (an app passing process.env.X under exactOptionalPropertyTypes)', () => {
    const keys = ['advertise', 'dataDir', 'storage', 'joinTimeoutMs', 'stopTimeoutMs', 'sync', 'secret', 'secretFile', 'insecure', 'mdns', 'http', 'clock', 'timers', 'random', 'tickMs', 'heartbeatMs', 'electionTimeoutMs', 'requestTimeoutMs', 'maxPendingProposals', 'maxClockSkewMs', 'maxConcurrent', 'snapshotEveryEntries', 'snapshotRetainEntries', 'voters', 'deadMemberAfterMs'] as const;
    const undefinedOptions = Object.fromEntries(keys.map((k) => [k, undefined]));
    const given = resolveOptions(['127.0.0.1:7001'], { listen: '127.0.0.1:7001', ...undefinedOptions });
    const none = resolveOptions(['127.0.0.1:7001'], { listen: '127.0.0.1:7001' });
    expect({ ...given, clock: null, timers: null, random: null }).toEqual({ ...none, clock: null, timers: null, random: null });
    expect(resolveOptions([], { listen: '127.0.0.1:7001', http: { listen: '127.0.0.1:0', token: undefined }, mdns: { name: undefined, intervalMs: undefined } })).toMatchObject({ http: resolveOptions([], { listen: '127.0.0.1:7001', http: { listen: '127.0.0.1:0' } }).http, mdns: resolveOptions([], { listen: '127.0.0.1:7001', mdns: {} }).mdns });
    // A job's, a consumer's, a lock's and an emit's options alike.
    const job = { mode: undefined, timeoutMs: undefined, catchUp: undefined, retries: undefined, retryDelayMs: undefined, overlap: undefined, priority: undefined };
    expect(() => validateJobOptions(job)).not.toThrow();
    expect(registrationForm(parseSpec({ every: '1s' }), job)).toEqual(registrationForm(parseSpec({ every: '1s' }), {}));
    expect(consumerSettings({ parallelism: undefined, retries: undefined, timeoutMs: undefined, backoffMs: undefined, ratePerSecond: undefined, maxPending: undefined })).toEqual(consumerSettings({}));
    expect(exclusiveArguments('nightly', { atMostFor: 1000, atLeastFor: undefined })).toEqual(exclusiveArguments('nightly', { atMostFor: 1000 }));
    expect(emitKeyOf({ key: undefined })).toBeUndefined();
  });

  it("are the options a Cluster runs with when given none (README, 'Options')", () => {
    const o = resolveOptions(['127.0.0.1:7001'], { listen: '127.0.0.1:7001' });
    expect(o.dataDir).toBe('.cronraft/127.0.0.1-7001');
    expect(o.storage).toBe('level');
    expect(o.sync).toBe(true);
    expect(o.secret).toBeNull();
    expect(o.mdns).toBeNull();
    expect(o.http).toBeNull();
    expect(o.stopTimeoutMs).toBe(1000);
    expect(o.joinTimeoutMs).toBe(5000);
    expect(o.member.timing).toMatchObject({
      tickMs: 10,
      electionTimeoutMs: 250,
      requestTimeoutMs: 5000,
      maxPendingProposals: 10_000,
      maxClockSkewMs: 1000,
      maxConcurrent: Number.POSITIVE_INFINITY,
      voters: 5,
      deadMemberAfterMs: 300_000,
      // "a slot that nobody ran before the reassignment horizon (ten minutes ...)"
      reassignHorizonMs: 600_000,
    });
    // heartbeatMs 50, in ticks of 10 ms.
    expect(o.member.timing.heartbeatTicks * o.member.timing.tickMs).toBe(50);
    expect(o.member.compaction).toEqual({ everyEntries: 10_000, retainEntries: 1000 });
    // With no listen given, loopback on a free port.
    expect(resolveOptions([], {}).listen).toBe('/ip4/127.0.0.1/tcp/0');
  });

  it("are a consumer's when cluster.consume is given no options (README, 'Consumers' and 'Retries')", () => {
    expect(consumerSettings({})).toMatchObject({ parallelism: 1, retries: 3, backoffMs: 1000, ratePerSecond: null, maxPending: null });
    // Back-off: 1 s doubled each time up to 5 minutes.
    expect([1, 2, 3, 4].map((attempt) => backoffMs(1000, attempt))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffMs(1000, 30)).toBe(300_000);
    expect(consumerSettings({ backoffMs: 300_000 }).backoffMs).toBe(300_000);
    expect(() => consumerSettings({ backoffMs: 300_001 })).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT' }));
  });

  it("keep the newest 1,000 dead letters per topic (README, 'Retries')", () => {
    const state = new FanoutState();
    let index = 0;
    const apply = (command: FanoutCommand): ReturnType<FanoutState['apply']> & { index: number } => ({ ...state.apply(++index, command), index });
    apply({ type: 'consume', topic: 'u', member: 'm1', settings: consumerSettings({ retries: 0, parallelism: 100 }) });
    const count = 1001;
    // One emit, one entry.
    expect(count).toBeLessThanOrEqual(MAX_ITEMS_PER_EMIT);
    expect(apply({ type: 'emit', topic: 'u', items: Array.from({ length: count }, (_, i) => ({ data: Uint8Array.of(1, i % 256), key: null })), origin: null, atMs: 0 })).toMatchObject({ ok: true, firstId: 1 });
    for (let first = 1; first <= count; first += 100) {
      const ids = Array.from({ length: Math.min(100, count - first + 1) }, (_, i) => first + i);
      const token = apply({ type: 'lease', member: 'm1', ids, atMs: 0 }).index;
      apply({ type: 'done', member: 'm1', outcomes: ids.map((id) => ({ id, token, error: 'boom' })), atMs: 0 });
    }
    const topic = state.topics.get('u');
    expect(topic?.counts.dead).toBe(count);
    expect(topic?.deadLetters.map((l) => l.id)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 2));
  });
});
