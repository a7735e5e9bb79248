import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import type { TopicRecord } from '../../src/fanout/state.js';
import type { NodeId } from '../../src/raft/types.js';
import type { ItemContext } from '../../src/runtime/fanout/consumer.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

const SETTINGS: ConsumerSettings = { parallelism: 2, retries: 2, timeoutMs: 60_000, backoffMs: 100, ratePerSecond: null, maxPending: null };
const ITEMS = 60;

// README, fan-out's delivery: a consumer that loses the leader for longer than its lease loses
// its items, leased again elsewhere once it has been silent for its lease and a plan interval,
// by when its own runs got ctx.signal; its lease counts from its answers, as for a slot. Here
// its answers to the leader are lost on the way (held back for an hour) while it hears the
// leader: no connection closes, and only its answers tell the leader it is there.
describe('a fan-out consumer whose answers never reach the leader while it hears the leader', () => {
  it('has its runs aborted (CRONRAFT_RUN_INTERRUPTED) before its items start elsewhere, and every item is done', async () => {
    for (const seed of [1, 2, 3]) {
      const label = `seed ${seed}`;
      const sim = new MembershipSim(seed);
      for (const id of FOUNDERS) await sim.start(id);
      await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
      let victim: NodeId | null = null;
      const started: Array<{ member: NodeId; id: number; at: number }> = [];
      const aborted: Array<{ id: number; at: number; code: unknown }> = [];
      // The victim holds each item until its run is aborted; the others finish theirs at once.
      const handler =
        (member: NodeId) =>
        (_data: Uint8Array, ctx: ItemContext): Promise<void> | undefined => {
          started.push({ member, id: ctx.id, at: sim.scheduler.nowMs });
          if (member !== victim) return undefined;
          return new Promise<void>((resolve) => {
            ctx.signal.addEventListener('abort', () => {
              aborted.push({ id: ctx.id, at: sim.scheduler.nowMs, code: (ctx.signal.reason as { code?: unknown } | undefined)?.code });
              resolve();
            });
          });
        };
      for (const id of FOUNDERS) await sim.settle(sim.get(id).member!.fanoutRuntime.consume('t', handler(id), SETTINGS));
      const leader = await sim.until('a leader', () => sim.leader());
      const topic = (): TopicRecord | undefined => leader.member?.fanout.topics.get('t');
      await sim.until('every consumer registered on the leader', () => (topic()?.consumers.size === 3 ? true : undefined));
      victim = FOUNDERS.find((id) => id !== leader.id) as NodeId;
      const x = victim;
      void leader.member?.fanoutRuntime.emit('t', Array.from({ length: ITEMS }, (_, i) => ({ data: Uint8Array.of(i), key: null })), null);
      await sim.until('the victim runs its parallelism', () => (started.filter((r) => r.member === x).length >= SETTINGS.parallelism ? true : undefined));
      sim.network.clog(x, leader.id, 3_600_000);
      await sim.until('every item done', () => (topic()?.counts.done === ITEMS ? true : undefined));
      const onVictim = started.filter((r) => r.member === x);
      expect(onVictim.length, label).toBeGreaterThanOrEqual(SETTINGS.parallelism);
      for (const run of onVictim) {
        const abort = aborted.find((a) => a.id === run.id);
        expect(abort?.code, `${label}: item ${run.id}`).toBe('CRONRAFT_RUN_INTERRUPTED');
        const elsewhere = started.filter((r) => r.id === run.id && r.member !== x);
        expect(elsewhere.length, `${label}: item ${run.id}`).toBeGreaterThan(0);
        for (const again of elsewhere) expect(again.at, `${label}: item ${run.id}, aborted at ${abort?.at}`).toBeGreaterThanOrEqual(abort!.at);
      }
    }
  }, 120_000);
});
