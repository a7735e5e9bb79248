import type { MemberState } from './api/state.js';
import type { NodeId } from './raft/types.js';
import type { Timers } from './time/clock.js';
import { Periodic } from './time/periodic.js';

/**
 * The Cluster's events of conditions an operator alerts on that no log entry marks: a member
 * this member can no longer reach (`member-unreachable`) and a member whose clock is skewed
 * past `maxClockSkewMs` (`clock-skewed`), each told once as it begins, as this member sees it
 * (a leader sees every member; a follower its leader, and the others by their connections). The
 * same conditions are `state().members[]`'s `reachable` and `clockSkewed`, and metrics.
 */

/** How often the members are looked at. */
export const WATCH_INTERVAL_MS = 1000;

export interface MemberWatchEvents {
  readonly unreachable: (event: { readonly id: NodeId; readonly lastContactMs: number | null }) => void;
  readonly clockSkewed: (event: { readonly id: NodeId; readonly offsetMs: number }) => void;
}

export class MemberWatch {
  readonly #members: () => readonly MemberState[];
  readonly #events: MemberWatchEvents;
  readonly #ticks: Periodic;
  /** Members unreachable, and skewed, at the last look: bounded by the configuration. */
  #unreachable = new Set<NodeId>();
  #skewed = new Set<NodeId>();

  constructor(timers: Timers, members: () => readonly MemberState[], events: MemberWatchEvents, intervalMs = WATCH_INTERVAL_MS) {
    this.#members = members;
    this.#events = events;
    this.#ticks = new Periodic(timers, intervalMs, () => this.look());
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  /** One look: tells of each member that became unreachable or skewed since the last. */
  look(): void {
    const unreachable = new Set<NodeId>();
    const skewed = new Set<NodeId>();
    for (const m of this.#members()) {
      if (!m.reachable) {
        unreachable.add(m.id);
        if (!this.#unreachable.has(m.id)) this.#tell(() => this.#events.unreachable({ id: m.id, lastContactMs: m.lastContactMs }));
      }
      if (m.clockSkewed && m.clockOffsetMs !== null) {
        skewed.add(m.id);
        if (!this.#skewed.has(m.id)) this.#tell(() => this.#events.clockSkewed({ id: m.id, offsetMs: m.clockOffsetMs as number }));
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
