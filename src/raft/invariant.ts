/**
 * A broken invariant of this member's own state: the protocol reached a point that no input
 * it accepts can lead to (a commit past the end of its log, an entry replacing a committed one,
 * a compaction past what it applied). It is thrown before anything changes, and it is never a
 * peer's fault to be counted and forgotten: the codec and the protocol's own checks refuse every
 * message that could cause it, so reaching it means this member's state or code is wrong. The
 * driver stops the member with CRONRAFT_FATAL rather than go on from a state it cannot vouch for
 * (etcd's raft panics on the same conditions; TigerBeetle crashes on a failed assertion).
 */
export class InvariantError extends Error {
  constructor(what: string) {
    super(`Raft invariant violated: ${what}`);
    this.name = 'InvariantError';
  }
}
