import { InvariantError } from './invariant.js';
import type { ConfChangeRefusal } from './membership.js';
import type { Configuration, Entry, HardState, Message, NodeId, Snapshot } from './types.js';

export type Role = 'follower' | 'precandidate' | 'candidate' | 'leader';

/** What is volatile but observable: who leads, and in which role this member is. */
export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId | null;
  readonly term: number;
}

/** A linearizable read is ready once the state machine has applied `index` (0: refused, no leader). */
export interface ReadState {
  readonly ctx: number;
  readonly index: number;
}

/**
 * Where a forwarded proposal or change went: its index and term, or a refusal naming the leader
 * if known, and for a change why (`reason`).
 */
export type ForwardResult =
  | { readonly pid: string; readonly accepted: true; readonly index: number; readonly term: number }
  | { readonly pid: string; readonly accepted: false; readonly leader: NodeId | null; readonly reason?: ConfChangeRefusal };

/**
 * The effects the protocol asks for, in the order the driver must perform them (etcd's Ready
 * contract, with the split of its messages that etcd's asynchronous storage writes make):
 * 1. send `messages` at once: they promise nothing the write is needed for;
 * 2. if `mustSync`, start one atomic, synced write of `snapshot`, `hardState` and `entries`,
 *    queued behind every earlier write (writes complete in order);
 * 3. send `messagesAfterWrite` only once that write and every earlier one are durable: a vote,
 *    an append acknowledgement or any message at a term not yet durable promises durable
 *    state, and if it left before the write and the process died, the member could vote twice
 *    in a term, or a leader could count an entry that is gone;
 * 4. restore the state machine from `snapshot`, if any, and apply `committed`, in order, at
 *    once (committed means durable on a majority);
 * 5. call `writeDurable(ready)` as the write completes, then `advance(ready)` (or
 *    `advanceApplied` once applied and `advancePersisted` once durable).
 */
export interface Ready {
  readonly softState: SoftState | null;
  readonly hardState: HardState | null;
  /** A leader's snapshot this member installs: it replaces the log and the state machine. */
  readonly snapshot: Snapshot | null;
  readonly entries: readonly Entry[];
  /** Whether this Ready must be written and synced: a new term or vote, entries or a snapshot (etcd's MustSync). */
  readonly mustSync: boolean;
  /** Messages that may leave before this Ready's write is durable (see splitMessages). */
  readonly messages: readonly Message[];
  /** Messages that must wait until this Ready's write and every earlier one are durable. */
  readonly messagesAfterWrite: readonly Message[];
  readonly committed: readonly Entry[];
  /**
   * The configuration after this Ready, when it changed: by a conf change among `committed`
   * (the node applied it as it handed the entry out) or by `snapshot`. To keep with what the
   * member stores, and to act on: a member no longer in it was removed.
   */
  readonly conf: Configuration | null;
  readonly readStates: readonly ReadState[];
  readonly forwardResults: readonly ForwardResult[];
}

/** What decides which of a Ready's messages may leave before its write. */
export interface WriteState {
  /** The Ready must be written (Ready.mustSync). */
  readonly mustSync: boolean;
  /** Earlier Readies' writes are not yet acknowledged durable. */
  readonly writesInFlight: boolean;
  /** The term and vote the member holds are acknowledged durable. */
  readonly termDurable: boolean;
  /** The member led as the messages were collected (ReadyParts.leading). */
  readonly leading: boolean;
}

/**
 * Splits a Ready's messages into those that may leave at once and those that wait for the
 * writes. With nothing to write and nothing in flight, every message goes at once: it
 * promises only what is already durable. A leader whose term and vote are durable sends its
 * appends, heartbeats and TimeoutNow at once: they promise nothing about the leader's own disk
 * (it counts its own copy of an entry only once durable, in `advancePersisted`; TimeoutNow
 * goes to a follower that holds the whole log, and that follower campaigns on its own log), so
 * its fsync overlaps its followers' (the Raft paper, section 10.2.1), and a removed leader's
 * farewell leaves though the driver stops it before its write completes. A follower whose term
 * and vote are durable answers a heartbeat at once: the answer says only that it follows the
 * leader in that term (and confirms its reads), nothing of its log, so a follower whose disk is
 * slow still shows it is alive, and the lease it holds while the leader hears it (a heartbeat's
 * `heardAt`, src/runtime/peer-contact.ts) does not run out behind its own writes. Everything else waits.
 */
export function splitMessages(messages: readonly Message[], state: WriteState): { readonly now: readonly Message[]; readonly afterWrite: readonly Message[] } {
  if (!state.mustSync && !state.writesInFlight) return { now: messages, afterWrite: [] };
  if (!state.termDurable) return { now: [], afterWrite: messages };
  const early = (m: Message): boolean => (state.leading ? isLeaders(m) : m.type === 'heartbeat-resp');
  return { now: messages.filter(early), afterWrite: messages.filter((m) => !early(m)) };
}

/** The messages only a leader sends, of its term. */
function isLeaders(m: Message): boolean {
  return m.type === 'append' || m.type === 'heartbeat' || m.type === 'timeout-now';
}

export function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.role === b.role && a.leader === b.leader && a.term === b.term;
}

/** What the node hands a Ready besides the effects collected here. */
export interface ReadyParts {
  readonly hardState: HardState;
  readonly softState: SoftState;
  readonly snapshot: Snapshot | null;
  readonly entries: readonly Entry[];
  readonly committed: readonly Entry[];
  readonly conf: Configuration | null;
  /**
   * The member led as the messages were collected: also a leader that stepped down as this
   * Ready applied its own removal, whose farewell is among them.
   */
  readonly leading: boolean;
}

/**
 * The effects collected between Readies (messages, read states, forwarded proposals' results),
 * the hard and soft state the last Ready reported, and the writes handed out and not yet
 * acknowledged durable: what a Ready is built from, and what decides which of its messages may
 * leave before its write (splitMessages).
 */
export class ReadyBuilder {
  #msgs: Message[] = [];
  #readStates: ReadState[] = [];
  #forwardResults: ForwardResult[] = [];
  #prevHardState: HardState;
  #prevSoftState: SoftState;
  /**
   * The term and vote acknowledged durable (`writeDurable`): until the term a leader holds is,
   * its appends wait for the write like every other message.
   */
  #durableTerm: number;
  #durableVote: NodeId | null;
  /** Readies handed out that must be written (`mustSync`) and are not yet acknowledged durable. */
  #writesInFlight = 0;

  constructor(hardState: HardState, softState: SoftState) {
    this.#prevHardState = hardState;
    this.#prevSoftState = softState;
    this.#durableTerm = hardState.term;
    this.#durableVote = hardState.vote;
  }

  send(m: Message): void {
    this.#msgs.push(m);
  }

  readState(rs: ReadState): void {
    this.#readStates.push(rs);
  }

  forwardResult(r: ForwardResult): void {
    this.#forwardResults.push(r);
  }

  get writesInFlight(): number {
    return this.#writesInFlight;
  }

  /** Whether anything was collected, or the states differ from those the last Ready reported. */
  hasEffects(hs: HardState, ss: SoftState): boolean {
    return (
      this.#msgs.length > 0 ||
      this.#readStates.length > 0 ||
      this.#forwardResults.length > 0 ||
      !sameHardState(hs, this.#prevHardState) ||
      !sameSoftState(ss, this.#prevSoftState)
    );
  }

  /** Builds the Ready of what was collected, and starts collecting anew. */
  take(parts: ReadyParts): Ready {
    const { hardState: hs, softState: ss, snapshot, entries } = parts;
    // etcd's MustSync: a new term or vote, entries or a snapshot. A commit index alone is not
    // written: no message promises it, and a member that restarts with an older one re-learns
    // it from the leader.
    const mustSync = hs.term !== this.#prevHardState.term || hs.vote !== this.#prevHardState.vote || entries.length > 0 || snapshot !== null;
    const { now, afterWrite } = splitMessages(this.#msgs, {
      mustSync,
      writesInFlight: this.#writesInFlight > 0,
      termDurable: hs.term === this.#durableTerm && hs.vote === this.#durableVote,
      leading: parts.leading,
    });
    if (mustSync) this.#writesInFlight++;
    const ready: Ready = {
      softState: sameSoftState(ss, this.#prevSoftState) ? null : ss,
      hardState: sameHardState(hs, this.#prevHardState) ? null : hs,
      snapshot,
      entries,
      mustSync,
      messages: now,
      messagesAfterWrite: afterWrite,
      committed: parts.committed,
      conf: parts.conf,
      readStates: this.#readStates,
      forwardResults: this.#forwardResults,
    };
    this.#prevHardState = hs;
    this.#prevSoftState = ss;
    this.#msgs = [];
    this.#readStates = [];
    this.#forwardResults = [];
    return ready;
  }

  /** See RaftNode.writeDurable. */
  writeDurable(ready: Ready): void {
    if (!ready.mustSync) throw new InvariantError('writeDurable: the Ready had nothing to write');
    if (this.#writesInFlight === 0) throw new InvariantError('writeDurable: no write is in flight');
    this.#writesInFlight--;
    if (ready.hardState === null) return;
    this.#durableTerm = ready.hardState.term;
    this.#durableVote = ready.hardState.vote;
  }
}
