/**
 * The fan-out bench's slow items, each put down to what held it (issue 19's emit-to-start p99):
 * the items of the steady run whose emit-to-start exceeds the target are lined up, on the shared
 * wall clock, with the event loop's stalls and GC pauses that a probe in each member saw
 * meanwhile (test/fixtures/member-probe.ts). An item is held by the member whose stalls overlap
 * it the most, when that alone made it late (its overlap is at least the time past the target),
 * and counted under that member's roles for it: the leader, the member that emitted it (the
 * slot's run), the one that started it (its consumer).
 */
import type { GcSpan } from '../test/fixtures/member-probe.js';
import type { StallSpan } from '../test/fixtures/loop-stalls.js';
import { overlapMs, overlapWaitMs } from './tail.js';

/** One item started: on which member (its index), when it was emitted (wall clock, ms), its emit-to-start (ms). */
export interface ItemTiming {
  readonly member: number;
  readonly emittedAt: number;
  readonly ms: number;
}

/** What a member's probe saw: its event loop's stalls and its GC pauses, in order. */
export interface MemberSpans {
  readonly stalls: readonly StallSpan[];
  readonly gc: readonly GcSpan[];
}

export interface SlowItems {
  readonly items: number;
  readonly over: number;
  /** Items over the target by the roles of the member whose stalls held them ('none' when no member's did), most first. */
  readonly heldBy: readonly (readonly [roles: string, items: number])[];
  /** Of the items held by a member's stalls, those during which a GC pause of that member ran. */
  readonly withGc: number;
  /**
   * Of the items held by a member's stalls, those that member's wait for a CPU (other processes
   * running) alone made late; null where the waits could not be read (no Linux scheduler statistics).
   */
  readonly waited: number | null;
}

/** The roles of member `i` for an item started on `consumer`: leader, emitter, consumer, joined with '+', or 'other'. */
function rolesOf(i: number, leader: number, emitter: number, consumer: number): string {
  const roles = [i === leader ? 'leader' : null, i === emitter ? 'emitter' : null, i === consumer ? 'consumer' : null].filter((r) => r !== null);
  return roles.length === 0 ? 'other' : roles.join('+');
}

export function slowItemCauses(items: readonly ItemTiming[], members: readonly MemberSpans[], roles: { readonly leader: number; readonly emitter: number }, targetMs: number): SlowItems {
  const heldBy = new Map<string, number>();
  let over = 0;
  let withGc = 0;
  let waited = 0;
  const waitsRead = members.some((m) => m.stalls.some((s) => s.waitMs !== undefined));
  for (const item of items) {
    if (item.ms <= targetMs) continue;
    over++;
    const to = item.emittedAt + item.ms;
    let most = -1;
    let mostMs = 0;
    members.forEach((m, i) => {
      const ms = overlapMs(m.stalls, item.emittedAt, to);
      if (ms > mostMs) {
        most = i;
        mostMs = ms;
      }
    });
    const held = most >= 0 && mostMs >= item.ms - targetMs;
    const key = held ? rolesOf(most, roles.leader, roles.emitter, item.member) : 'none';
    heldBy.set(key, (heldBy.get(key) ?? 0) + 1);
    const m = members[most];
    if (held && m !== undefined && overlapMs(m.gc, item.emittedAt, to) > 0) withGc++;
    if (held && m !== undefined && overlapWaitMs(m.stalls, item.emittedAt, to) >= item.ms - targetMs) waited++;
  }
  return { items: items.length, over, heldBy: [...heldBy].sort((a, b) => b[1] - a[1]), withGc, waited: waitsRead ? waited : null };
}

/** The row's text: how many items were over the target, and what held them. */
export function slowItemsText(s: SlowItems): string {
  if (s.over === 0) return 'none';
  const share = ((s.over / s.items) * 100).toFixed(2);
  const waited = s.waited === null ? '' : `, its wait for a CPU alone in ${s.waited}`;
  return `${s.over} of ${s.items} (${share}%); held by the stalls of: ${s.heldBy.map(([roles, n]) => `${roles} ${n}`).join(', ')} (a GC pause among them in ${s.withGc}${waited})`;
}
