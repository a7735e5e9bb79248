import { JoinFailedError, MembershipChangeRefusedError, NotRunningError, VersionNotActiveError, VersionTooOldError, type CronraftError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { StorageIdentity } from '../storage/log-storage.js';
import type { Timers } from '../time/clock.js';
import { parsePeerAddress, type PeerAddress } from '../transport/address.js';
import type { JoinAnswer, JoinRequest } from '../transport/join-protocol.js';
import type { VersionSupport } from '../version/versions.js';

/**
 * Joining a running cluster (issue 18, README "Forming the cluster"): the rule a member with an
 * empty data directory follows to join the cluster its seeds run, or to form a new one
 * (findCluster), and the identity it starts with (startingIdentity). What members answer it is
 * join-server.ts.
 */

/** How long a member looking for a cluster waits between two rounds of asking its seeds. */
export const JOIN_RETRY_MS = 200;

export interface FindClusterOptions {
  readonly self: NodeId;
  /** The seeds: every peer address this member was given, itself left out. */
  readonly seeds: readonly PeerAddress[];
  /**
   * The addresses to ask in a round, the seeds' DNS names looked up again (seed-resolver.ts; a
   * Kubernetes headless Service names every ready pod), within `timeoutMs`, the round's time
   * left. @default the seeds as given
   */
  readonly resolve?: (timeoutMs: number) => Promise<readonly PeerAddress[]>;
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
  /**
   * The members found on the local network now (mDNS, transport/lan-discovery.ts), each with
   * the peer id it announced pinned: asked in every round besides the seeds, as addresses to
   * ask and nothing more. @default none
   */
  readonly discovered?: () => readonly PeerAddress[];
}

/** What a member with an empty data directory does: form a cluster, or join the one a seed runs. */
export type FoundCluster =
  | { readonly type: 'form' }
  | {
      readonly type: 'join';
      readonly clusterId: string;
      readonly foundingVoters: readonly NodeId[];
      readonly members: readonly NodeId[];
      /** The member whose answer accepted it, and the peer id its answer came from (null: not known). */
      readonly acceptedBy: { readonly id: NodeId; readonly peerId: string | null };
    };

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
 * A member asked while it looks itself answers it is forming (join-server.ts, JoinServer.looking).
 *
 * A member given no seeds (its voters are itself alone) looks only with mDNS, through the
 * members it `discovered`: it has no co-founders to form with, so it forms alone once
 * `timeoutMs` passed with no running cluster seen. Two such members started together would
 * then form two clusters; so a looker yields to one of a lower member id (as strings compare)
 * that answered it is forming too: it keeps asking, past its own timeout, until `timeoutMs`
 * after that looker last answered so (it formed meanwhile and accepts it, or it is gone and
 * this member forms; a cluster seen running by then and not accepting it fails its start).
 */
export async function findCluster(o: FindClusterOptions): Promise<FoundCluster> {
  const startedAt = o.timers.now();
  const deadline = startedAt + o.timeoutMs;
  const request: JoinRequest = { id: o.self, protocol: o.reads.protocol, stateMachine: o.reads.stateMachine };
  // Once a seed showed a running cluster, forming a second one would split the members.
  let runningSeen = false;
  // A cluster that does not run the membership version yet may raise it soon (its members all upgraded).
  let versionRefusal: Extract<JoinAnswer, { type: 'refused' }> | null = null;
  const last = new Map<NodeId, string>();
  // With no seeds, this member looks through mDNS alone, and yields to a looker of a lower id.
  const alone = o.voters.length === 1;
  let yieldUntil = -Infinity;
  for (;;) {
    if (o.stopped()) throw new NotRunningError('stopped');
    const until = Math.max(deadline, yieldUntil);
    // Whole milliseconds: the monotonic time base has fractions, and AbortSignal.timeout wants none.
    const remainingMs = Math.max(1, Math.ceil(until - o.timers.now()));
    const askMs = Math.min(o.askTimeoutMs, remainingMs);
    const seeds = o.resolve === undefined ? o.seeds : await o.resolve(askMs);
    const targets = withDiscovered(o.self, seeds, o.discovered?.() ?? []);
    // Why a peer gave no answer, for the error (a handshake refused under another secret reads
    // otherwise as a peer that is down).
    const failures = new Map<NodeId, string>();
    const failed = (id: NodeId) => (error: unknown): null => {
      failures.set(id, firstLine(error));
      return null;
    };
    const asked = await Promise.all(targets.map(async (target) => [target.id, await o.ask(target, request, askMs).catch(failed(target.id))] as const));
    // A follower names the leader: asked once in the round, however many followers name it.
    const leaders = new Set<NodeId>();
    for (const [, answer] of asked) if (answer?.type === 'redirect' && !targets.some((target) => target.id === answer.leader)) leaders.add(answer.leader);
    const fromLeaders = await Promise.all([...leaders].map(async (id) => [id, await askAt(o, id, request, askMs)] as const));
    let forming = 0;
    let lowerLooking = false;
    // A round the deadline cut short (its asks given less than their whole time) replaces no
    // answer a peer gave before with its silence: the error says what the peers answered.
    const cutShort = askMs < o.askTimeoutMs;
    for (const [id, answer] of [...asked, ...fromLeaders]) {
      const why = failures.get(id);
      const before = last.get(id);
      if (answer === null && cutShort && before !== undefined && !before.startsWith('no answer')) continue;
      last.set(id, answer === null ? (why === undefined ? 'no answer' : `no answer (${why})`) : describeAnswer(answer));
      if (answer === null) continue;
      if (answer.type === 'accepted') return { type: 'join', clusterId: answer.clusterId, foundingVoters: answer.foundingVoters, members: answer.members, acceptedBy: { id, peerId: answer.peerId ?? null } };
      if (answer.type === 'refused' && answer.reason !== 'version-not-active') throw refusalError(answer, o);
      if (answer.type === 'refused') versionRefusal = answer;
      if (answer.type === 'forming') {
        if (sameIds(answer.voters, o.voters)) forming++;
        if (id < o.self) lowerLooking = true;
      } else {
        runningSeen = true;
      }
    }
    // With a majority of the voters it was given, itself included, forming the same cluster, no
    // cluster of those voters runs: they form it (the others find it running as they come up).
    // A member alone in its voters is that majority by itself: it forms only at the timeout.
    if (!alone && !runningSeen && 2 * (forming + 1) > o.voters.length) return { type: 'form' };
    const now = o.timers.now();
    if (alone && lowerLooking) yieldUntil = now + o.timeoutMs;
    const end = Math.max(deadline, yieldUntil);
    if (now >= end) {
      if (!runningSeen && (o.selfInSeeds || alone)) return { type: 'form' };
      if (versionRefusal !== null) throw refusalError(versionRefusal, o);
      // The time it looked: past `timeoutMs` when it waited for a looker of a lower id (mDNS).
      const answers = [...last].map(([id, what]) => `${id}: ${what}`).join('; ');
      // A peer under another secret completes no handshake: to the joiner it is a peer that
      // gives no answer, as a down one (it counts the handshake as failed: state().transport).
      const none = last.size > 0 && [...last.values()].every((what) => what.startsWith('no answer'));
      throw new JoinFailedError(Math.round(now - startedAt), none ? `${answers} (no peer answered: down, unreachable, or running with another secret)` : answers);
    }
    await sleep(o.timers, Math.min(JOIN_RETRY_MS, end - now));
  }
}

/**
 * The addresses to ask in a round: the seeds, then the members discovered that are none of
 * them (an announcement never replaces an address the user gave), this member left out, at
 * most once each.
 */
function withDiscovered(self: NodeId, seeds: readonly PeerAddress[], discovered: readonly PeerAddress[]): PeerAddress[] {
  const targets: PeerAddress[] = [];
  const seen = new Set<NodeId>([self]);
  for (const address of [...seeds, ...discovered]) {
    if (seen.has(address.id)) continue;
    seen.add(address.id);
    targets.push(address);
  }
  return targets;
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

/** An error's first line, bounded: what a join error shows of why a peer gave no answer. */
function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split('\n')[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

function refusalError(answer: Extract<JoinAnswer, { type: 'refused' }>, o: FindClusterOptions): CronraftError {
  if (answer.reason === 'version-not-active') return new VersionNotActiveError('Joining a running cluster', answer.needs, answer.active);
  if (answer.reason === 'version-too-old') return new VersionTooOldError(answer.needs, o.reads.stateMachine.max, 'The cluster this member joins');
  return new MembershipChangeRefusedError(answer.reason, `add ${o.self} as a learner`, answer.reason === 'peer-id-mismatch' ? PEER_ID_MISMATCH_REMEDY : undefined);
}

/** What a member refused for its key does: the configuration binds its address to another key. */
const PEER_ID_MISMATCH_REMEDY =
  "The configuration binds this address to another key: put the member's old peer-key back in its data directory, or, when it is lost, remove the member (removeMember, npx cronraft remove-member) and start it again with an empty data directory to join as a new member";

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
  /** The member whose answer added it, with the peer id that answer came from: bound until the log binds it (Libp2pTransport.bindUntilConfigured). */
  readonly acceptedBy?: { readonly id: NodeId; readonly peerId: string | null };
}

/**
 * The identity a member starts with: a member with data starts as before (a joined one with the
 * founding voters its storage kept); a member with an empty data directory that `looks` (it
 * has seeds, or finds members by mDNS) asks them (`find`, see findCluster) and joins the
 * cluster one runs, or forms its own as a founding member with `clusterId` and `voters` (a seed
 * that has it in its configuration already, a founding member that lost its data or a member on
 * memory storage, counts as forming). One that does not look forms its own at once.
 */
export async function startingIdentity(
  stored: StorageIdentity | null,
  own: { readonly clusterId: string; readonly voters: readonly NodeId[]; readonly looks: boolean },
  find: () => Promise<FoundCluster>,
): Promise<StartingIdentity> {
  const founding: StartingIdentity = { clusterId: own.clusterId, foundingVoters: own.voters, joined: false, members: [] };
  if (stored !== null) return stored.foundingVoters === undefined ? founding : { clusterId: stored.clusterId, foundingVoters: stored.foundingVoters, joined: true, members: [] };
  if (!own.looks) return founding;
  const found = await find();
  if (found.type === 'form' || (found.clusterId === own.clusterId && sameIds(found.foundingVoters, own.voters))) return founding;
  return { clusterId: found.clusterId, foundingVoters: found.foundingVoters, joined: true, members: found.members, acceptedBy: found.acceptedBy };
}
