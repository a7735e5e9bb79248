import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { JoinFailedError, MembershipChangeRefusedError, VersionNotActiveError } from '../../src/errors.js';
import type { NodeId } from '../../src/raft/types.js';
import { findCluster, startingIdentity, type FindClusterOptions } from '../../src/runtime/join.js';
import type { TimerHandle, Timers } from '../../src/time/clock.js';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import { withPrefix } from '../../src/transport/framing.js';
import { decodeJoinAnswer, decodeJoinRequest, encodeJoinAnswer, encodeJoinRequest, JoinFormatError, type JoinAnswer } from '../../src/transport/join-protocol.js';
import { SUPPORTED } from '../../src/version/versions.js';

/** Virtual time that jumps to each timer as it is set: a look of seconds takes no real time. */
function jumpingTimers(): Timers {
  let now = 0;
  return {
    now: () => now,
    setTimeout(run: () => void, delayMs: number): TimerHandle {
      now += delayMs;
      queueMicrotask(run);
      return {};
    },
    clearTimeout: () => undefined,
  };
}

const A = '127.0.0.1:7001';
const B = '127.0.0.1:7002';
const C = '127.0.0.1:7003';
const D = '127.0.0.1:7004';

/** `self` looking through `seeds`, each answering as `answers` says (null: unreachable), the calls counted. */
function looking(self: NodeId, seeds: NodeId[], selfInSeeds: boolean, answers: (seed: NodeId, round: number) => JoinAnswer | null): FindClusterOptions & { asked: NodeId[] } {
  const asked: NodeId[] = [];
  const rounds = new Map<NodeId, number>();
  return {
    asked,
    self,
    seeds: seeds.map((s) => parsePeerAddress(s, 'seed')),
    voters: [self, ...seeds].sort(),
    selfInSeeds,
    reads: SUPPORTED,
    timeoutMs: 1000,
    askTimeoutMs: 100,
    timers: jumpingTimers(),
    stopped: () => false,
    ask: (address) => {
      asked.push(address.id);
      const round = rounds.get(address.id) ?? 0;
      rounds.set(address.id, round + 1);
      const answer = answers(address.id, round);
      return answer === null ? Promise.reject(new Error('unreachable')) : Promise.resolve(answer);
    },
  };
}

const founding = [A, B, C];
const accepted: JoinAnswer = { type: 'accepted', clusterId: 'c1', foundingVoters: founding, members: [...founding, D], peerId: 'peer-of-b' };

describe('the forming rule (findCluster)', () => {
  it('joins the cluster a seed runs, asking the leader a follower names once', async () => {
    const o = looking(D, founding, false, (seed) => (seed === A ? { type: 'redirect', leader: B } : seed === B ? accepted : null));
    // The member that accepted it, with the peer id its answer came from: the joiner pins it.
    expect(await findCluster(o)).toEqual({ type: 'join', clusterId: 'c1', foundingVoters: founding, members: [...founding, D], acceptedBy: { id: B, peerId: 'peer-of-b' } });
    expect(o.asked.filter((id) => id === B)).toHaveLength(1);
  });

  it('follows a redirect to a leader that is not among its seeds', async () => {
    const o = looking(D, [A], false, (seed) => (seed === A ? { type: 'redirect', leader: C } : seed === C ? accepted : null));
    expect(await findCluster(o)).toMatchObject({ type: 'join', clusterId: 'c1' });
  });

  it('looks its seeds up again every round, and joins through an address a name came to have (a pod that came up)', async () => {
    const o = looking(D, [A], false, (seed) => (seed === C ? accepted : null));
    const rounds: number[] = [];
    // A seed given by name: in the first round it names only A, which does not answer; then C too.
    const resolve = async (): Promise<PeerAddress[]> => {
      rounds.push(rounds.length);
      return rounds.length === 1 ? [...o.seeds] : [...o.seeds, parsePeerAddress(C, 'seed'), parsePeerAddress(D, 'seed')];
    };
    const resolved: FindClusterOptions = { ...o, resolve };
    expect(await findCluster(resolved)).toMatchObject({ type: 'join', clusterId: 'c1' });
    expect(rounds).toEqual([0, 1]);
    // Never itself, though the name resolves to its own address too.
    expect(o.asked).toEqual([A, A, C]);
  });

  it('forms with a majority of co-founders looking with the same voters, at once', async () => {
    const o = looking(A, [B, C], true, (seed) => (seed === B ? { type: 'forming', voters: founding } : null));
    expect(await findCluster(o)).toEqual({ type: 'form' });
    expect(o.asked).toEqual([B, C]);
  });

  it('does not count seeds looking with other voters, and forms alone only at the timeout, when in its own list', async () => {
    const o = looking(A, [B, C], true, () => ({ type: 'forming', voters: [A, B] }));
    expect(await findCluster(o)).toEqual({ type: 'form' });
    expect(o.asked.length).toBeGreaterThan(2);
  });

  it('never forms once a seed showed a running cluster, nor when not in its own list', async () => {
    const running = looking(A, [B, C], true, (seed, round) => (seed === B && round === 0 ? { type: 'retry', detail: 'no leader is known' } : null));
    await expect(findCluster(running)).rejects.toBeInstanceOf(JoinFailedError);
    const stranger = looking(D, founding, false, () => null);
    const error = await findCluster(stranger).then(() => null, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'CRONRAFT_JOIN_FAILED' });
    // Why each gave none, and, none answering at all, what that may mean (a peer under another
    // secret completes no handshake: the joiner said "no answer" as for a down one).
    expect((error as Error).message).toContain(`${A}: no answer (unreachable)`);
    expect((error as Error).message).toContain('no peer answered: down, unreachable, or running with another secret');
    const answered = await findCluster(looking(A, [B, C], true, (seed) => (seed === B ? { type: 'retry', detail: 'no leader is known' } : null))).then(() => null, (e: Error) => e);
    expect(answered).toBeInstanceOf(JoinFailedError);
    expect(answered?.message).not.toContain('another secret');
  });

  it('names what each peer answered last, not its silence in a round the deadline cut short', async () => {
    const detail = "the leader could not dial this member's id and reach its key";
    // B answers while an ask has its whole time, and times out on one the deadline cut short.
    const o = looking(D, [B], false, () => null);
    const ask: FindClusterOptions['ask'] = (address, request, timeoutMs) => {
      o.asked.push(address.id);
      return timeoutMs < o.askTimeoutMs ? Promise.reject(new Error('The operation was aborted due to timeout')) : Promise.resolve({ type: 'retry', detail });
    };
    const error = await findCluster({ ...o, ask }).then(() => null, (e: Error) => e);
    expect(error).toBeInstanceOf(JoinFailedError);
    expect(error?.message).toContain(`${B}: a cluster runs (${detail})`);
    expect(error?.message).not.toContain('no answer');
    // Silent on an ask with its whole time, it is said to be: down since it last answered.
    const silent = looking(D, [B], false, (_seed, round) => (round === 0 ? { type: 'retry', detail } : null));
    expect((await findCluster(silent).then(() => null, (e: Error) => e))?.message).toContain(`${B}: no answer (unreachable)`);
  });

  it('asks again while the cluster runs version 1, and then fails with VersionNotActiveError', async () => {
    const later = looking(D, [A], false, (_seed, round) => (round < 3 ? { type: 'refused', reason: 'version-not-active', needs: 2, active: 1 } : accepted));
    expect(await findCluster(later)).toMatchObject({ type: 'join' });
    const never = looking(D, [A], false, () => ({ type: 'refused', reason: 'version-not-active', needs: 2, active: 1 }));
    await expect(findCluster(never)).rejects.toBeInstanceOf(VersionNotActiveError);
  });

  it('fails at once with the reason of a refusal for good', async () => {
    const o = looking(D, founding, false, (seed) => (seed === A ? { type: 'refused', reason: 'peer-id-mismatch', needs: 0, active: 0 } : null));
    const error = await findCluster(o).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(MembershipChangeRefusedError);
    expect(error).toMatchObject({ reason: 'peer-id-mismatch' });
    // It says what to do: the old key back, or a removal and a new member.
    expect((error as Error).message).toMatch(/peer-key back .* remove the member/);
    expect(o.asked).toHaveLength(3);
  });
});

describe('the forming rule with mDNS (findCluster, discovered members)', () => {
  const P = '12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL';
  /** A member found by mDNS: its address with the peer id it announced pinned. */
  const found = (id: NodeId): PeerAddress => parsePeerAddress(`${id}/p2p/${P}`, 'announcement');
  /** `self`, given no seeds, discovering `discovered`, each answering as `answers` says, at the virtual time of asking. */
  function alone(self: NodeId, discovered: () => NodeId[], answers: (id: NodeId, nowMs: number) => JoinAnswer | null): FindClusterOptions & { asked: Array<[NodeId, number]> } {
    const o = looking(self, [], false, () => null);
    const asked: Array<[NodeId, number]> = [];
    return {
      ...o,
      asked,
      discovered: () => discovered().map(found),
      ask: (address) => {
        const nowMs = o.timers.now();
        asked.push([address.id, nowMs]);
        expect(address.peerId).toBe(P);
        const answer = answers(address.id, nowMs);
        return answer === null ? Promise.reject(new Error('unreachable')) : Promise.resolve(answer);
      },
    };
  }
  const formingAs = (id: NodeId): JoinAnswer => ({ type: 'forming', voters: [id] });

  it('with nobody found, forms alone at the timeout, not before', async () => {
    const o = alone(A, () => [], () => null);
    expect(await findCluster(o)).toEqual({ type: 'form' });
    expect(o.timers.now()).toBeGreaterThanOrEqual(o.timeoutMs);
  });

  it('joins a running cluster it found, at its pinned peer id, and asks a member found later too', async () => {
    let round = 0;
    const o = alone(D, () => (round++ < 2 ? [] : [A]), (id) => (id === A ? accepted : null));
    expect(await findCluster(o)).toMatchObject({ type: 'join', clusterId: 'c1' });
    expect(o.asked.map(([id]) => id)).toEqual([A]);
  });

  it('forms at its timeout when the only other looker has a higher id', async () => {
    const o = alone(A, () => [B], (id) => (id === B ? formingAs(B) : null));
    expect(await findCluster(o)).toEqual({ type: 'form' });
    expect(o.timers.now()).toBeLessThan(o.timeoutMs + 200 + 1);
  });

  it('yields to a looker of a lower id past its own timeout, and joins the cluster that looker forms', async () => {
    // A forms at 1400 (its own timeout, started later), then runs without a leader, then accepts.
    const answerOfA = (nowMs: number): JoinAnswer => (nowMs < 1400 ? formingAs(A) : nowMs < 1800 ? { type: 'retry', detail: 'no leader is known' } : accepted);
    const o = alone(B, () => [A], (id, nowMs) => (id === A ? answerOfA(nowMs) : null));
    expect(await findCluster(o)).toMatchObject({ type: 'join', clusterId: 'c1' });
    expect(o.timers.now()).toBeGreaterThan(o.timeoutMs);
  });

  it('forms once the lower looker it yielded to stopped answering for a timeout, and fails if it runs and never takes it', async () => {
    const gone = alone(B, () => [A], (id, nowMs) => (id === A && nowMs < 600 ? formingAs(A) : null));
    expect(await findCluster(gone)).toEqual({ type: 'form' });
    // A answered forming last at 400: B yields until 1400, then forms.
    expect(gone.timers.now()).toBeGreaterThanOrEqual(1400);
    const stuck = alone(B, () => [A], (id, nowMs) => (id === A ? (nowMs < 600 ? formingAs(A) : { type: 'retry', detail: 'no leader is known' }) : null));
    await expect(findCluster(stuck)).rejects.toBeInstanceOf(JoinFailedError);
    expect(stuck.timers.now()).toBeGreaterThanOrEqual(1400);
  });

  it('asks its seeds as given and each member found once: an announcement never replaces a seed', async () => {
    const o = looking(D, [A], false, (seed) => (seed === C ? accepted : null));
    const asked: PeerAddress[] = [];
    const ask: FindClusterOptions['ask'] = (address, request, timeoutMs) => {
      asked.push(address);
      return o.ask(address, request, timeoutMs);
    };
    expect(await findCluster({ ...o, ask, discovered: () => [found(A), found(C), found(C), found(D)] })).toMatchObject({ type: 'join' });
    expect(asked.map((a) => [a.id, a.peerId])).toEqual([
      [A, null],
      [C, P],
    ]);
  });
});

describe('the identity a member starts with (startingIdentity)', () => {
  const own = { clusterId: 'mine', voters: [A, B, C], looks: true };
  const never = (): never => {
    throw new Error('asked the seeds');
  };

  it('comes from its storage when it has data, a joined member keeping its founding voters, and asks nobody', async () => {
    expect(await startingIdentity({ clusterId: 'mine', nodeId: A }, own, never)).toEqual({ clusterId: 'mine', foundingVoters: own.voters, joined: false, members: [] });
    expect(await startingIdentity({ clusterId: 'c1', nodeId: D, foundingVoters: founding }, own, never)).toEqual({ clusterId: 'c1', foundingVoters: founding, joined: true, members: [] });
  });

  it('is its own for a founding member told its own cluster runs, and the cluster found for a joiner', async () => {
    const same: JoinAnswer = { type: 'accepted', clusterId: 'mine', foundingVoters: [A, B, C], members: [A, B, C] };
    const acceptedBy = { id: B, peerId: 'peer-of-b' };
    expect(await startingIdentity(null, own, () => Promise.resolve({ ...same, type: 'join', acceptedBy }))).toMatchObject({ clusterId: 'mine', joined: false });
    expect(await startingIdentity(null, own, () => Promise.resolve({ type: 'join', clusterId: 'c1', foundingVoters: [B, C, D], members: [B, C, D, A], acceptedBy }))).toEqual({
      clusterId: 'c1',
      foundingVoters: [B, C, D],
      joined: true,
      members: [B, C, D, A],
      acceptedBy,
    });
    expect(await startingIdentity(null, { ...own, looks: false }, never)).toMatchObject({ clusterId: 'mine', joined: false });
  });
});

describe('join requests and answers on the wire', () => {
  it('round-trip', () => {
    const request = { id: A, protocol: { min: 1, max: 2 }, stateMachine: { min: 1, max: 2 } };
    expect(decodeJoinRequest(unprefixed(encodeJoinRequest(request)))).toEqual(request);
    const check = { ...request, member: { clusterId: 'c1', committed: 42 } };
    expect(decodeJoinRequest(unprefixed(encodeJoinRequest(check)))).toEqual(check);
    // The peer id an accepted answer came from is the asker's to set: none on the wire.
    for (const answer of [{ ...accepted, peerId: undefined }, { type: 'redirect', leader: B }, { type: 'retry', detail: 'x' }, { type: 'forming', voters: founding }, { type: 'refused', reason: 'self', needs: 0, active: 0 }, { type: 'removed', index: 7 }] as JoinAnswer[]) {
      expect(decodeJoinAnswer(unprefixed(encodeJoinAnswer(answer)))).toEqual(answer);
    }
  });

  it.each([
    ['not CBOR', Uint8Array.of(0xff, 0x00)],
    ['a map', encode({ id: A })],
    ['another format', encode([9, A, 1, 2, 1, 2])],
    ['an empty id', encode([1, '', 1, 2, 1, 2])],
    ['an id past the bound', encode([1, 'x'.repeat(301), 1, 2, 1, 2])],
    ['a version past the bound', encode([1, A, 1, 1e9, 1, 2])],
    ['an inverted range', encode([1, A, 2, 1, 1, 2])],
    ['a fraction', encode([1, A, 1.5, 2, 1, 2])],
    ['a membership check without its index', encode([1, A, 1, 2, 1, 2, 'c1'])],
    ['a membership check with an empty cluster id', encode([1, A, 1, 2, 1, 2, '', 3])],
    ['a membership check with an index past the bound', encode([1, A, 1, 2, 1, 2, 'c1', 2 ** 52])],
    ['a membership check with a negative index', encode([1, A, 1, 2, 1, 2, 'c1', -1])],
  ])('a request that is %s is refused', (_name, bytes) => {
    expect(() => decodeJoinRequest(bytes)).toThrow(JoinFormatError);
  });

  it('an answer too large or of an unknown kind is refused', () => {
    expect(() => decodeJoinAnswer(encode([1, 'accepted', 'c', Array.from({ length: 2000 }, (_, i) => `10.0.0.1:${i + 1}`), []]))).toThrow(JoinFormatError);
    expect(() => decodeJoinAnswer(encode([1, 'welcome']))).toThrow(JoinFormatError);
    expect(() => decodeJoinAnswer(encode([1, 'accepted', 'c', [], []]))).toThrow(JoinFormatError);
    expect(() => decodeJoinAnswer(encode([1, 'removed', 1.5]))).toThrow(JoinFormatError);
    expect(() => decodeJoinAnswer(encode([1, 'removed']))).toThrow(JoinFormatError);
  });
});

/** The frame without its length prefix (one byte for these small frames). */
function unprefixed(frame: Uint8Array): Uint8Array {
  const length = frame.length - 1 > 0x7f ? 2 : 1;
  expect(withPrefix(frame.subarray(length))).toEqual(frame);
  return frame.subarray(length);
}
