import { decodeConfChange } from '../src/raft/conf-change.js';
import { applyChange, configurationOf, sameConfiguration } from '../src/raft/configuration.js';
import { EntryType, type Configuration, type Entry, type NodeId } from '../src/raft/types.js';
import { RemovedError } from '../src/errors.js';
import type { WireMessage } from '../src/transport/envelope.js';
import type { SimMember } from './member.js';
import type { Report } from './violations.js';

/**
 * Whether a majority of `a`'s voters and a majority of `b`'s can be disjoint: a quorum of each
 * takes the voters the other lacks first, then what it still needs from the voters they share;
 * they are disjoint when the shared voters are enough for both. Two configurations that differ by
 * one voter (one change at a time) never have disjoint majorities.
 */
export function disjointMajorities(a: readonly NodeId[], b: readonly NodeId[]): boolean {
  const shared = a.filter((id) => b.includes(id)).length;
  const fromShared = (own: readonly NodeId[]): number => Math.max(0, Math.floor(own.length / 2) + 1 - (own.length - shared));
  return fromShared(a) + fromShared(b) <= shared;
}

// The checker's own reading of a configuration, not the production code's (a planted bug may be there).
const isVoter = (conf: Configuration, id: NodeId): boolean => conf.voters.includes(id);
const isMember = (conf: Configuration, id: NodeId): boolean => conf.voters.includes(id) || conf.learners.includes(id);

/** The messages only a leader sends, in the term it leads. */
const LEADER_MESSAGES: ReadonlySet<WireMessage['type']> = new Set(['append', 'heartbeat', 'snapshot']);

function describe(conf: Configuration): string {
  return `voters ${conf.voters.join(',') || 'none'}${conf.learners.length > 0 ? `, learners ${conf.learners.join(',')}` : ''}`;
}

/** What is checked of one member's configuration after each event, so that an unchanged one is not compared again. */
interface Seen {
  readonly conf: Configuration;
  readonly changes: number;
}

/**
 * The checkers of configuration changes (a membership fault in the swarm, simulations/membership.ts):
 * - `disjoint-majorities`: every configuration the log commits (as first applied anywhere, the
 *   production rules of configuration.ts applied to its conf-change entries) has no majority
 *   disjoint from a majority of the one before it, so two leaders can never be elected, or two
 *   entries committed, by two sets of voters that do not meet;
 * - `configuration`: a member's configuration in force is the committed one as of the index it
 *   applied, after every event: never one applied before it commits, never one lost or gone
 *   back after a restart or a snapshot (the committed configuration is durable);
 * - `removed-disruption`: a member removed (or never added) moves no member's term once that
 *   member has applied the configuration without it, but as the leader of that term; and no
 *   member grants a vote but to a voter of the configuration it holds or of the latest one in
 *   its log, or to an asker whose log is ahead of its own (node.ts, takesVoteRequest). A removal applies on commit, as in etcd: voters that hold it uncommitted (or lack
 *   it) still hold the member removed as a voter, and may elect it before they learn of the
 *   commit; its majority meets every majority of the configuration without it (one change at a
 *   time), and members that applied its removal follow it, as any member follows a leader its
 *   configuration does not list. Each vote it won was judged by the rule above as it was sent.
 *   And a member stops as removed (CRONRAFT_REMOVED) only once its removal is committed.
 */
/** Vote requests remembered per pair of members (see ConfigurationChecker's #asks). */
const ASKS_KEPT = 8;

export class ConfigurationChecker {
  readonly #report: Report;
  readonly founding: Configuration;
  /** The committed configurations after the founding one, with the index of the change that made each, in log order. */
  readonly #changes: Array<{ readonly index: number; readonly conf: Configuration }> = [];
  readonly #seen = new Map<NodeId, Seen>();
  /** Members already reported as holding a wrong configuration (one report each, per process life). */
  readonly #reported = new WeakSet<object>();

  /**
   * The last vote requests each member took from each other one (keyed `to from`, at most
   * ASKS_KEPT each), and whether the asker's log was ahead of the taker's: the one case a vote
   * may go to a non-voter. More than the last: a grant goes out once the vote is durable, and
   * the asker's next request (a pre-vote of the next term) may come in before it.
   */
  readonly #asks = new Map<string, Array<{ readonly type: WireMessage['type']; readonly term: number; readonly ahead: boolean }>>();

  readonly #leaderOf: (term: number) => NodeId | undefined;
  readonly #onCommitted: (before: Configuration, after: Configuration) => void;

  /**
   * `leaderOf` names the member that became leader of a term, if one did so far (the safety
   * checker's record); `onCommitted` hears of each configuration the log commits, with the one
   * before it.
   */
  constructor(report: Report, founding: readonly NodeId[], leaderOf: (term: number) => NodeId | undefined, onCommitted: (before: Configuration, after: Configuration) => void = () => undefined) {
    this.#report = report;
    this.founding = configurationOf(founding);
    this.#leaderOf = leaderOf;
    this.#onCommitted = onCommitted;
  }

  /** The configuration the log committed last (as first applied anywhere). */
  get latest(): Configuration {
    return this.#changes[this.#changes.length - 1]?.conf ?? this.founding;
  }

  /** Conf changes committed so far. */
  get changes(): number {
    return this.#changes.length;
  }

  /** The committed configuration as of `index`, and how many changes it follows. */
  #at(index: number): Seen {
    let n = this.#changes.length;
    while (n > 0 && (this.#changes[n - 1] as { index: number }).index > index) n--;
    return { conf: n === 0 ? this.founding : (this.#changes[n - 1] as { conf: Configuration }).conf, changes: n };
  }

  onApplied(t: number, entry: Entry): void {
    if (entry.type !== EntryType.ConfChange) return;
    const last = this.#changes[this.#changes.length - 1];
    // Applied before (the safety checker compares what each member applies at an index).
    if (last !== undefined && entry.index <= last.index) return;
    const before = this.latest;
    const change = decodeConfChange(entry.data);
    const next = change === null ? null : applyChange(before, change);
    if (next === null || 'problem' in next) {
      this.#report(t, 'configuration', `the conf change committed at ${entry.index} does not apply to the configuration before it (${describe(before)}): ${next === null ? 'it does not decode' : next.problem}`);
      return;
    }
    if (disjointMajorities(before.voters, next.conf.voters)) {
      this.#report(t, 'disjoint-majorities', `the configuration committed at ${entry.index} (${describe(next.conf)}) has a majority disjoint from one of the configuration before it (${describe(before)})`);
    }
    this.#changes.push({ index: entry.index, conf: next.conf });
    this.#onCommitted(before, next.conf);
  }

  /** After each event: every live member's configuration in force is the committed one as of its applied index. */
  afterEvent(t: number, members: readonly SimMember[]): void {
    for (const m of members) {
      const driver = m.driver;
      if (driver === null) continue;
      const node = driver.node;
      const conf = node.configuration;
      const seen = this.#seen.get(m.id);
      // Most events move no configuration: the same one (a restart or a snapshot makes another),
      // and no committed change between the index it was checked at and the one applied now.
      const next = seen === undefined ? undefined : this.#changes[seen.changes];
      if (seen !== undefined && seen.conf === conf && (next === undefined || next.index > node.log.applied)) continue;
      const expected = this.#at(node.log.applied);
      this.#seen.set(m.id, { conf, changes: expected.changes });
      if (sameConfiguration(conf, expected.conf) || this.#reported.has(driver)) continue;
      this.#reported.add(driver);
      this.#report(t, 'configuration', `${m.id} has ${describe(conf)} in force, applied up to ${node.log.applied}, where the log committed ${describe(expected.conf)} as of it`);
    }
  }

  /**
   * `to` took in `m` and its term went from `termBefore` to `term`: a message from a member
   * neither in `to`'s configuration nor in the committed one must not move it, unless it is the
   * leader's of the term it carries (see the class's comment).
   */
  onReceived(t: number, to: SimMember, m: WireMessage, termBefore: number): void {
    const node = to.driver?.node;
    if (node === undefined || node.term <= termBefore) return;
    if (isMember(node.configuration, m.from) || isMember(this.latest, m.from)) return;
    if (this.#askedAhead(to.id, m.from, m.type, m.term)) return;
    const fromLeader = LEADER_MESSAGES.has(m.type);
    if (fromLeader && this.#leaderOf(m.term) === m.from) return;
    this.#report(t, 'removed-disruption', `${m.from}, not a member, moved ${to.id}'s term from ${termBefore} to ${node.term} with a ${m.type}${fromLeader ? ' of a term it does not lead' : ''}`);
  }

  /** `to` is about to take `m`: a vote request is remembered, with whether the asker's log is ahead of `to`'s. */
  onReceiving(to: SimMember, m: WireMessage): void {
    const node = to.driver?.node;
    if (node === undefined || (m.type !== 'vote' && m.type !== 'prevote')) return;
    const key = `${to.id} ${m.from}`;
    const asks = this.#asks.get(key) ?? [];
    asks.push({ type: m.type, term: m.term, ahead: node.log.isBehind(m.lastIndex, m.lastTerm) });
    if (asks.length > ASKS_KEPT) asks.shift();
    this.#asks.set(key, asks);
  }

  /** Whether the latest vote request of this type and term that `to` took from `from` came from a log ahead of its own. */
  #askedAhead(to: NodeId, from: NodeId, type: WireMessage['type'], term: number): boolean {
    const asks = this.#asks.get(`${to} ${from}`) ?? [];
    for (let i = asks.length - 1; i >= 0; i--) {
      const ask = asks[i] as { type: WireMessage['type']; term: number; ahead: boolean };
      if (ask.type === type && ask.term === term) return ask.ahead;
    }
    return false;
  }

  /**
   * `from` sends `m`: a vote it grants goes only to a voter of the configuration it holds, or of
   * the latest one in its log, committed or not (with the conf changes after the entries handed
   * out), or to an asker whose log was ahead of its own (node.ts, takesVoteRequest).
   */
  onSend(t: number, from: SimMember, m: WireMessage): void {
    if ((m.type !== 'vote-resp' && m.type !== 'prevote-resp') || m.reject) return;
    const node = from.driver?.node;
    if (node === undefined) return;
    if (this.#askedAhead(from.id, m.to, m.type === 'vote-resp' ? 'vote' : 'prevote', m.term)) return;
    let conf = node.configuration;
    if (isVoter(conf, m.to)) return;
    for (const e of node.log.slice(node.log.applying + 1, node.log.lastIndex() + 1)) {
      const change = e.type === EntryType.ConfChange ? decodeConfChange(e.data) : null;
      const next = change === null ? null : applyChange(conf, change);
      if (next !== null && 'conf' in next) conf = next.conf;
    }
    if (isVoter(conf, m.to)) return;
    this.#report(t, 'removed-disruption', `${from.id} granted ${m.to}, a voter neither of its configuration nor of the latest one in its log (${describe(conf)}), its ${m.type === 'vote-resp' ? 'vote' : 'pre-vote'} in term ${m.term}`);
  }

  /**
   * Whether `error` (a member's fatal one) is the expected end of a member removed: a
   * RemovedError, once its removal is committed. One while the committed configuration still
   * holds it is reported as `configuration`.
   */
  isExpectedRemoval(t: number, id: NodeId, error: unknown): boolean {
    if (!(error instanceof RemovedError)) return false;
    if (isMember(this.latest, id)) this.#report(t, 'configuration', `${id} stopped as removed, but the committed configuration (${describe(this.latest)}) holds it`);
    return true;
  }
}
