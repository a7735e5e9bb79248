import { boundPeerId, isMember, membersOf } from '../raft/configuration.js';
import type { Configuration, NodeId } from '../raft/types.js';
import type { TimerHandle, Timers } from '../time/clock.js';
import type { MemberPeer, Transport } from '../transport/transport.js';

export interface ConfigurationKeeperOptions {
  readonly self: NodeId;
  /** The node's configuration at start (its snapshot's, or the founding voters). */
  readonly conf: Configuration;
  readonly transport: Transport;
  readonly timers: Timers;
  /**
   * How long a removed member stays among the transport's peers: the leader's last heartbeat,
   * which tells it that its removal committed, must still reach it (an election timeout).
   */
  readonly removeAfterMs: number;
}

/**
 * A member's view of the configuration, as its driver applies it (Ready.conf): the voters the
 * lease counts, the members (voters and learners) work may go to, and the transport's peers,
 * which follow it, with the peer ids bound to them: a member added is dialled at once, one
 * removed after `removeAfterMs` (until then with the peer id it was bound to).
 */
export class ConfigurationKeeper {
  readonly #o: ConfigurationKeeperOptions;
  #conf: Configuration;
  #members: readonly NodeId[];
  #pruneTimer: TimerHandle | null = null;
  /** Members removed, kept among the transport's peers (with their bindings) until the prune timer fires. */
  #removed: readonly MemberPeer[] = [];
  /** The leader this member follows when its configuration does not list it (see follow), or null. */
  #outsideLeader: NodeId | null = null;

  constructor(options: ConfigurationKeeperOptions) {
    this.#o = options;
    this.#conf = options.conf;
    this.#members = membersOf(options.conf);
  }

  get conf(): Configuration {
    return this.#conf;
  }

  get voters(): readonly NodeId[] {
    return this.#conf.voters;
  }

  /** Voters, then learners. */
  get members(): readonly NodeId[] {
    return this.#members;
  }

  isMember(id: NodeId): boolean {
    return isMember(this.#conf, id);
  }

  /** Hands the transport its peers: called once, as the member starts. */
  start(): void {
    this.#setPeers();
  }

  /**
   * The member follows `leader` now (null: none). A leader its configuration does not list (a
   * joiner's, or one elected in a configuration this member has not applied yet: the node
   * follows it, see admission.ts) is among the transport's peers while it is followed, or every
   * answer to it would be dropped as unreachable and this member could never catch up.
   */
  follow(leader: NodeId | null): void {
    const outside = leader !== null && leader !== this.#o.self && !isMember(this.#conf, leader) ? leader : null;
    if (outside === this.#outsideLeader) return;
    this.#outsideLeader = outside;
    this.#setPeers();
  }

  #setPeers(): void {
    const peers = [...peersOf(this.#conf, this.#members), ...this.#removed];
    if (this.#outsideLeader !== null && !peers.some((peer) => peer.id === this.#outsideLeader)) peers.push({ id: this.#outsideLeader, peerId: null });
    this.#o.transport.setMembers(peers);
  }

  stop(): void {
    if (this.#pruneTimer !== null) this.#o.timers.clearTimeout(this.#pruneTimer);
    this.#pruneTimer = null;
  }

  /** The configuration applied here changed. */
  apply(conf: Configuration): void {
    const before = this.#conf;
    this.#conf = conf;
    this.#members = membersOf(conf);
    const removed = membersOf(before).filter((id) => !isMember(conf, id));
    if (this.#outsideLeader !== null && isMember(conf, this.#outsideLeader)) this.#outsideLeader = null;
    // A removed member keeps its binding until it is pruned.
    this.#removed = peersOf(before, removed);
    this.#setPeers();
    if (removed.length === 0) return;
    if (this.#pruneTimer !== null) this.#o.timers.clearTimeout(this.#pruneTimer);
    this.#pruneTimer = this.#o.timers.setTimeout(() => {
      this.#pruneTimer = null;
      this.#removed = [];
      this.#setPeers();
    }, this.#o.removeAfterMs);
  }
}

/** `ids`, members of `conf`, with the peer ids `conf` binds to them. */
function peersOf(conf: Configuration, ids: readonly NodeId[]): MemberPeer[] {
  return ids.map((id) => ({ id, peerId: boundPeerId(conf, id) }));
}
