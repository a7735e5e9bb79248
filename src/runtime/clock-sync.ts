import type { ClockEstimate, HeartbeatClock, HeartbeatEcho, Message, NodeId } from '../raft/types.js';

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
 * Clocks read whole milliseconds (`Date.now()`), so a round trip computed from four readings may
 * come out up to 2 ms below zero. Less than that is impossible and marks a stamp as invalid.
 */
export const CLOCK_RESOLUTION_MS = 2;

/**
 * How fast two honest clocks may drift apart, as a fraction (500 ppm, NTP's bound). Two samples
 * of one peer whose offsets differ by more than their round trips and this drift allow mean that
 * a clock was stepped.
 */
export const MAX_CLOCK_DRIFT = 500e-6;

/** Bound on a clock offset the arithmetic accepts (about a century); beyond it a stamp is invalid. */
export const MAX_CLOCK_OFFSET_MS = 100 * 365 * 24 * 3600 * 1000;

/** Bound on a clock reading: ECMAScript's range of dates. */
export const MAX_CLOCK_TIME_MS = 8.64e15;

/** How many clocks make a median robust to one bad clock. */
export const ROBUST_CLOCK_COUNT = 3;

/**
 * A leader that has never known the cluster's time and sees too few clocks for a robust median
 * (a majority, but fewer than three and fewer than all members) settles for the median of those
 * it sees after leading this long, so that a cluster started with a member down still agrees on
 * one time. Until then, and whenever a robust median is out of reach later, it holds over.
 */
export const CLOCK_BOOTSTRAP_AFTER_MS = 5_000;

/** One member's clock as this member estimates it. */
export interface ClockOffset {
  /** The member's clock minus the cluster's time, in ms. */
  readonly offsetMs: number;
  /** The round trip of the exchange behind the estimate: it is good to about half of it. */
  readonly rttMs: number;
  /** How long ago (on this member's clock) the estimate was made. */
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
  /** The peer's clock minus ours. */
  readonly offsetMs: number;
  readonly rttMs: number;
  /** When the sample was taken, on our clock. */
  readonly at: number;
}

/**
 * Estimates clock offsets through Raft heartbeats, NTP-style, and from them the cluster's time.
 * It holds arithmetic only: no clock, no timer; every method takes the local time as an argument.
 * The driver calls `stamp` on every message as it leaves and `receive` on every message the
 * protocol stepped.
 *
 * - The leader stamps each heartbeat with its clock (t1). The follower notes when it arrived
 *   (t2, its clock) and echoes both on its next response to that leader, with the response's
 *   own departure (t3). The leader, receiving it at t4, has one sample of the follower's offset
 *   θ = ((t2 − t1) + (t3 − t4)) / 2, good to half the round trip (t4 − t1) − (t3 − t2). It keeps
 *   the last few samples per follower and uses the one with the shortest round trip; a sample
 *   that cannot agree with older ones (a clock was stepped) makes it forget them.
 * - The cluster's time is the leader's clock plus M, the median of the offsets of every clock it
 *   has a fresh estimate of, its own (0) included: one bad clock, the leader's or a follower's,
 *   cannot move it beyond the good ones. A leader that sees fewer than three clocks (and not all
 *   of them) cannot tell a bad clock from a good one and holds over the correction it had (one
 *   that never had any settles for the median of a majority after CLOCK_BOOTSTRAP_AFTER_MS).
 * - The leader sends each follower θ and M on its heartbeats; the follower's cluster time is its
 *   clock − θ + M. Every member keeps its last correction when its leader goes away (hold over),
 *   so a new leader, even one with a bad clock, starts from the time the cluster had.
 *
 * Every number from a peer is checked; an invalid stamp is dropped and counted, never thrown.
 */
export class ClockSync {
  readonly #self: NodeId;
  readonly #peers: ReadonlySet<NodeId>;
  readonly #members: number;
  readonly #maxAgeMs: number;
  readonly #filterSamples: number;
  readonly #maxRttMs: number;
  readonly #bootstrapAfterMs: number;
  readonly #samples = new Map<NodeId, Sample[]>();
  /** Cluster time = local time + correction; null until this member has learned it. */
  #correction: number | null = null;
  /** When (local time) the correction was last confirmed: a leader's median, or a leader's estimate. */
  #correctionAt = 0;
  #correctionRttMs = 0;
  /** Since when (local time) this member leads, or null. */
  #leaderSince: number | null = null;
  /** The latest stamped heartbeat from our leader, to echo on the next response to it. */
  #echo: { readonly from: NodeId; readonly sentAt: number; readonly receivedAt: number } | null = null;
  /** Stamps dropped as malformed, out of bounds or inconsistent (a faulty peer, or a clock stepped mid-exchange). */
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
    // Alone, a member's clock is the cluster's.
    if (this.#members === 1) this.#correction = 0;
  }

  /** Whether this member knows the cluster's time (it stays known, held over, once learned). */
  get synced(): boolean {
    return this.#correction !== null;
  }

  /** Cluster time minus local time; 0 until synced. */
  get correctionMs(): number {
    return this.#correction ?? 0;
  }

  /** The cluster's time at local time `localNow`. */
  clusterTime(localNow: number): number {
    return localNow + this.correctionMs;
  }

  /** This member started or stopped leading, at local time `now`. */
  setLeading(leading: boolean, now: number): void {
    if (!leading) {
      this.#leaderSince = null;
      return;
    }
    if (this.#leaderSince === null) this.#leaderSince = now;
    this.#echo = null;
  }

  /** The message `m` leaves at local time `now`: returns it with a clock stamp if it carries one. */
  stamp(m: Message, now: number): Message {
    if (!isTime(now)) return m; // A broken local clock must not make a heartbeat unsendable.
    if (m.type === 'heartbeat') {
      const estimate = this.#estimateFor(m.to, now);
      return { ...m, clock: estimate === undefined ? { sentAt: now } : { sentAt: now, estimate } };
    }
    if (m.type === 'heartbeat-resp') {
      const e = this.#echo;
      if (e === null || e.from !== m.to || now < e.receivedAt) return m;
      this.#echo = null;
      return { ...m, clock: { echo: e.sentAt, receivedAt: e.receivedAt, sentAt: now } };
    }
    return m;
  }

  /**
   * The message `m` arrived at local time `now` and the protocol stepped it; `leader` is whom the
   * protocol follows now. Only the leader's stamps are used, and only by the leader its echoes.
   */
  receive(m: Message, now: number, leader: NodeId | null): void {
    if ((m.type !== 'heartbeat' && m.type !== 'heartbeat-resp') || m.clock === undefined || !isTime(now)) return;
    if (m.type === 'heartbeat') {
      const clock = this.#parseHeartbeatClock(m.clock);
      if (clock === null || m.from === this.#self) {
        this.invalidStamps++;
        return;
      }
      // A heartbeat from a deposed leader, or one the protocol refused: not our time.
      if (m.from !== leader) return;
      this.#echo = { from: m.from, sentAt: clock.sentAt, receivedAt: now };
      if (clock.estimate === undefined) return;
      this.#correction = clock.estimate.clusterOffsetMs - clock.estimate.offsetMs;
      this.#correctionAt = now;
      this.#correctionRttMs = clock.estimate.rttMs;
      return;
    }
    const echo = parseEcho(m.clock);
    if (echo === null) {
      this.invalidStamps++;
      return;
    }
    if (leader !== this.#self || !this.#peers.has(m.from)) return;
    this.sample(m.from, echo.echo, echo.receivedAt, echo.sentAt, now);
  }

  /**
   * One exchange with `peer`: the leader sent at t1 (its clock), the peer received at t2 and
   * answered at t3 (its clock), the answer arrived at t4 (the leader's clock). Returns whether
   * the sample was kept.
   */
  sample(peer: NodeId, t1: number, t2: number, t3: number, t4: number): boolean {
    if (!isTime(t1) || !isTime(t2) || !isTime(t3) || !isTime(t4) || !this.#peers.has(peer)) {
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
    const sample: Sample = { offsetMs, rttMs: Math.max(0, rtt), at: t4 };
    // The true offset lies within half the round trip of each honest sample. Older samples that
    // cannot share it with this one predate a step of a clock: they are forgotten, or the filter
    // would keep preferring them for as long as they stay in the window.
    const samples = (this.#samples.get(peer) ?? []).filter(
      (o) => Math.abs(o.offsetMs - offsetMs) <= (o.rttMs + sample.rttMs) / 2 + CLOCK_RESOLUTION_MS + MAX_CLOCK_DRIFT * Math.abs(t4 - o.at),
    );
    samples.push(sample);
    if (samples.length > this.#filterSamples) samples.shift();
    this.#samples.set(peer, samples);
    this.#recompute(t4);
    return true;
  }

  /**
   * Every member's offset from the cluster's time, as far as this member knows at local time
   * `now`: the leader knows itself and every member it has a fresh sample of; a follower knows
   * itself, from its leader. Empty until synced.
   */
  offsets(now: number): ReadonlyMap<NodeId, ClockOffset> {
    const result = new Map<NodeId, ClockOffset>();
    const correction = this.#correction;
    if (correction === null) return result;
    const selfAge = this.#members === 1 ? 0 : Math.max(0, now - this.#correctionAt);
    result.set(this.#self, { offsetMs: 0 - correction, rttMs: this.#correctionRttMs, ageMs: selfAge });
    if (this.#leaderSince === null) return result;
    for (const peer of this.#peers) {
      const s = this.#filtered(peer, now);
      if (s !== undefined) result.set(peer, { offsetMs: s.offsetMs - correction, rttMs: s.rttMs, ageMs: now - s.at });
    }
    return result;
  }

  /** The fresh sample of `peer` with the shortest round trip (the latest among equals). */
  #filtered(peer: NodeId, now: number): Sample | undefined {
    let best: Sample | undefined;
    for (const s of this.#samples.get(peer) ?? []) {
      const age = now - s.at;
      if (age < 0 || age > this.#maxAgeMs) continue;
      if (best === undefined || s.rttMs <= best.rttMs) best = s;
    }
    return best;
  }

  /** On the leader, after a new sample at `now`: the median of the clocks it sees, if robust. */
  #recompute(now: number): void {
    const clocks = [0];
    for (const peer of this.#peers) {
      const s = this.#filtered(peer, now);
      if (s !== undefined) clocks.push(s.offsetMs);
    }
    const robust = clocks.length >= Math.min(this.#members, ROBUST_CLOCK_COUNT);
    const bootstrap =
      this.#correction === null &&
      clocks.length * 2 > this.#members &&
      this.#leaderSince !== null &&
      now - this.#leaderSince >= this.#bootstrapAfterMs;
    if (!robust && !bootstrap) return;
    this.#correction = median(clocks);
    this.#correctionAt = now;
    this.#correctionRttMs = 0;
  }

  #estimateFor(peer: NodeId, now: number): ClockEstimate | undefined {
    const correction = this.#correction;
    // A correction held over from a bad leader's time could exceed what peers accept: send none.
    if (correction === null || Math.abs(correction) > MAX_CLOCK_OFFSET_MS) return undefined;
    const s = this.#filtered(peer, now);
    return s === undefined ? undefined : { offsetMs: s.offsetMs, rttMs: s.rttMs, clusterOffsetMs: correction };
  }

  #parseHeartbeatClock(value: unknown): HeartbeatClock | null {
    if (typeof value !== 'object' || value === null) return null;
    const { sentAt, estimate } = value as Record<string, unknown>;
    if (!isTime(sentAt)) return null;
    if (estimate === undefined) return { sentAt };
    if (typeof estimate !== 'object' || estimate === null) return null;
    const { offsetMs, rttMs, clusterOffsetMs } = estimate as Record<string, unknown>;
    if (!isOffset(offsetMs) || !isOffset(clusterOffsetMs) || typeof rttMs !== 'number' || !(rttMs >= 0 && rttMs <= this.#maxRttMs)) return null;
    return { sentAt, estimate: { offsetMs, rttMs, clusterOffsetMs } };
  }
}

function parseEcho(value: unknown): HeartbeatEcho | null {
  if (typeof value !== 'object' || value === null) return null;
  const { echo, receivedAt, sentAt } = value as Record<string, unknown>;
  return isTime(echo) && isTime(receivedAt) && isTime(sentAt) ? { echo, receivedAt, sentAt } : null;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_CLOCK_TIME_MS;
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_CLOCK_OFFSET_MS;
}

/** The median; for an even count, the mean of the middle two. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
