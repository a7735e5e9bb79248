import type { MemberState } from './api/state.js';
import type { NodeId } from './raft/types.js';
import type { Timers } from './time/clock.js';
import { Periodic } from './time/periodic.js';

/**
 * The Cluster's events of conditions an operator alerts on that no log entry marks: a member
 * this member can no longer reach (`member-unreachable`) and a member whose clock is skewed
 * past `maxClockSkewMs` (`clock-skewed`), each told once as it begins (unreachable: at two looks in a row), as this member sees it
 * (a leader sees every member; a follower its leader, and the others by their connections). The
 * same conditions are `state().members[]`'s `reachable` and `clockSkewed`, and metrics.
 */

/** How often the members are looked at. */
export const WATCH_INTERVAL_MS = 1000;

/**
 * Looks in a row a member must be unreachable at before it is told: a member that had just
 * joined told its leader unreachable at its first look, its connection to it still opening (a
 * stranger saw it at every join). So a member is told unreachable one look interval after it
 * was first seen so.
 */
export const UNREACHABLE_LOOKS = 2;

/**
 * A member told skewed is told so again only once its offset went back within this share of
 * `maxClockSkewMs` first: a clock drifting about the bound crossed it back and forth, and each
 * crossing was a `clock-skewed` event, once a second, to whatever pages an operator.
 */
export const SKEW_CLEARED_SHARE = 0.75;

export interface MemberWatchEvents {
  readonly unreachable: (event: { readonly id: NodeId; readonly lastContactMs: number | null }) => void;
  readonly clockSkewed: (event: { readonly id: NodeId; readonly offsetMs: number }) => void;
}

export class MemberWatch {
  readonly #members: () => readonly MemberState[];
  readonly #events: MemberWatchEvents;
  readonly #ticks: Periodic;
  /** Members unreachable at the last looks, and for how many in a row (up to UNREACHABLE_LOOKS), and skewed: bounded by the configuration. */
  #unreachable = new Map<NodeId, number>();
  #skewed = new Set<NodeId>();

  /** `maxClockSkewMs`: the bound `clockSkewed` is by, for SKEW_CLEARED_SHARE; none, a member is cleared once not skewed. */
  readonly #skewClearedMs: number;

  constructor(timers: Timers, members: () => readonly MemberState[], events: MemberWatchEvents, intervalMs = WATCH_INTERVAL_MS, maxClockSkewMs?: number) {
    this.#members = members;
    this.#skewClearedMs = maxClockSkewMs === undefined ? Number.POSITIVE_INFINITY : maxClockSkewMs * SKEW_CLEARED_SHARE;
    this.#events = events;
    this.#ticks = new Periodic(timers, intervalMs, () => this.look());
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  /** One look: tells of each member that became unreachable (at UNREACHABLE_LOOKS looks in a row) or skewed. */
  look(): void {
    const unreachable = new Map<NodeId, number>();
    const skewed = new Set<NodeId>();
    for (const m of this.#members()) {
      if (!m.reachable) {
        const looks = Math.min(UNREACHABLE_LOOKS, (this.#unreachable.get(m.id) ?? 0) + 1);
        unreachable.set(m.id, looks);
        if (looks === UNREACHABLE_LOOKS && this.#unreachable.get(m.id) !== UNREACHABLE_LOOKS) this.#tell(() => this.#events.unreachable({ id: m.id, lastContactMs: m.lastContactMs }));
      }
      const offsetMs = m.clockOffsetMs;
      if (offsetMs === null) continue;
      if (m.clockSkewed) {
        skewed.add(m.id);
        if (!this.#skewed.has(m.id)) this.#tell(() => this.#events.clockSkewed({ id: m.id, offsetMs }));
      } else if (this.#skewed.has(m.id) && Math.abs(offsetMs) > this.#skewClearedMs) {
        // Not skewed now, but not back well within the bound: still the same episode.
        skewed.add(m.id);
      }
    }
    this.#unreachable = unreachable;
    this.#skewed = skewed;
  }

  #tell(event: () => void): void {
    try {
      event();
    } catch {
      // A listener's error is the application's: the watch goes on.
    }
  }
}
