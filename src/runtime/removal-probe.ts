import type { NodeId } from '../raft/types.js';
import type { Timers } from '../time/clock.js';
import { Periodic } from '../time/periodic.js';
import type { PeerAddress } from '../transport/address.js';
import type { JoinAnswer, JoinRequest } from '../transport/join-protocol.js';
import type { VersionSupport } from '../version/versions.js';

/**
 * How a member learns that it was removed when the log cannot tell it (issue 18). A member
 * removed while it was down or cut off, and back too far behind for the leader's last message
 * to carry its removal (node.ts, #sendFarewell), would wait for a leader for ever: its vote
 * requests are ignored by members whose configuration does not hold it, and no leader sends it
 * anything. So a member that has known no leader for LEADERLESS_BEFORE_PROBE_MS asks the members
 * it knows, over the join protocol, whether it still is one (join-server.ts, stillMember). One
 * that applied the log at least as far as this member knows it committed, with a configuration
 * without it, answers `removed`, and this member stops as removed (CRONRAFT_REMOVED), as it
 * would have had its removal reached it through the log.
 */

/** How often a member looks whether it has been without a leader long enough to ask. */
export const PROBE_EVERY_MS = 5000;

/**
 * How long a member goes without a leader before it asks whether it still is one: many election
 * timeouts, so that an election, a partition that heals or a restart of the others never makes
 * it ask, while a member left out for good learns it within seconds.
 */
export const LEADERLESS_BEFORE_PROBE_MS = 15_000;

export interface RemovalProbeOptions {
  readonly self: NodeId;
  readonly clusterId: string;
  readonly reads: VersionSupport;
  readonly timers: Timers;
  /** The leader this member knows now and heard from lately, or null. */
  readonly leader: () => NodeId | null;
  /** The highest index this member knows committed. */
  readonly committed: () => number;
  /**
   * The members to ask, with their addresses. Only those that pin a peer id (bound in the
   * configuration, or pinned with `/p2p/`) are asked: an answer that stops this member must come
   * from a member's own key, not from anyone who holds the secret.
   */
  readonly peers: () => readonly PeerAddress[];
  /** Asks one member (join-protocol.ts requestJoin over the transport); rejects when it cannot. */
  readonly ask: (address: PeerAddress, request: JoinRequest, timeoutMs: number) => Promise<JoinAnswer>;
  readonly askTimeoutMs: number;
  /** A member answered that this one was removed, having applied the log to `index`. */
  readonly onRemoved: (index: number) => void;
  /** How long without a leader before asking. @default LEADERLESS_BEFORE_PROBE_MS */
  readonly leaderlessBeforeProbeMs?: number;
}

/** Asks whether this member still is one, once it has been without a leader for long (see the module's comment). */
export class RemovalProbe {
  readonly #o: RemovalProbeOptions;
  readonly #ticks: Periodic;
  /** Since when (timers' time) this member has known no leader, or null while it knows one. */
  #leaderlessSince: number | null = null;
  #asking = false;
  #stopped = false;
  /** Rounds of asking done, for tests and state. */
  rounds = 0;

  constructor(options: RemovalProbeOptions) {
    this.#o = options;
    // A tick a third of the wait, so that a member asks within a third more than the wait.
    this.#ticks = new Periodic(options.timers, Math.min(PROBE_EVERY_MS, (options.leaderlessBeforeProbeMs ?? LEADERLESS_BEFORE_PROBE_MS) / 3), () => this.#look());
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#stopped = true;
    this.#ticks.stop();
  }

  #look(): void {
    const o = this.#o;
    const now = o.timers.now();
    if (o.leader() !== null) {
      this.#leaderlessSince = null;
      return;
    }
    this.#leaderlessSince ??= now;
    if (this.#asking || now - this.#leaderlessSince < (o.leaderlessBeforeProbeMs ?? LEADERLESS_BEFORE_PROBE_MS)) return;
    this.#asking = true;
    void this.#ask().finally(() => {
      this.#asking = false;
    });
  }

  async #ask(): Promise<void> {
    const o = this.#o;
    this.rounds++;
    const request: JoinRequest = { id: o.self, protocol: o.reads.protocol, stateMachine: o.reads.stateMachine, member: { clusterId: o.clusterId, committed: o.committed() } };
    const pinned = o.peers().filter((peer) => peer.peerId !== null && peer.id !== o.self);
    const answers = await Promise.all(pinned.map((peer) => o.ask(peer, request, o.askTimeoutMs).catch(() => null)));
    if (this.#stopped || o.leader() !== null) return;
    const removed = answers.find((answer): answer is Extract<JoinAnswer, { type: 'removed' }> => answer?.type === 'removed');
    if (removed !== undefined) o.onRemoved(removed.index);
  }
}
