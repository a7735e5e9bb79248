import { setTimeout as sleep } from 'node:timers/promises';
import { CronraftError, MembershipChangeRefusedError, NotLeaderError, VersionNotActiveError } from '../errors.js';
import { boundPeerId, isMember, membersOf } from '../raft/configuration.js';
import type { NodeId } from '../raft/types.js';
import { parsePeerAddress } from '../transport/address.js';
import type { JoinAnswer, JoinRequest } from '../transport/join-protocol.js';
import { inRange, MEMBERSHIP_VERSION } from '../version/versions.js';
import type { Member } from './member.js';

/**
 * What every member answers a member that asks to join (issue 18, README "Forming the
 * cluster"); the joiner's side is join.ts.
 */

/** Joins a leader handles at once (each dials the joiner back, proposes a change and waits for it to commit); more are told to retry. */
export const MAX_JOINS_IN_FLIGHT = 4;

/**
 * Learners a leader does not hear from past which it adds no other: joiners that went away once
 * added (a crash loop under new addresses, or someone with the secret asking under made-up ids)
 * would otherwise fill the configuration until the dead-member rule removes them, one at a time,
 * each dialled and sent heartbeats meanwhile. A joiner added is heard from as it takes the log,
 * within a heartbeat or two, so honest ones joining together stay well below it.
 */
export const MAX_SILENT_LEARNERS = 8;

/** How long a leader tries to reach a joiner at its id, as the key it asked with, before it answers that it could not. */
export const DIAL_BACK_TIMEOUT_MS = 2000;

/**
 * Resolves once this member reached `peerId` at the address `id` on a connection of its own;
 * rejects, saying why, when it could not (the transport's `reaches`).
 */
export type DialBack = (id: NodeId, peerId: string, signal: AbortSignal) => Promise<void>;

/** Why a member refuses a joiner (`version-not-active` is asked again until the joiner gives up; the others end its start). */
type Refusal = 'version-not-active' | 'version-too-old' | 'bad-id' | 'self' | 'peer-id-mismatch' | (string & {});

/** What a member answered joiners, by answer, for `state().joins`. */
export interface JoinCounts extends Record<JoinAnswer['type'], number> {
  /** Join requests read. */
  requests: number;
  /** Join streams whose request could not be read (too large, malformed, too slow): reset. */
  unreadable: number;
  /** Joiners the leader could not reach at their id as the key they asked with (answered `retry`, saying so). */
  unreachable: number;
  /** Joiners the leader put off while MAX_SILENT_LEARNERS learners were silent (answered `retry`, saying so). */
  silentLearners: number;
}

type Serving =
  | { readonly phase: 'looking'; readonly voters: readonly NodeId[] }
  | { readonly phase: 'member'; readonly member: Member; readonly clusterId: string; readonly foundingVoters: readonly NodeId[]; readonly dialBack: DialBack }
  | { readonly phase: 'stopped' };

/**
 * What a member answers a joiner. A member still looking for a cluster says it is forming,
 * with the voters it was given; a member of a cluster accepts a joiner already in its
 * configuration at once (a founding member with an empty data directory, or a joiner whose
 * answer was lost), sends the others to the leader, and the leader adds them as learners
 * (bound to the peer id of the connection they asked on), answering once the change committed.
 * The leader first dials the joiner back at its id: an id that is another member's address
 * written otherwise (`localhost:7001` for `127.0.0.1:7001`), or an address the members cannot
 * reach, would make a learner, then a voter, that the others cannot dial, which counts towards
 * the majority and never answers; such a joiner is told to retry, with why.
 */
export class JoinServer {
  readonly counts: JoinCounts = { requests: 0, accepted: 0, redirect: 0, retry: 0, forming: 0, refused: 0, removed: 0, unreadable: 0, unreachable: 0, silentLearners: 0 };
  readonly #self: NodeId;
  #serving: Serving = { phase: 'stopped' };
  /** Joins the leader is adding, by id: a joiner asking again (through another seed) waits for the same change. */
  readonly #adding = new Map<NodeId, { readonly peer: string; readonly answer: Promise<JoinAnswer> }>();

  constructor(self: NodeId) {
    this.#self = self;
  }

  /** While this member looks for a cluster itself, with the founding voters it was given. */
  looking(voters: readonly NodeId[]): void {
    this.#serving = { phase: 'looking', voters };
  }

  /** Once this member runs, in the cluster `clusterId` formed with `foundingVoters`; `dialBack` reaches a joiner at its id. */
  serve(member: Member, clusterId: string, foundingVoters: readonly NodeId[], dialBack: DialBack): void {
    this.#serving = { phase: 'member', member, clusterId, foundingVoters, dialBack };
  }

  stop(): void {
    this.#serving = { phase: 'stopped' };
  }

  /** A request could not be read. */
  unreadable(): void {
    this.counts.unreadable++;
  }

  /** The answer to `request`, asked on a connection authenticated as `remotePeer`. */
  async answer(request: JoinRequest, remotePeer: string): Promise<JoinAnswer> {
    this.counts.requests++;
    const answer = await this.#answer(request, remotePeer);
    this.counts[answer.type]++;
    return answer;
  }

  async #answer(request: JoinRequest, remotePeer: string): Promise<JoinAnswer> {
    const serving = this.#serving;
    if (serving.phase === 'stopped') return retry('this member is not running');
    const problem = idProblem(request.id, this.#self);
    if (problem !== null) return refused(problem);
    if (serving.phase === 'looking') return request.member === undefined ? { type: 'forming', voters: serving.voters } : retry('this member looks for a cluster');
    const { member } = serving;
    const conf = member.configuration.conf;
    if (request.member !== undefined) return stillMember(request, request.member, serving.clusterId, member);
    const accepted: JoinAnswer = { type: 'accepted', clusterId: serving.clusterId, foundingVoters: serving.foundingVoters, members: membersOf(conf) };
    const active = member.versions.active;
    if (!inRange(request.stateMachine, active)) return refused('version-too-old', active, active);
    if (isMember(conf, request.id)) {
      // A member of the configuration asks only from its own key, once one is bound to it.
      const bound = boundPeerId(conf, request.id);
      return bound === null || bound === remotePeer ? accepted : refused('peer-id-mismatch');
    }
    const node = member.driver.node;
    if (node.role !== 'leader') return node.leader === null ? retry('no leader is known') : { type: 'redirect', leader: node.leader };
    if (active < MEMBERSHIP_VERSION) return refused('version-not-active', MEMBERSHIP_VERSION, active);
    // Bound to the peer id of the connection it asked on: only that key may speak for it later.
    const adding = this.#adding.get(request.id);
    if (adding !== undefined) return adding.peer === remotePeer ? adding.answer : retry('another peer is joining under this id');
    if (this.#adding.size >= MAX_JOINS_IN_FLIGHT) return retry('the leader is adding other members');
    // The joins under way count too: each is a learner the leader may not hear from once added.
    const silent = member.silentLearners();
    if (silent + this.#adding.size >= MAX_SILENT_LEARNERS) {
      this.counts.silentLearners++;
      return retry(`the leader hears from ${silent} learners no more, and adds none until they answer or are removed as dead (deadMemberAfterMs)`);
    }
    const answer = this.#add(serving.dialBack, member, request.id, remotePeer, accepted);
    this.#adding.set(request.id, { peer: remotePeer, answer });
    try {
      return await answer;
    } finally {
      this.#adding.delete(request.id);
    }
  }

  /**
   * Adds `id` as a learner bound to `peerId` once it was reached at `id` as `peerId`. A dial that
   * fails is answered alike, and only once DIAL_BACK_TIMEOUT_MS passed since it began: whoever
   * holds the secret could otherwise ask under any address and learn from the answer, or its
   * time, what listens there, as seen from the leader.
   */
  async #add(dialBack: DialBack, member: Member, id: NodeId, peerId: string, accepted: JoinAnswer): Promise<JoinAnswer> {
    const began = performance.now();
    try {
      await dialBack(id, peerId, AbortSignal.timeout(DIAL_BACK_TIMEOUT_MS));
    } catch {
      this.counts.unreachable++;
      await sleep(Math.max(0, DIAL_BACK_TIMEOUT_MS - (performance.now() - began)));
      return retry(UNREACHABLE_DETAIL);
    }
    return member.proposeConfChange({ type: 'add-learner', id, peerId }).then(
      () => ({ ...accepted, members: membersOf(member.configuration.conf) }),
      (error: unknown) => answerOfFailure(error),
    );
  }
}

/** What a joiner the leader could not dial back is told (the joiner names its own id in the error it fails with). */
const UNREACHABLE_DETAIL =
  "the leader could not dial this member's id and reach its key there: its id must be an address every member can dial as this member (listen, or advertise), not another's";

/**
 * The answer to a member that asks whether it still is one (removal-probe.ts): `removed` once
 * this member applied the log at least as far as the asker knows it committed, with a
 * configuration without it. The asker's own configuration as of that point held it (it would
 * have stopped as removed otherwise), and every member applies the same committed entries, so a
 * removal committed in between: this member need not lead to know it. Nothing is proposed.
 */
function stillMember(request: JoinRequest, asker: NonNullable<JoinRequest['member']>, clusterId: string, member: Member): JoinAnswer {
  if (asker.clusterId !== clusterId) return refused('other-cluster');
  if (isMember(member.configuration.conf, request.id)) return { type: 'retry', detail: 'a member of this configuration' };
  const applied = member.driver.node.log.applied;
  return applied >= asker.committed ? { type: 'removed', index: applied } : retry('this member applied less than the asker committed');
}

/** Why a joiner's id cannot be added, or null: it must be an address others can dial, as written canonically. */
function idProblem(id: NodeId, self: NodeId): Refusal | null {
  if (id === self) return 'self';
  try {
    const address = parsePeerAddress(id, 'id');
    return address.id === id && address.peerId === null ? null : 'bad-id';
  } catch {
    return 'bad-id';
  }
}

function answerOfFailure(error: unknown): JoinAnswer {
  if (error instanceof NotLeaderError) return error.leader === null ? retry('no leader is known') : { type: 'redirect', leader: error.leader };
  if (error instanceof MembershipChangeRefusedError) {
    // An earlier change not applied yet, or a new leader that has not committed in its term: both pass.
    if (error.reason === 'pending' || error.reason === 'not-committed-in-term') return retry(`the leader cannot change the configuration now: ${error.reason}`);
    return refused(error.reason);
  }
  if (error instanceof VersionNotActiveError) return refused('version-not-active', error.needs, error.active);
  // A timeout, a dropped proposal, backpressure, a leader stepping down: worth asking again.
  return retry(error instanceof CronraftError ? error.code : 'the change did not commit');
}

function retry(detail: string): JoinAnswer {
  return { type: 'retry', detail };
}

function refused(reason: Refusal, needs = 0, active = 0): JoinAnswer {
  return { type: 'refused', reason, needs, active };
}
