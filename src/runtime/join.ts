import { CronraftError, JoinFailedError, MembershipChangeRefusedError, NotLeaderError, NotRunningError, VersionNotActiveError, VersionTooOldError } from '../errors.js';
import { boundPeerId, isMember, membersOf } from '../raft/configuration.js';
import type { NodeId } from '../raft/types.js';
import type { StorageIdentity } from '../storage/log-storage.js';
import type { Timers } from '../time/clock.js';
import { parsePeerAddress, type PeerAddress } from '../transport/address.js';
import type { JoinAnswer, JoinRequest } from '../transport/join-protocol.js';
import { inRange, MEMBERSHIP_VERSION, type VersionSupport } from '../version/versions.js';
import type { Member } from './member.js';

/**
 * Joining a running cluster (issue 18, README "Forming the cluster"): the rule a member with an
 * empty data directory follows to join the cluster its seeds run, or to form a new one
 * (findCluster), and what every member answers a joiner (JoinServer).
 */

/** How long a member looking for a cluster waits between two rounds of asking its seeds. */
export const JOIN_RETRY_MS = 200;

/** Joins a leader handles at once (each proposes a change and waits for it to commit); more are told to retry. */
export const MAX_JOINS_IN_FLIGHT = 4;

/** Reasons of a refusal the joiner cannot cure by asking again. */
type Refusal = 'version-not-active' | 'version-too-old' | 'bad-id' | 'self' | 'peer-id-mismatch' | (string & {});

/** What a member answered joiners, by answer, for `state().joins`. */
export interface JoinCounts extends Record<JoinAnswer['type'], number> {
  /** Join requests read. */
  requests: number;
  /** Join streams whose request could not be read (too large, malformed, too slow): reset. */
  unreadable: number;
}

type Serving =
  | { readonly phase: 'looking'; readonly voters: readonly NodeId[] }
  | { readonly phase: 'member'; readonly member: Member; readonly clusterId: string; readonly foundingVoters: readonly NodeId[] }
  | { readonly phase: 'stopped' };

/**
 * What a member answers a joiner. A member still looking for a cluster says it is forming,
 * with the voters it was given; a member of a cluster accepts a joiner already in its
 * configuration at once (a founding member with an empty data directory, or a joiner whose
 * answer was lost), sends the others to the leader, and the leader adds them as learners
 * (bound to the peer id of the connection they asked on), answering once the change committed.
 */
export class JoinServer {
  readonly counts: JoinCounts = { requests: 0, accepted: 0, redirect: 0, retry: 0, forming: 0, refused: 0, unreadable: 0 };
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

  /** Once this member runs, in the cluster `clusterId` formed with `foundingVoters`. */
  serve(member: Member, clusterId: string, foundingVoters: readonly NodeId[]): void {
    this.#serving = { phase: 'member', member, clusterId, foundingVoters };
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
    if (serving.phase === 'looking') return { type: 'forming', voters: serving.voters };
    const { member } = serving;
    const conf = member.configuration.conf;
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
    const answer = member.proposeConfChange({ type: 'add-learner', id: request.id, peerId: remotePeer }).then(
      () => ({ ...accepted, members: membersOf(member.configuration.conf) }),
      (error: unknown) => answerOfFailure(error),
    );
    this.#adding.set(request.id, { peer: remotePeer, answer });
    try {
      return await answer;
    } finally {
      this.#adding.delete(request.id);
    }
  }
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

export interface FindClusterOptions {
  readonly self: NodeId;
  /** The seeds: every peer address this member was given, itself left out. */
  readonly seeds: readonly PeerAddress[];
  /** The voters this member would form a cluster with: itself and its seeds, sorted. */
  readonly voters: readonly NodeId[];
  /** Whether its own address was among the addresses it was given: a founding member's list. */
  readonly selfInSeeds: boolean;
  /** What this member reads: a cluster at a version it cannot read refuses it. */
  readonly reads: VersionSupport;
  /** How long to look before giving up (or forming, see findCluster). */
  readonly timeoutMs: number;
  readonly timers: Timers;
  /** Asks one member (join-protocol.ts requestJoin over the transport); rejects when it cannot. */
  readonly ask: (address: PeerAddress, request: JoinRequest, timeoutMs: number) => Promise<JoinAnswer>;
  /** The most time one question may take. */
  readonly askTimeoutMs: number;
  /** Whether the member stopped meanwhile: it looks no further. */
  readonly stopped: () => boolean;
}

/** What a member with an empty data directory does: form a cluster, or join the one a seed runs. */
export type FoundCluster =
  | { readonly type: 'form' }
  | { readonly type: 'join'; readonly clusterId: string; readonly foundingVoters: readonly NodeId[]; readonly members: readonly NodeId[] };

/**
 * The forming rule (README "Forming the cluster"). A member with an empty data directory asks
 * every seed, every JOIN_RETRY_MS, until
 * - one accepts it (a running cluster added it, or has it in its configuration already): it
 *   joins that cluster;
 * - one refuses it for good: start() rejects with the refusal's error;
 * - a majority of the voters it was given, itself included, answer that they are forming a
 *   cluster with the same voters, and none shows it a running cluster: they form it together;
 * - `timeoutMs` passes: it forms the cluster alone if no seed showed it a running cluster and
 *   its own address is among the seeds (a founding member whose peers are not up yet);
 *   otherwise start() rejects with a JoinFailedError (`CRONRAFT_JOIN_FAILED`).
 * A member asked by a seed that is forming answers it is forming too (JoinServer.looking).
 */
export async function findCluster(o: FindClusterOptions): Promise<FoundCluster> {
  const deadline = o.timers.now() + o.timeoutMs;
  const request: JoinRequest = { id: o.self, protocol: o.reads.protocol, stateMachine: o.reads.stateMachine };
  // Once a seed showed a running cluster, forming a second one would split the members.
  let runningSeen = false;
  // A cluster that does not run the membership version yet may raise it soon (its members all upgraded).
  let versionRefusal: Extract<JoinAnswer, { type: 'refused' }> | null = null;
  const last = new Map<NodeId, string>();
  for (;;) {
    if (o.stopped()) throw new NotRunningError('stopped');
    // Whole milliseconds: the monotonic time base has fractions, and AbortSignal.timeout wants none.
    const remainingMs = Math.max(1, Math.ceil(deadline - o.timers.now()));
    const askMs = Math.min(o.askTimeoutMs, remainingMs);
    const asked = await Promise.all(o.seeds.map(async (seed) => [seed.id, await o.ask(seed, request, askMs).catch(() => null)] as const));
    // A follower names the leader: asked once in the round, however many followers name it.
    const leaders = new Set<NodeId>();
    for (const [, answer] of asked) if (answer?.type === 'redirect' && !o.seeds.some((seed) => seed.id === answer.leader)) leaders.add(answer.leader);
    const fromLeaders = await Promise.all([...leaders].map(async (id) => [id, await askAt(o, id, request, askMs)] as const));
    let forming = 0;
    for (const [id, answer] of [...asked, ...fromLeaders]) {
      last.set(id, answer === null ? 'no answer' : describeAnswer(answer));
      if (answer === null) continue;
      if (answer.type === 'accepted') return { type: 'join', clusterId: answer.clusterId, foundingVoters: answer.foundingVoters, members: answer.members };
      if (answer.type === 'refused' && answer.reason !== 'version-not-active') throw refusalError(answer, o);
      if (answer.type === 'refused') versionRefusal = answer;
      if (answer.type === 'forming') {
        if (sameIds(answer.voters, o.voters)) forming++;
      } else {
        runningSeen = true;
      }
    }
    // With a majority of the voters it was given, itself included, forming the same cluster, no
    // cluster of those voters runs: they form it (the others find it running as they come up).
    if (!runningSeen && 2 * (forming + 1) > o.voters.length) return { type: 'form' };
    const now = o.timers.now();
    if (now >= deadline) {
      if (!runningSeen && o.selfInSeeds) return { type: 'form' };
      if (versionRefusal !== null) throw refusalError(versionRefusal, o);
      throw new JoinFailedError(o.timeoutMs, [...last].map(([id, what]) => `${id}: ${what}`).join('; '));
    }
    await sleep(o.timers, Math.min(JOIN_RETRY_MS, deadline - now));
  }
}

/** Asks the member `id` names (a leader a follower named); null when it cannot be reached or is no address. */
async function askAt(o: FindClusterOptions, id: NodeId, request: JoinRequest, askMs: number): Promise<JoinAnswer | null> {
  let address: PeerAddress;
  try {
    address = parsePeerAddress(id, 'leader');
  } catch {
    return null;
  }
  return o.ask(address, request, askMs).catch(() => null);
}

function refusalError(answer: Extract<JoinAnswer, { type: 'refused' }>, o: FindClusterOptions): CronraftError {
  if (answer.reason === 'version-not-active') return new VersionNotActiveError('Joining a running cluster', answer.needs, answer.active);
  if (answer.reason === 'version-too-old') return new VersionTooOldError(answer.needs, o.reads.stateMachine.max, 'The cluster this member joins');
  return new MembershipChangeRefusedError(answer.reason, `add ${o.self} as a learner`);
}

function describeAnswer(answer: JoinAnswer): string {
  switch (answer.type) {
    case 'redirect':
      return `a follower of ${answer.leader}`;
    case 'retry':
      return `a cluster runs (${answer.detail})`;
    case 'forming':
      return `forming with ${answer.voters.join(', ')}`;
    default:
      return answer.type;
  }
}

function sameIds(a: readonly NodeId[], b: readonly NodeId[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function sleep(timers: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, ms));
}

/** Who this member is at start: the cluster it is in, the voters that formed it, and whether it joined. */
export interface StartingIdentity {
  readonly clusterId: string;
  readonly foundingVoters: readonly NodeId[];
  /** It joined a running cluster (its storage keeps the founding voters). */
  readonly joined: boolean;
  /** The members as the cluster that added it reported them: its transport's peers until it replays the log. */
  readonly members: readonly NodeId[];
}

/**
 * The identity a member starts with: a member with data starts as before (a joined one with the
 * founding voters its storage kept); a member with an empty data directory and seeds asks them
 * (`find`, see findCluster) and joins the cluster one runs, or forms its own as a founding
 * member with `clusterId` and `voters` (a seed that has it in its configuration already, a
 * founding member that lost its data or a member on memory storage, counts as forming).
 */
export async function startingIdentity(
  stored: StorageIdentity | null,
  own: { readonly clusterId: string; readonly voters: readonly NodeId[]; readonly hasSeeds: boolean },
  find: () => Promise<FoundCluster>,
): Promise<StartingIdentity> {
  const founding: StartingIdentity = { clusterId: own.clusterId, foundingVoters: own.voters, joined: false, members: [] };
  if (stored !== null) return stored.foundingVoters === undefined ? founding : { clusterId: stored.clusterId, foundingVoters: stored.foundingVoters, joined: true, members: [] };
  if (!own.hasSeeds) return founding;
  const found = await find();
  if (found.type === 'form' || (found.clusterId === own.clusterId && sameIds(found.foundingVoters, own.voters))) return founding;
  return { clusterId: found.clusterId, foundingVoters: found.foundingVoters, joined: true, members: found.members };
}
