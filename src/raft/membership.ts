import { decodeConfChange, type ConfChange } from './conf-change.js';
import { applyChange, isVoter, membersOf, type ConfChangeProblem } from './configuration.js';
import { InvariantError } from './invariant.js';
import type { RaftLog } from './log.js';
import { EntryType, type Configuration, type Entry, type NodeId, type Snapshot } from './types.js';

/**
 * The outcome of `proposeConfChange`: appended (it takes effect once committed and applied), or
 * refused, changing nothing:
 * - `not-leader`: no leader is known, or a member asked to take a forwarded change is not the
 *   leader (`leader` names the one it knows, if any);
 * - `transferring`: leadership is being handed over;
 * - `not-committed-in-term`: this leader has not yet committed an entry of its term, so it may
 *   not know of a change a previous leader appended (the thesis, section 4.1, and the bug
 *   Ongaro reported on raft-dev in 2015);
 * - `pending`: an earlier change is appended and not yet applied;
 * - `backpressure`: the leader holds too many uncommitted bytes;
 * - a ConfChangeProblem: the change is malformed, void or unsafe for the current configuration.
 */
export type ConfChangeOutcome =
  | { readonly kind: 'appended'; readonly index: number; readonly term: number }
  /** Sent to the leader (a `conf-propose`): its answer comes as a ForwardResult. */
  | { readonly kind: 'forwarded'; readonly leader: NodeId }
  | { readonly kind: 'refused'; readonly reason: ConfChangeRefusal; readonly leader: NodeId | null };

/** Why a change was refused (see ConfChangeOutcome). */
export type ConfChangeRefusal = 'not-leader' | 'transferring' | 'not-committed-in-term' | 'pending' | 'backpressure' | ConfChangeProblem;

/** Every ConfChangeRefusal, for the codec to check a forwarded refusal against. */
export const CONF_CHANGE_REFUSALS = ['not-leader', 'transferring', 'not-committed-in-term', 'pending', 'backpressure', 'malformed', 'already-member', 'not-learner', 'not-member', 'last-voter', 'already-bound', 'peer-id-taken', 'too-many-members'] as const;
// A refusal added to the type and not to the list would be dropped as malformed on the wire.
const everyRefusalListed: Exclude<ConfChangeRefusal, (typeof CONF_CHANGE_REFUSALS)[number]> extends never ? true : never = true;
void everyRefusalListed;

/**
 * The configuration's part of the node (the rules are configuration.ts's): the configuration a
 * member holds, as of the last conf change handed out for applying, and what follows from it
 * (its peers, whether it may campaign); whether a leader may propose a change now; the
 * configuration as of an index of the log. A change takes effect once committed, never once
 * appended, on every member alike (see RaftNode's #applyConfChanges).
 */
export class Membership {
  readonly #self: NodeId;
  /** The configuration at index 0, `RaftConfig.voters`: what a snapshot without one stands for. */
  readonly founding: Configuration;
  #conf: Configuration;
  /** Every member but this one, voters then learners: whom a leader replicates to. */
  #peers: readonly NodeId[];
  /** Set when the configuration changed since the last Ready, which reports it. */
  #changed = false;
  /**
   * The index of the last conf change this leader appended, or of its first entry (etcd's
   * pendingConfIndex): no other change is proposed until the log is applied up to it.
   */
  pendingConfIndex = 0;

  constructor(self: NodeId, founding: Configuration, conf: Configuration) {
    this.#self = self;
    this.founding = founding;
    this.#conf = conf;
    this.#peers = membersOf(conf).filter((id) => id !== self);
  }

  get conf(): Configuration {
    return this.#conf;
  }

  get peers(): readonly NodeId[] {
    return this.#peers;
  }

  /** Whether this member may campaign: it is a voter of its configuration (etcd's promotable). */
  get promotable(): boolean {
    return isVoter(this.#conf, this.#self);
  }

  /** Whether the configuration changed since the last Ready. */
  get changed(): boolean {
    return this.#changed;
  }

  /** The configuration changed, if it did since the last call: what a Ready reports. */
  takeChanged(): Configuration | null {
    const changed = this.#changed ? this.#conf : null;
    this.#changed = false;
    return changed;
  }

  /** Makes `conf` this member's configuration (the node acts on what follows: see its #switchConfiguration). */
  switchTo(conf: Configuration): void {
    this.#conf = conf;
    this.#peers = membersOf(conf).filter((id) => id !== this.#self);
    this.#changed = true;
  }

  /**
   * Why this leader may not propose `change` now (an earlier change not yet applied, or one that
   * does not apply to the current configuration), or null.
   */
  refusal(change: ConfChange, log: RaftLog): 'pending' | ConfChangeProblem | null {
    if (this.pendingConfIndex > log.applying) return 'pending';
    const next = applyChange(this.#conf, change);
    return 'problem' in next ? next.problem : null;
  }

  /**
   * The configuration as of the last entry of the log, committed or not (the thesis's rule,
   * section 4.1): the one held, with the conf changes after the entries handed out for
   * applying. What a vote request is judged by: a voter promoted by an entry this member holds
   * but has not yet applied asks for votes as one, and ignoring it could leave no candidate that
   * a majority answers (the last voters of a configuration, each waiting for the other). A
   * change that does not apply (it cannot, between honest members) is passed over.
   */
  latestInLog(log: RaftLog): Configuration {
    let conf = this.#conf;
    if (log.lastIndex() <= log.applying) return conf;
    for (const e of log.slice(log.applying + 1, log.lastIndex() + 1)) {
      if (e.type !== EntryType.ConfChange) continue;
      const change = decodeConfChange(e.data);
      const next = change === null ? null : applyChange(conf, change);
      if (next !== null && 'conf' in next) conf = next.conf;
    }
    return conf;
  }

  /**
   * The configuration as of `index`, from the latest snapshot's and the conf changes after it,
   * which the log still holds: it is never compacted past the latest snapshot.
   */
  configurationAt(index: number, snapshot: Snapshot, log: RaftLog): Configuration {
    let conf = snapshot.conf ?? this.founding;
    for (const e of log.slice(snapshot.index + 1, index + 1)) if (e.type === EntryType.ConfChange) conf = changedBy(conf, e);
    return conf;
  }
}

/**
 * The configuration after a committed conf-change entry. Only leaders write them, checked
 * against the configuration they apply to, and every member applies the same ones in the
 * same order: one that does not decode or apply means this member's log or state is wrong.
 */
export function changedBy(conf: Configuration, entry: Entry): Configuration {
  const change = decodeConfChange(entry.data);
  if (change === null) throw new InvariantError(`the conf change at ${entry.index} does not decode`);
  const next = applyChange(conf, change);
  if ('problem' in next) throw new InvariantError(`the conf change at ${entry.index} (${change.type} ${change.id}) does not apply: ${next.problem}`);
  return next.conf;
}
