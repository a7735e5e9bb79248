import { configurationProblem } from './configuration.js';
import type { RaftLog } from './log.js';
import { REJECT_LOST_LOG, type AppendMessage, type AppendResponse, type HeartbeatMessage, type NodeId, type Snapshot } from './types.js';

/**
 * The follower's side of log replication: what it appends or commits from its leader's
 * appends, heartbeats and snapshots, and what it answers. Functions over the log; the node
 * checks first that it follows the sender (see its #followLeader) and sends the answers.
 */

/** Who answers: this member, at its term. */
export interface Answerer {
  readonly id: NodeId;
  readonly term: number;
}

/** An acceptance: the sender's log matches this member's up to `index`. */
export function acknowledge(self: Answerer, to: NodeId, index: number): AppendResponse {
  return { type: 'append-resp', from: self.id, to, term: self.term, index, reject: false, hintIndex: 0, hintTerm: 0 };
}

/** Appends what follows a matching entry and commits what the leader says is; the answer. */
export function takeAppend(log: RaftLog, m: AppendMessage, self: Answerer): AppendResponse {
  if (m.prevIndex < log.committed) return acknowledge(self, m.from, log.committed);
  if (log.matchTerm(m.prevIndex, m.prevTerm)) {
    const lastNew = log.maybeAppend(m.prevIndex, m.entries);
    log.commitTo(Math.min(m.commit, lastNew));
    return acknowledge(self, m.from, lastNew);
  }
  // Fast back-off: tell the leader the last index that can match given its prevTerm, so a
  // long divergent suffix is skipped a term at a time instead of an entry at a time.
  const hintIndex = log.findConflictByTerm(Math.min(m.prevIndex, log.lastIndex()), m.prevTerm);
  const hintTerm = log.term(hintIndex) ?? 0;
  return { type: 'append-resp', from: self.id, to: m.from, term: self.term, index: m.prevIndex, reject: true, hintIndex, hintTerm };
}

/**
 * Commits what a heartbeat says is committed, if the log holds it. Returns the rejection to send
 * besides the heartbeat's answer when it does not, or null.
 */
export function takeHeartbeat(log: RaftLog, m: HeartbeatMessage, self: Answerer): AppendResponse | null {
  const last = log.lastIndex();
  if (m.commit <= last) {
    if (m.commit > log.committed) log.commitTo(m.commit);
    return null;
  }
  // Our log ends before the commit index the leader sent, so this member lost its state
  // (see REJECT_LOST_LOG). What it holds is not known to be what was committed: nothing is
  // committed from this. The leader learns where our log ends and replicates to us from
  // there. (etcd panics here: "Was the raft log corrupted, truncated, or lost?")
  return { type: 'append-resp', from: self.id, to: m.from, term: self.term, index: REJECT_LOST_LOG, reject: true, hintIndex: last, hintTerm: log.lastTerm() };
}

/**
 * What a leader's snapshot does to the log: `malformed` (a protocol violation: ignored), `stale`
 * (nothing new: a duplicate, or the log caught up meanwhile), `committed` (the log holds the
 * entry it ends at, so everything before it too, by log matching: the snapshot only tells us
 * they are committed) or `restored` (the log now starts at it: the node installs it).
 */
export function takeSnapshot(log: RaftLog, s: Snapshot): 'malformed' | 'stale' | 'committed' | 'restored' {
  // A snapshot is of committed entries (step checked that its term is no later than its sender's).
  if (s.index === 0 || (s.conf !== undefined && configurationProblem(s.conf) !== null)) return 'malformed';
  if (s.index <= log.committed) return 'stale';
  if (log.matchTerm(s.index, s.term)) {
    log.commitTo(s.index);
    return 'committed';
  }
  log.restore(s);
  return 'restored';
}

