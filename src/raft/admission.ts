import type { Message, NodeId } from './types.js';

/**
 * Which messages a member takes before any role handles them, and what it answers those of an
 * earlier term: rules of step, over what the member knows of its term and leader.
 */

/** What the rules read of the member. */
export interface Follows {
  readonly id: NodeId;
  readonly term: number;
  readonly leader: NodeId | null;
  /** A leader was heard from within the minimum election timeout (the leader lease). */
  readonly inLease: boolean;
}

/**
 * Whether to take a message from a sender outside this member's configuration. Only a
 * leader's appends, heartbeats and snapshots: a member that lags behind the configuration (it
 * missed the commit of a change) must follow a leader its configuration does not list yet,
 * or it would never catch up, and a joining member knows no leader in its configuration at
 * all. One at a higher term is taken only out of the leader lease, as a vote request is (see
 * voteIgnored): while a leader of this member's configuration is heard from, a removed
 * member cannot make it adopt a term. A leader that a member does not know is elected only by
 * a majority of a later configuration, which overlaps every earlier one's (one member at a
 * time), so following it is safe; a stranger forging one is for the transport to keep out.
 */
export function acceptsFromNonMember(m: Message, me: Follows): boolean {
  if (m.type !== 'append' && m.type !== 'heartbeat' && m.type !== 'snapshot') return false;
  // A second leader of the term this member follows one in is ignored, as from a member.
  if (m.term === me.term) return me.leader === null || me.leader === m.from;
  if (m.term < me.term) return true;
  return !me.inLease;
}

/**
 * Whether a vote request of a higher term is ignored. Leader lease (CheckQuorum): a member that
 * heard from a live leader within the minimum election timeout ignores vote requests, so a
 * member that was cut off and comes back with a higher term cannot depose a healthy leader. A
 * request of a leadership transfer is not: the leader asked for it.
 */
export function voteIgnored(m: Message, me: Follows): boolean {
  if (m.type !== 'prevote' && m.type !== 'vote') return false;
  const transfer = m.type === 'vote' && m.transfer;
  return !transfer && me.inLease;
}

/** The leader a message of a higher term names, if it comes from one. */
export function leaderOf(m: Message): NodeId | null {
  return m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot' || m.type === 'timeout-now' ? m.from : null;
}

/** What a member answers a message of an earlier term, if anything. */
export function lowerTermReply(m: Message, me: Follows): Message | null {
  const { id: from, term } = me;
  if (m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot') {
    // A stale leader (cut off, then back) learns our term from this reply and steps down;
    // without it, with CheckQuorum, it could keep a follower of its own forever. It says
    // nothing else (an acknowledgement of index 0, as etcd sends): should the sender lead in
    // our term by the time it arrives, a rejection at 0 would tell it we lost our log.
    return { type: 'append-resp', from, to: m.from, term, index: 0, reject: false, hintIndex: 0, hintTerm: 0 };
  }
  if (m.type === 'prevote') return { type: 'prevote-resp', from, to: m.from, term, reject: true };
  if (m.type === 'propose') return { type: 'propose-resp', from, to: m.from, term, index: 0, pids: m.proposals.map((p) => p.pid), reject: true, leader: me.leader };
  if (m.type === 'conf-propose') return { type: 'conf-propose-resp', from, to: m.from, term, pid: m.pid, index: 0, reason: 'not-leader', leader: me.leader };
  if (m.type === 'read-index') return { type: 'read-index-resp', from, to: m.from, term, ctx: m.ctx, index: 0, reject: true };
  return null;
}
