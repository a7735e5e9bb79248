import type { NodeId } from '../raft/types.js';
import type { Timers } from '../time/clock.js';
import type { Transport } from '../transport/transport.js';
import type { ConfigurationKeeper } from './configuration-keeper.js';
import type { RaftDriver } from './driver.js';
import { lostAfterMs } from './lease.js';

/** What MemberReach judges from: a member's driver (contact, clock offsets, progress), its configuration and transport. */
export interface MemberReachParts {
  readonly self: NodeId;
  readonly driver: RaftDriver;
  readonly configuration: ConfigurationKeeper;
  readonly transport: Pick<Transport, 'isConnected'>;
  readonly timers: Timers;
  readonly timing: { readonly electionTimeoutMs: number; readonly planIntervalMs: number; readonly maxClockSkewMs: number };
}

/**
 * How many election timeouts a new leader waits, from its election, before it counts a member it
 * has not heard from since as lost by its silence (MemberReach.lost): the deposed leader's
 * CheckQuorum (two, as it looks once an election timeout), the member's lease (two), and one
 * for what those leave out: the last heartbeat's way to the member, the member's look at its
 * lease once a plan interval, and a deposed leader whose ticks ran late. (A deposed leader whose
 * loop stood still for longer still renews the lease as it resumes: README, "Failures".)
 */
export const NEW_LEADER_WAIT_ELECTION_TIMEOUTS = 5;

/**
 * Which members a member, as leader, may count on: those it may give work to, those whose
 * claims stay theirs, those whose fan-out leases it takes back, and those live enough for the
 * keepers (versions, bindings, membership). Judged from contact, connections, clock offsets and
 * replication progress as the driver keeps them; nothing of its own.
 */
export class MemberReach {
  readonly #p: MemberReachParts;

  constructor(parts: MemberReachParts) {
    this.#p = parts;
  }

  /**
   * Members the leader may give work to now, voters and learners alike: itself and those
   * connected and heard from within an election timeout, whose clock offset it has measured
   * within `maxClockSkewMs`, and which have caught up far enough to be sent entries rather than
   * a snapshot. A closed connection (a killed process) makes a member ineligible at once;
   * silence, only after an election timeout.
   */
  eligible(): NodeId[] {
    const offsets = this.#p.driver.clockOffsets();
    const node = this.#p.driver.node;
    return this.#p.configuration.members.filter((id) => {
      // A member whose clock the leader has not measured, or measured too far off, would fire
      // slots at the wrong time: it gets no work until its clock is known and close enough.
      const offset = offsets.get(id);
      if (offset === undefined || Math.abs(offset.offsetMs) > this.#p.timing.maxClockSkewMs) return false;
      if (id === this.#p.self) return true;
      // One the leader is sending a snapshot to (a learner just added, a member far behind)
      // would apply its claims only once it installed the snapshot, after their slots.
      return node.progressOf(id)?.state !== 'snapshot' && this.heardLately(id);
    });
  }

  /**
   * Whether a member's claims and fan-out leases must be taken back now: its connection dropped
   * (a killed process: re-delivery at once), or it has been silent, in the configuration or
   * removed from it, for as long as its lease (two election timeouts) and a plan interval, by
   * when it aborted its own runs (Member.holdsLease, lease.ts); one not heard from since this
   * member's election, only NEW_LEADER_WAIT_ELECTION_TIMEOUTS after it.
   */
  lost(id: NodeId): boolean {
    if (id === this.#p.self) return false;
    const member = this.#p.configuration.isMember(id);
    if (member && !this.#p.transport.isConnected(id)) return true;
    const contact = this.#p.driver.contact;
    const now = this.#p.timers.now();
    const et = this.#p.timing.electionTimeoutMs;
    if (contact.silence(id, now) < lostAfterMs(this.#p.timing)) return false;
    // Removed (its connection closes an election timeout later, whatever it does): lost once
    // silent, as its lease then ran out, if it never learned of its removal and stopped.
    if (!member) return true;
    // A member not heard from since this one began to lead may still follow the deposed leader
    // (a minority cut off with it), whose heartbeats renew its lease until CheckQuorum ends that
    // leader's term: up to two election timeouts after the last majority it heard, which was no
    // later than this member's election. So its lease runs out about four election timeouts
    // after that; counted silent from the election alone, its claims moved while its run went on.
    const since = contact.leadingSince;
    return since === null || (contact.lastHeard(id) ?? Number.NEGATIVE_INFINITY) >= since || now - since >= NEW_LEADER_WAIT_ELECTION_TIMEOUTS * et;
  }

  /**
   * Members whose claims stay theirs: the leader moves the claims of any other
   * (planReassignments). Unlike eligible(), a member keeps its claims until it has been
   * lost (lost(): silent for as long as its lease and a plan interval, by when it has aborted its
   * own runs, or, not heard from since this member's election, for longer): a claim moved sooner
   * would run twice, the first run unaborted, whenever a follower's answers are late (a loaded
   * machine) but it still hears the leader. A member removed from the configuration keeps its
   * claims the same way, until lost by its silence. A closed
   * connection (a killed process) still moves its claims at once. A member whose clock this
   * leader has not measured yet keeps its claims too: a new leader measures its followers'
   * clocks only from its own heartbeats. Nor does a skewed clock move them: a member fires its
   * claims by the cluster's time, which it keeps on its monotonic clock, so a wall clock stepped
   * past `maxClockSkewMs` (NTP's first step after boot, say) gets it no new work (eligible()),
   * but its run goes on; moving the claim aborted the run and ran the slot again elsewhere.
   * Nor does a snapshot on its way to it: a member that fell behind the leader's compaction
   * while it answers still holds its lease and runs the claims it applied before, which a move
   * would start again elsewhere (one it had not applied yet it runs once it installed the
   * snapshot, late, rather than twice).
   */
  holding(): NodeId[] {
    const members = this.#p.configuration.members.filter((id) => !this.lost(id));
    // A removed member stops its runs as it applies its removal; one that has not learned of it
    // (its link lossy or late, as the removal committed) runs on until its lease runs out, so it
    // keeps its claims until it is lost by its silence, as a member does.
    const departed = this.#p.driver.contact.departedHeard(this.#p.timers.now(), lostAfterMs(this.#p.timing));
    return departed.length === 0 ? members : [...members, ...departed.filter((id) => !this.lost(id))];
  }

  /**
   * Whether this member heard from `id` since it began to lead (itself: always): of holding(),
   * those it saw hold their claims (LeaderPlanning's `heldAtMs`). One it has not heard from since
   * keeps its claims a while all the same (lost()), but was not seen: counted as seen then, a run
   * lost long before, in an outage, would be moved however late.
   */
  heardSinceLeading(id: NodeId): boolean {
    const contact = this.#p.driver.contact;
    return id === this.#p.self || (contact.lastHeard(id) ?? Number.NEGATIVE_INFINITY) >= (contact.leadingSince ?? Number.NEGATIVE_INFINITY);
  }

  /**
   * How long ago this member last heard from each other member of the configuration it has heard
   * from, on its monotonic timers: a member heard from is alive, and holds its claims, as holding()
   * judges. What a new leader knows of the members from when it followed (LeaderPlanning).
   */
  heardAgo(): Map<NodeId, number> {
    const now = this.#p.timers.now();
    const out = new Map<NodeId, number>();
    for (const id of this.#p.configuration.members) {
      const heard = id === this.#p.self ? undefined : this.#p.driver.contact.lastHeard(id);
      if (heard !== undefined) out.set(id, Math.max(0, now - heard));
    }
    return out;
  }

  /**
   * Whether a peer is connected and was heard from within an election timeout, counting only
   * while this member's own loop ran (see PeerContact.silence): a leader whose loop stood still
   * under load would otherwise find every follower silent, and move their claims.
   */
  heardLately(id: NodeId): boolean {
    return this.#p.driver.contact.silence(id, this.#p.timers.now()) < this.#p.timing.electionTimeoutMs && this.#p.transport.isConnected(id);
  }
}
