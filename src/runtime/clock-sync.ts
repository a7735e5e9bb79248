import type { NodeId } from '../raft/types.js';
import type { ClockEstimate, HeartbeatClock, HeartbeatEcho, WireMessage } from '../transport/envelope.js';

/**
 * Default bound on how far a member's clock may be from the cluster's time before it is given no
 * work. Fire times do not depend on it (they follow the cluster's time, whatever the member's
 * clock says); it flags a clock that is plainly broken or unsynchronized.
 */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 1_000;

/** An estimate of a peer's clock older than this is stale: it no longer counts towards the cluster's time. */
export const CLOCK_OFFSET_MAX_AGE_MS = 10_000;

/** Samples kept per peer; the one with the shortest round trip is used (NTP's clock filter keeps 8). */
export const CLOCK_FILTER_SAMPLES = 8;

/** A sample whose round trip took longer is discarded: its offset may be wrong by half of it. */
export const MAX_CLOCK_SAMPLE_RTT_MS = 2_000;

/**
 * A clock may read whole milliseconds (a simulation's monotonic clock, `Date.now()`), so a round
 * trip computed from four readings may come out up to 2 ms below zero. Less than that is
 * impossible and marks a stamp as invalid.
 */
export const CLOCK_RESOLUTION_MS = 2;

/**
 * How fast two honest clocks may drift apart, as a fraction (500 ppm, NTP's bound). Two samples
 * of one peer whose monotonic offsets differ by more than their round trips and this drift allow
 * mean that one of the two processes restarted: its monotonic clock has a new origin.
 */
export const MAX_CLOCK_DRIFT = 500e-6;

/**
 * Bound on the offset between two members' monotonic clocks the arithmetic accepts (about a
 * century); beyond it a stamp is invalid.
 */
export const MAX_CLOCK_OFFSET_MS = 100 * 365 * 24 * 3600 * 1000;

/**
 * Bound on a clock reading, and on a wall clock minus a monotonic clock (a wall clock's reading,
 * give or take a process's uptime): ECMAScript's range of dates.
 */
export const MAX_CLOCK_TIME_MS = 8.64e15;

/** How many clocks make a median robust to one bad clock. */
export const ROBUST_CLOCK_COUNT = 3;

/**
 * A leader that has never known the cluster's time and sees too few clocks for a robust median
 * (a majority, but fewer than three and fewer than all members), and whose followers hold no
 * time either (see ClockSync), settles for the median of those it sees after leading this
 * long, so that a cluster started with a member down still agrees on one time. Until then, and
 * whenever a robust median is out of reach later, it holds over.
 */
export const CLOCK_BOOTSTRAP_AFTER_MS = 5_000;

/** One member's clock as this member estimates it. */
export interface ClockOffset {
  /** The member's wall clock minus the cluster's time, in ms. */
  readonly offsetMs: number;
  /** The round trip of the exchange behind the estimate: it is good to about half of it. */
  readonly rttMs: number;
  /** How long ago (on this member's monotonic clock) the estimate was made. */
  readonly ageMs: number;
}

export interface ClockSyncOptions {
  readonly self: NodeId;
  /** Every voting member, this one included. */
  readonly voters: readonly NodeId[];
  /** @default CLOCK_OFFSET_MAX_AGE_MS */
  readonly maxOffsetAgeMs?: number;
  /** @default CLOCK_FILTER_SAMPLES */
  readonly filterSamples?: number;
  /** @default MAX_CLOCK_SAMPLE_RTT_MS */
  readonly maxSampleRttMs?: number;
  /** @default CLOCK_BOOTSTRAP_AFTER_MS */
  readonly bootstrapAfterMs?: number;
}

interface Sample {
  /** θ: the peer's monotonic clock minus ours. */
  readonly offsetMs: number;
  readonly rttMs: number;
  /** When the sample was taken (t4), on our monotonic clock. */
  readonly at: number;
  /** The peer's wall clock minus its monotonic clock, when it answered (t3). */
  readonly wallOffsetMs: number;
  /** The peer's cluster time minus its monotonic clock then (the correction it held), if it knew the cluster's time. */
  readonly heldOffsetMs: number | undefined;
}

/** The latest stamped heartbeat from our leader, to echo on the next response to it. */
interface PendingEcho {
  readonly from: NodeId;
  /** The heartbeat's term: only a response of that term may carry the echo. */
  readonly term: number;
  /** t1, the leader's monotonic clock. */
  readonly sentAt: number;
  /** t2, our monotonic clock. */
  readonly receivedAt: number;
}

/**
 * Estimates clock offsets through Raft heartbeats, NTP-style, and from them the cluster's time.
 * It holds arithmetic only: no clock, no timer; every method takes the local readings as
 * arguments, `mono` from the monotonic clock (`Timers.now()`) and `wall` from the wall clock
 * (`Clock.now()`). The driver calls `stamp` on every message as it leaves and `receive` on
 * every message the protocol stepped.
 *
 * Why two clocks. A wall clock can be stepped (by NTP, by hand, by a VM resumed), frozen, or
 * drift; a monotonic clock only advances, at nearly the true rate, from an origin of its own
 * (the process's start). So every exchange is timed, and every correction kept, on monotonic
 * clocks, whose offsets never step; each member's wall clock enters only as one vote in a
 * median. Were the corrections relative to wall clocks, a member's cluster time would move
 * with its wall clock between estimates, a leader whose wall clock jumped would jump the
 * cluster's time until new samples came in, and a member whose wall clock jumped since its
 * last estimate would lead with a stale correction.
 *
 * - The leader stamps each heartbeat with its monotonic clock (t1). The follower notes when it
 *   arrived (t2, its monotonic clock) and echoes both on its next response to that leader, in
 *   the same term, with the response's own departure (t3) and its wall clock minus its
 *   monotonic clock at t3 (`wallOffset`). The leader, receiving it at t4, has one sample of
 *   the offset between the two monotonic clocks θ = ((t2 − t1) + (t3 − t4)) / 2, good to half
 *   the round trip (t4 − t1) − (t3 − t2). It keeps the last few samples per follower and uses
 *   the one with the shortest round trip; a sample that cannot agree with older ones (a
 *   process restarted, so its monotonic clock has a new origin) makes it forget them.
 * - Each member's wall clock, on the leader's monotonic scale, is one vote: a follower's is
 *   its latest `wallOffset` (wall clocks can step: the latest says where it is now) + its
 *   filtered θ; the leader's own, its wall clock minus its monotonic clock. M, the median of
 *   the votes of every member it has a fresh estimate of, its own included, is the cluster's
 *   time minus the leader's monotonic clock: one bad clock, the leader's or a follower's,
 *   stepped or not, cannot move it beyond the good ones. A leader that sees fewer than three
 *   clocks (and not all of them) cannot tell a bad clock from a good one and holds over the
 *   correction it had. One that has none (back from a crash, which took it) holds its
 *   followers' instead: from protocol 2 a follower that knows the cluster's time adds it to
 *   its echo (`clusterOffset`, its cluster time minus its monotonic clock, which θ puts on the
 *   leader's scale), and once a majority of the clocks is in sight the time held is the vote
 *   between the two it sees. Only when no follower holds one either (a cluster forming) does
 *   it settle for the median of a majority, after CLOCK_BOOTSTRAP_AFTER_MS.
 * - The leader sends each follower θ and M on its heartbeats; the follower's cluster time is
 *   its monotonic clock − θ + M. It takes them only if θ fits the heartbeat that carries them
 *   (its trip, t2 − t1 − θ, is neither below zero nor above the bound on round trips): a
 *   follower just restarted has a new monotonic origin, and the leader's θ is of the old one
 *   until it has sampled the new. Every member keeps its last correction, relative to its own
 *   monotonic clock, when its leader goes away (hold over): a step of its wall clock does not
 *   move it, and a new leader, even one with a bad clock, starts from the time the cluster had.
 * - Until a member has learned a correction, its cluster time is its wall clock. A member
 *   alone is its own cluster: its cluster time is its wall clock.
 *
 * Every number from a peer is checked; an invalid stamp is dropped and counted, never thrown.
 */
export class ClockSync {
  readonly #self: NodeId;
  #peers: ReadonlySet<NodeId>;
  #members: number;
  readonly #maxAgeMs: number;
  readonly #filterSamples: number;
  readonly #maxRttMs: number;
  readonly #bootstrapAfterMs: number;
  readonly #samples = new Map<NodeId, Sample[]>();
  /** Cluster time = local monotonic time + correction; null until this member has learned it. */
  #correction: number | null = null;
  /** When (local monotonic time) the correction was last confirmed: a leader's median, or a leader's estimate. */
  #correctionAt = 0;
  #correctionRttMs = 0;
  /** Since when (local monotonic time) this member leads, or null. */
  #leaderSince: number | null = null;
  /** The term of the latest heartbeat this member stamped: only echoes in responses of that term are sampled. */
  #stampTerm: number | null = null;
  #echo: PendingEcho | null = null;
  /** Stamps dropped as malformed, out of bounds or inconsistent (a faulty peer). */
  invalidStamps = 0;
  /** Honest samples dropped as too imprecise: the round trip exceeded its bound, or the echo came too late. */
  discardedSamples = 0;

  constructor(options: ClockSyncOptions) {
    this.#self = options.self;
    this.#peers = new Set(options.voters.filter((id) => id !== options.self));
    this.#members = this.#peers.size + 1;
    this.#maxAgeMs = options.maxOffsetAgeMs ?? CLOCK_OFFSET_MAX_AGE_MS;
    this.#filterSamples = Math.max(1, options.filterSamples ?? CLOCK_FILTER_SAMPLES);
    this.#maxRttMs = options.maxSampleRttMs ?? MAX_CLOCK_SAMPLE_RTT_MS;
    this.#bootstrapAfterMs = options.bootstrapAfterMs ?? CLOCK_BOOTSTRAP_AFTER_MS;
  }

  /**
   * The members now (the configuration's voters and learners, this one among them or not): only
   * their stamps count, and the samples of those removed are dropped. A member that was alone
   * ran on its wall clock, synced: given company at local times `mono` and `wall`, it holds
   * that time over as its correction, so that it stays synced (once synced, always) and its
   * cluster time does not jump, until the median of the clocks it then sees replaces it.
   */
  setMembers(ids: readonly NodeId[], mono: number, wall: number): void {
    const wasAlone = this.#members === 1;
    this.#peers = new Set(ids.filter((id) => id !== this.#self));
    this.#members = this.#peers.size + 1;
    if (wasAlone && this.#members > 1 && this.#correction === null && isTime(mono) && isTime(wall) && isTime(wall - mono)) {
      this.#correction = wall - mono;
      this.#correctionAt = mono;
      this.#correctionRttMs = 0;
    }
    for (const peer of [...this.#samples.keys()]) if (!this.#peers.has(peer)) this.#samples.delete(peer);
  }

  /** Whether this member knows the cluster's time (it stays known, held over, once learned). Alone, at once. */
  get synced(): boolean {
    return this.#members === 1 || this.#correction !== null;
  }

  /**
   * Cluster time minus this member's monotonic time; null until learned, and for a member
   * alone (whose cluster time is its wall clock).
   */
  get correctionMs(): number | null {
    return this.#correction;
  }

  /** The cluster's time when this member's monotonic clock reads `mono` and its wall clock `wall`. */
  clusterTime(mono: number, wall: number): number {
    const correction = this.#correction;
    return this.#members === 1 || correction === null ? wall : mono + correction;
  }

  /** This member started or stopped leading, at local monotonic time `mono`. */
  setLeading(leading: boolean, mono: number): void {
    if (!leading) {
      this.#leaderSince = null;
      return;
    }
    if (this.#leaderSince === null) this.#leaderSince = mono;
    this.#echo = null;
  }

  /**
   * The message `m` leaves at local times `mono` and `wall`: returns it with a clock stamp if it
   * carries one; a heartbeat's with `heardAt` when given (the follower's lease, lease-echoes.ts).
   */
  stamp(m: WireMessage, mono: number, wall: number, heardAt?: number): WireMessage {
    // A broken local clock must not make a heartbeat unsendable: it goes without a stamp.
    if (m.type === 'heartbeat') {
      if (!isTime(mono)) return m;
      this.#stampTerm = m.term;
      const estimate = this.#estimateFor(m.to, mono);
      if (heardAt === undefined) return { ...m, clock: estimate === undefined ? { sentAt: mono } : { sentAt: mono, estimate } };
      return { ...m, clock: estimate === undefined ? { sentAt: mono, heardAt } : { sentAt: mono, estimate, heardAt } };
    }
    if (m.type === 'heartbeat-resp') {
      const e = this.#echo;
      if (e === null || e.from !== m.to) return m;
      // An echo of another term's heartbeat (a leader since restarted, say) would mix two monotonic origins.
      if (e.term !== m.term) {
        this.#echo = null;
        return m;
      }
      const wallOffset = wall - mono;
      if (!isTime(mono) || !isTime(wall) || !isTime(wallOffset) || mono < e.receivedAt) return m;
      this.#echo = null;
      // The time this member holds, for a leader that knows none (see #recompute).
      const held = this.#members > 1 ? this.#correction : null;
      const echo = { echo: e.sentAt, receivedAt: e.receivedAt, sentAt: mono, wallOffset };
      return { ...m, clock: held === null || !isTime(held) ? echo : { ...echo, clusterOffset: held } };
    }
    return m;
  }

  /**
   * The message `m` arrived at local times `mono` and `wall` and the protocol stepped it;
   * `leader` is whom the protocol follows now. Only the leader's stamps are used, and only by
   * the leader its echoes.
   */
  receive(m: WireMessage, mono: number, wall: number, leader: NodeId | null): void {
    if ((m.type !== 'heartbeat' && m.type !== 'heartbeat-resp') || m.clock === undefined || !isTime(mono)) return;
    if (m.type === 'heartbeat') {
      const clock = this.#parseHeartbeatClock(m.clock);
      if (clock === null || m.from === this.#self) {
        this.invalidStamps++;
        return;
      }
      // A heartbeat from a deposed leader, or one the protocol refused: not our time.
      if (m.from !== leader) return;
      this.#echo = { from: m.from, term: m.term, sentAt: clock.sentAt, receivedAt: mono };
      if (clock.estimate === undefined) return;
      const { offsetMs, rttMs, clusterOffsetMs } = clock.estimate;
      const correction = clusterOffsetMs - offsetMs;
      if (!isTime(mono + correction)) {
        this.invalidStamps++;
        return;
      }
      // The estimate must fit the heartbeat that carries it: by θ, its trip took t2 - t1 - θ,
      // which is never below zero and rarely above the bound on round trips. One that does not
      // fit was measured on another incarnation of this process (a restart gave its monotonic
      // clock a new origin, and the leader has not sampled this one yet): it is not ours.
      const trip = mono - clock.sentAt - offsetMs;
      const slack = rttMs / 2 + CLOCK_RESOLUTION_MS + MAX_CLOCK_DRIFT * this.#maxAgeMs;
      if (trip < -slack || trip > this.#maxRttMs + slack) return;
      this.#correction = correction;
      this.#correctionAt = mono;
      this.#correctionRttMs = rttMs;
      return;
    }
    const echo = parseEcho(m.clock);
    if (echo === null) {
      this.invalidStamps++;
      return;
    }
    // Only an echo of a heartbeat we stamped in this term times an exchange of ours.
    if (leader !== this.#self || !this.#peers.has(m.from) || m.term !== this.#stampTerm) return;
    this.sample(m.from, echo.echo, echo.receivedAt, echo.sentAt, mono, echo.wallOffset, wall, echo.clusterOffset);
  }

  /**
   * One exchange with `peer`: the leader sent at t1 (its monotonic clock), the peer received at
   * t2 and answered at t3 (its monotonic clock), when its wall clock read `wallOffset` more than
   * its monotonic clock; the answer arrived at t4 (the leader's monotonic clock), when the
   * leader's wall clock read `wall`; `heldOffset`, the peer's cluster time minus its monotonic
   * clock then, if it knew the cluster's time. Returns whether the sample was kept.
   */
  sample(peer: NodeId, t1: number, t2: number, t3: number, t4: number, wallOffset: number, wall: number, heldOffset?: number): boolean {
    if (!isTime(t1) || !isTime(t2) || !isTime(t3) || !isTime(t4) || !isTime(wallOffset) || (heldOffset !== undefined && !isTime(heldOffset)) || !this.#peers.has(peer)) {
      this.invalidStamps++;
      return false;
    }
    const sinceSent = t4 - t1;
    const held = t3 - t2;
    const rtt = sinceSent - held;
    const offsetMs = (t2 - t1 + (t3 - t4)) / 2;
    // An echo of a send in our future, an answer before its question, a negative round trip, or
    // an absurd offset: no honest exchange between two running clocks gives these.
    if (sinceSent < 0 || held < 0 || rtt < -CLOCK_RESOLUTION_MS || Math.abs(offsetMs) > MAX_CLOCK_OFFSET_MS) {
      this.invalidStamps++;
      return false;
    }
    if (rtt > this.#maxRttMs || sinceSent > this.#maxAgeMs) {
      this.discardedSamples++;
      return false;
    }
    // The time the peer holds, on this member's monotonic scale, must be a time too.
    if (heldOffset !== undefined && !isTime(heldOffset + offsetMs)) {
      this.invalidStamps++;
      return false;
    }
    const sample: Sample = { offsetMs, rttMs: Math.max(0, rtt), at: t4, wallOffsetMs: wallOffset, heldOffsetMs: heldOffset };
    // The true offset lies within half the round trip of each honest sample. Older samples that
    // cannot share it with this one predate a restart of the peer (a new monotonic origin): they
    // are forgotten, or the filter would keep preferring them for as long as they stay in the window.
    const samples = (this.#samples.get(peer) ?? []).filter(
      (o) => Math.abs(o.offsetMs - offsetMs) <= (o.rttMs + sample.rttMs) / 2 + CLOCK_RESOLUTION_MS + MAX_CLOCK_DRIFT * Math.abs(t4 - o.at),
    );
    samples.push(sample);
    if (samples.length > this.#filterSamples) samples.shift();
    this.#samples.set(peer, samples);
    this.#recompute(t4, wall);
    return true;
  }

  /**
   * Every member's wall clock minus the cluster's time, as far as this member knows at local
   * times `mono` and `wall`: the leader knows itself and every member it has a fresh sample of;
   * a follower knows itself. Empty until synced; without itself if its wall clock is broken.
   */
  offsets(mono: number, wall: number): ReadonlyMap<NodeId, ClockOffset> {
    const result = new Map<NodeId, ClockOffset>();
    if (this.#members === 1) {
      result.set(this.#self, { offsetMs: 0, rttMs: 0, ageMs: 0 });
      return result;
    }
    const correction = this.#correction;
    if (correction === null) return result;
    if (isTime(mono) && isTime(wall)) {
      result.set(this.#self, { offsetMs: wall - mono - correction, rttMs: this.#correctionRttMs, ageMs: Math.max(0, mono - this.#correctionAt) });
    }
    if (this.#leaderSince === null) return result;
    for (const peer of this.#peers) {
      const c = this.#peerClock(peer, mono);
      if (c !== undefined) result.set(peer, { offsetMs: c.vote - correction, rttMs: c.sample.rttMs, ageMs: mono - c.sample.at });
    }
    return result;
  }

  /**
   * The fresh sample of `peer` with the shortest round trip (the latest among equals), and the
   * peer's wall clock minus our monotonic clock by it and the peer's latest wall offset; `held`,
   * the cluster's time the peer holds minus our monotonic clock, by its latest answer, if it
   * held one.
   */
  #peerClock(peer: NodeId, mono: number): { readonly sample: Sample; readonly vote: number; readonly held: number | null } | undefined {
    const samples = this.#samples.get(peer) ?? [];
    let best: Sample | undefined;
    for (const s of samples) {
      const age = mono - s.at;
      if (age < 0 || age > this.#maxAgeMs) continue;
      if (best === undefined || s.rttMs <= best.rttMs) best = s;
    }
    if (best === undefined) return undefined;
    // Samples are kept in the order they arrived: the last one has the peer's wall clock as it is now.
    const latest = samples[samples.length - 1] as Sample;
    return { sample: best, vote: latest.wallOffsetMs + best.offsetMs, held: latest.heldOffsetMs === undefined ? null : latest.heldOffsetMs + best.offsetMs };
  }

  /** On the leader, after a new sample at `mono` (`wall`): the median of the clocks it sees, once robust or settled (see below). */
  #recompute(mono: number, wall: number): void {
    const clocks: number[] = [];
    const heldByPeers: number[] = [];
    if (isTime(wall)) clocks.push(wall - mono);
    for (const peer of this.#peers) {
      const c = this.#peerClock(peer, mono);
      if (c === undefined) continue;
      clocks.push(c.vote);
      if (c.held !== null) heldByPeers.push(c.held);
    }
    const robust = clocks.length >= Math.min(this.#members, ROBUST_CLOCK_COUNT);
    // The time held: this leader's, or, when it holds none (back from a crash, which took it),
    // the time its followers hold.
    const held = this.#correction ?? (heldByPeers.length > 0 ? median(heldByPeers) : null);
    // A leader that holds no time of its own settles once it sees a majority of the clocks: at
    // once when its followers hold one, which then counts as the vote between the two clocks
    // (back from a crash with its clock a minute behind and one member down, it took its own
    // as the earlier of two, and every job waited a minute); else after CLOCK_BOOTSTRAP_AFTER_MS.
    const settles =
      this.#correction === null &&
      clocks.length * 2 > this.#members &&
      this.#leaderSince !== null &&
      (held !== null || mono - this.#leaderSince >= this.#bootstrapAfterMs);
    if (!robust && !settles) return;
    // Of an even number of clocks, the time held is one more vote: one clock of two that steps,
    // either way, then moves nothing (a step back of one of two clocks taken as the time left
    // every job waiting for the real time to reach its high-water mark), nor does a follower's
    // held time that both clocks disagree with. With no time held at all (a cluster forming),
    // the lower of the middle two (see median).
    const correction = median(clocks.length % 2 === 0 && held !== null && isTime(held) ? [...clocks, held] : clocks);
    // Votes each within the range of dates may still put the time past it.
    if (!isTime(mono + correction)) {
      this.invalidStamps++;
      return;
    }
    this.#correction = correction;
    this.#correctionAt = mono;
    this.#correctionRttMs = 0;
  }

  #estimateFor(peer: NodeId, mono: number): ClockEstimate | undefined {
    const correction = this.#correction;
    // A correction held over from a bad leader's time could exceed what peers accept: send none.
    if (correction === null || !isTime(correction)) return undefined;
    const s = this.#peerClock(peer, mono)?.sample;
    return s === undefined ? undefined : { offsetMs: s.offsetMs, rttMs: s.rttMs, clusterOffsetMs: correction };
  }

  #parseHeartbeatClock(value: unknown): HeartbeatClock | null {
    if (typeof value !== 'object' || value === null) return null;
    const { sentAt, estimate } = value as Record<string, unknown>;
    if (!isTime(sentAt)) return null;
    if (estimate === undefined) return { sentAt };
    if (typeof estimate !== 'object' || estimate === null) return null;
    const { offsetMs, rttMs, clusterOffsetMs } = estimate as Record<string, unknown>;
    if (!isOffset(offsetMs) || !isTime(clusterOffsetMs) || typeof rttMs !== 'number' || !(rttMs >= 0 && rttMs <= this.#maxRttMs)) return null;
    return { sentAt, estimate: { offsetMs, rttMs, clusterOffsetMs } };
  }
}

function parseEcho(value: unknown): HeartbeatEcho | null {
  if (typeof value !== 'object' || value === null) return null;
  const { echo, receivedAt, sentAt, wallOffset, clusterOffset } = value as Record<string, unknown>;
  if (!isTime(echo) || !isTime(receivedAt) || !isTime(sentAt) || !isTime(wallOffset)) return null;
  if (clusterOffset === undefined) return { echo, receivedAt, sentAt, wallOffset };
  return isTime(clusterOffset) ? { echo, receivedAt, sentAt, wallOffset, clusterOffset } : null;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_CLOCK_TIME_MS;
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_CLOCK_OFFSET_MS;
}

/**
 * The median; for an even count, the lower of the middle two. A leader that holds no time yet
 * (a cluster forming with a member down) and sees two clocks, one of them bad, takes the
 * earlier: a time run behind is put right as slots caught up (the catch-up policy), where a
 * time run ahead claims slots early, and once put right leaves every job waiting until the real
 * time reaches where it got (the high-water marks), and locks held as long. The mean of two ran
 * half the bad clock's error ahead (one clock an hour ahead: every job silent for half an hour
 * once the third member came back). A leader that holds a time adds it as a vote instead.
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1] as number;
}
