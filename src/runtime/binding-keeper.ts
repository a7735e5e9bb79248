import { isWellFormedPeerId } from '../raft/conf-change.js';
import { Periodic } from '../time/periodic.js';
import { boundPeerId, membersOf } from '../raft/configuration.js';
import type { Configuration, NodeId } from '../raft/types.js';
import type { Timers } from '../time/clock.js';
import type { Transport } from '../transport/transport.js';
import { MEMBERSHIP_VERSION } from '../version/versions.js';
import type { RaftDriver } from './driver.js';

/** How often a leader looks for a member to bind: after a refusal, or once a member becomes live. */
export const BINDING_CHECK_MS = 500;

export interface BindingKeeperOptions {
  readonly self: NodeId;
  /** The configuration as applied here. */
  readonly conf: () => Configuration;
  /** The cluster version in force: bindings are conf changes, of version 2 ("membership"). */
  readonly activeVersion: () => number;
  readonly driver: RaftDriver;
  readonly transport: Transport;
  readonly timers: Timers;
  /** Whether a member is live now: heard from lately, on a connection still open. */
  readonly live: (id: NodeId) => boolean;
}

/**
 * Binds members to their libp2p peer ids, on the leader, once the cluster runs version 2: trust
 * on first use (issue 18, design section 2). A member that joins is bound by its add-learner
 * change; the founding members, which no change added, are bound here, each to the peer id its
 * live connection authenticated (Noise proves the remote holds that key; the transport reports
 * the remote peer of the last frame it accepted from the member), and the leader to its own.
 * Every member without a binding is, a learner added without one too, so that every member ends
 * up bound and the transport's gate closes to every other peer id.
 *
 * Trust on first use trusts what a member's connection said before it was bound: a process that
 * holds the cluster secret and speaks as a member before the member itself does could be bound
 * in its place (the member is then locked out, and must be removed and join again). The secret
 * keeps everyone else out; pinning `/p2p/` peer ids in the peer list closes even that window,
 * since a pinned member's frames come from its pinned key only, and so that is what is bound.
 *
 * One change at a time (the protocol refuses a second while one is pending), the next as soon
 * as one applies; a refused or failed one is tried again at the next look.
 */
export class BindingKeeper {
  readonly #o: BindingKeeperOptions;
  readonly #ticks: Periodic;
  #proposing = false;

  constructor(options: BindingKeeperOptions) {
    this.#o = options;
    this.#ticks = new Periodic(options.timers, BINDING_CHECK_MS, () => this.#look());
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  #look(): void {
    const { driver } = this.#o;
    if (this.#proposing || driver.node.role !== 'leader' || this.#o.activeVersion() < MEMBERSHIP_VERSION) return;
    const next = this.nextBinding();
    if (next === null) return;
    this.#proposing = true;
    driver.proposeConfChange({ type: 'bind', id: next.id, peerId: next.peerId }, `bind ${next.id}`).then(
      () => {
        this.#proposing = false;
        // Applied: the next member is bound at once rather than a look later (one chain of at
        // most one change per member, each waiting for the last to apply).
        if (this.#ticks.running) this.#look();
      },
      () => {
        this.#proposing = false;
      },
    );
  }

  /**
   * The next member to bind and the peer id to bind it to: the first in the configuration's
   * order without a binding whose peer id is known now (its own for this member, the one its
   * live connection authenticated for the others), well formed and bound to no other member;
   * or null when there is none.
   */
  nextBinding(): { readonly id: NodeId; readonly peerId: string } | null {
    const conf = this.#o.conf();
    const taken = new Set(conf.peerIds.map(([, peerId]) => peerId));
    for (const id of membersOf(conf)) {
      if (boundPeerId(conf, id) !== null) continue;
      const peerId = id === this.#o.self ? this.#o.transport.peerId() : this.#o.live(id) ? this.#o.transport.remotePeerIdOf(id) : null;
      if (peerId !== null && isWellFormedPeerId(peerId) && !taken.has(peerId)) return { id, peerId };
    }
    return null;
  }
}
