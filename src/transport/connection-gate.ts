import type { ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface';
import { MAX_INBOUND_CONNECTIONS_PER_HOST } from './constants.js';
import { JOIN_STREAM_TIMEOUT_MS } from './join-protocol.js';

/**
 * Connections from peer ids no member holds that the gate lets in at once, once it knows every
 * member's: a new member asks to join on one (the join protocol, README "Forming the
 * cluster"); its Raft frames are dropped by the transport like any non-member's, but for vote
 * requests (a voter of a configuration this member has not applied: vote-askers.ts). More are
 * closed after the handshake (counted `notMember`).
 */
export const MAX_VISITOR_CONNECTIONS = 4;

/** How long a visitor's connection is kept, unless its peer id became a member's: a join request and its answer. */
export const VISITOR_CONNECTION_MS = 2 * JOIN_STREAM_TIMEOUT_MS;

/** How many non-members' connections the gate lets in at once, and for how long each. */
export interface VisitorLimits {
  readonly max: number;
  readonly keepMs: number;
}

/** What the gate did with inbound connections, for `state().transport.inboundConnections`. */
export interface InboundConnectionStats {
  /** Connections that completed the handshake (the cluster secret's protection and Noise) and were let in. */
  readonly accepted: number;
  /**
   * Connections that closed before completing the handshake: a process without the cluster
   * secret or with another, one that speaks something else, an idle socket timed out, or an
   * honest dial given up half-way.
   */
  readonly handshakeFailed: number;
  /**
   * Connections closed right after the handshake because their peer id is none of the members'
   * (once every member's is known: pinned in its address or bound in the configuration).
   */
  readonly notMember: number;
  /** Connections from peer ids no member holds, let in for a while to ask to join (MAX_VISITOR_CONNECTIONS at once). */
  readonly visitors: number;
  /** Connections refused at once because their host already held MAX_INBOUND_CONNECTIONS_PER_HOST. */
  readonly overHostLimit: number;
  /** Inbound connections held now, handshaking or open. */
  readonly held: number;
}

/**
 * The libp2p connection gater of a member: it bounds the inbound connections any one host holds,
 * handshaking or open, so that a flood of idle sockets or of connections from one address cannot
 * take the slots other members need; and, when every peer's peer id is known (pinned in its
 * address, or bound in the configuration), closes inbound connections from any other peer id
 * right after the handshake, before a stream opens, but for a few visitors at a time, let in
 * for long enough to ask to join (a joiner holds the secret, not yet a member's key).
 * It counts what it refused.
 */
export class ConnectionGate {
  readonly #known: () => ReadonlySet<string> | null;
  /** Inbound connections held per remote host, from acceptance until they close. */
  readonly #perHost = new Map<string, number>();
  /** Inbound connections accepted whose handshake has not completed. */
  readonly #handshaking = new Set<MultiaddrConnection>();
  readonly #counts = { accepted: 0, handshakeFailed: 0, notMember: 0, visitors: 0, overHostLimit: 0 };
  /**
   * Visitors' connections held now, by connection, with their peer ids: a visitor whose peer id
   * became a member's (it joined) keeps its connection as a member's, and frees its place.
   */
  readonly #visiting = new Map<MultiaddrConnection, string>();
  #held = 0;

  readonly #visitors: VisitorLimits;

  /**
   * `known` returns the members' peer ids when every peer's is known, or null when some are not
   * (then any peer id may connect). `visitors` bounds the connections of non-members let in to
   * ask to join (tests lower them).
   */
  constructor(known: () => ReadonlySet<string> | null, visitors: VisitorLimits = { max: MAX_VISITOR_CONNECTIONS, keepMs: VISITOR_CONNECTION_MS }) {
    this.#known = known;
    this.#visitors = visitors;
  }

  /** The gater to give libp2p. */
  gater(): ConnectionGater {
    return {
      denyInboundConnection: (maConn) => this.#onInbound(maConn),
      denyInboundEncryptedConnection: (peerId, maConn) => this.#onHandshake(peerId, maConn),
    };
  }

  stats(): InboundConnectionStats {
    return { ...this.#counts, held: this.#held };
  }

  #onInbound(maConn: MultiaddrConnection): boolean {
    const host = hostOf(maConn);
    const held = this.#perHost.get(host) ?? 0;
    if (held >= MAX_INBOUND_CONNECTIONS_PER_HOST) {
      this.#counts.overHostLimit++;
      return true;
    }
    if (maConn.status !== 'open') return true;
    this.#perHost.set(host, held + 1);
    this.#held++;
    this.#handshaking.add(maConn);
    maConn.addEventListener(
      'close',
      () => {
        if (this.#handshaking.delete(maConn)) this.#counts.handshakeFailed++;
        this.#held--;
        const left = (this.#perHost.get(host) ?? 1) - 1;
        if (left > 0) this.#perHost.set(host, left);
        else this.#perHost.delete(host);
      },
      { once: true },
    );
    return false;
  }

  /** Lets a non-member in for a while (VISITOR_CONNECTION_MS), then closes it unless its peer id became a member's. */
  #visit(peerId: string, maConn: MultiaddrConnection): void {
    this.#counts.visitors++;
    this.#visiting.set(maConn, peerId);
    const timer = setTimeout(() => {
      if (this.#known()?.has(peerId) === false) maConn.abort(new Error('a visitor that did not join in time'));
      else this.#visiting.delete(maConn);
    }, this.#visitors.keepMs);
    maConn.addEventListener(
      'close',
      () => {
        clearTimeout(timer);
        this.#visiting.delete(maConn);
      },
      { once: true },
    );
  }

  /** Frees the places of visitors whose peer ids are members' now (they joined). */
  #releaseJoined(known: ReadonlySet<string>): void {
    for (const [maConn, peerId] of this.#visiting) if (known.has(peerId)) this.#visiting.delete(maConn);
  }

  #onHandshake(peerId: PeerId, maConn: MultiaddrConnection): boolean {
    this.#handshaking.delete(maConn);
    const known = this.#known();
    if (known !== null && !known.has(peerId.toString())) {
      if (this.#visiting.size >= this.#visitors.max) this.#releaseJoined(known);
      if (this.#visiting.size >= this.#visitors.max) {
        this.#counts.notMember++;
        return true;
      }
      this.#visit(peerId.toString(), maConn);
      return false;
    }
    this.#counts.accepted++;
    return false;
  }
}

/** The remote host of a connection (its IP address), which the per-host bound counts by. */
function hostOf(maConn: MultiaddrConnection): string {
  const component = maConn.remoteAddr.getComponents().find((c) => c.name === 'ip4' || c.name === 'ip6');
  return component?.value ?? maConn.remoteAddr.toString();
}
