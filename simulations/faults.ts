import type { NodeId } from '../src/raft/types.js';
import { CLOCK_OFFSET_MAX_AGE_MS } from '../src/runtime/clock-sync.js';
import type { Random } from '../src/time/random.js';
import type { VersionSupport } from '../src/version/versions.js';
import type { SimJob } from './jobs.js';
import type { SimMember } from './member.js';
import type { SimNetwork } from './network.js';
import type { SimScheduler } from './scheduler.js';
import type { TimelineEvent } from './timeline.js';

/** Which faults a run injects. Each on by default; their parameters are drawn from the seed. */
export interface FaultSwitches {
  readonly partitions?: boolean;
  readonly loss?: boolean;
  readonly crashes?: boolean;
  /** Clock offsets, drift, jumps forward and back, frozen clocks. */
  readonly clocks?: boolean;
  /** Stop-the-world stalls of a member's process (a long GC, a VM migration). */
  readonly pauses?: boolean;
  /** Disks that stall: now and then an fsync takes up to MAX_DISK_STALL_MS, so writes are in flight across elections. */
  readonly disks?: boolean;
}

export const FAULT_NAMES = ['partition', 'loss', 'crash', 'clock', 'pause', 'disk'] as const;

/** Other names users reach for: clock skew is one of the clock faults. */
export const FAULT_ALIASES: Readonly<Record<string, (typeof FAULT_NAMES)[number]>> = { skew: 'clock' };

export function switchesFromNames(given: readonly string[]): Required<FaultSwitches> {
  const names = given.map((name) => FAULT_ALIASES[name] ?? name);
  return {
    partitions: names.includes('partition'),
    loss: names.includes('loss'),
    crashes: names.includes('crash'),
    clocks: names.includes('clock'),
    pauses: names.includes('pause'),
    disks: names.includes('disk'),
  };
}

/** The longest fsync a stalling disk takes. */
export const MAX_DISK_STALL_MS = 1000;

/** The largest clock jump injected: the "off by up to 60 s". */
export const MAX_CLOCK_JUMP_MS = 60_000;
/** The longest extra delay a clogged link adds to each message. */
export const MAX_CLOG_MS = 2000;
/** Clocks jumped or frozen at once: the cluster's time is promised to withstand one. */
export const MAX_BAD_CLOCKS = 1;
/** The longest stall injected: longer than an election timeout, so leases and fencing matter. */
export const MAX_PAUSE_MS = 2000;

export interface FaultContext {
  readonly scheduler: SimScheduler;
  readonly network: SimNetwork;
  readonly random: Random;
  readonly members: readonly SimMember[];
  readonly ids: readonly NodeId[];
  /** Faults stop once true time reaches this. */
  readonly untilMs: number;
  readonly record: (event: TimelineEvent) => void;
  readonly trace: (line: string) => void;
}

const pick = <T>(random: Random, xs: readonly T[]): T => xs[random.int(0, xs.length - 1)] as T;

/** Re-arms `fault` at a random interval in [every/2, every] while the fault phase lasts. */
function repeat(ctx: FaultContext, everyMs: number, fault: () => void): void {
  const next = (): void => {
    if (ctx.scheduler.nowMs >= ctx.untilMs) return;
    fault();
    ctx.scheduler.after(ctx.random.int(Math.ceil(everyMs / 2), everyMs), next);
  };
  ctx.scheduler.after(everyMs, next);
}

/**
 * Symmetric, asymmetric and one-way partitions, isolating whoever leads, and rolling clogs of
 * links. Each partition either closes its links' connections, as a peer's host going away does,
 * or leaves them open and loses every message (`quiet`), as a real partition does until TCP
 * notices, which nothing moves at once: drawn from `quiet`, a stream of its own, so that the
 * partitions themselves fall as they did before quiet ones existed.
 */
export function injectPartitions(ctx: FaultContext, everyMs: number, quiet: Random): void {
  const { network, random, ids } = ctx;
  let cut = (from: NodeId, to: NodeId): void => network.block(from, to);
  const isolate = (who: NodeId): void => {
    for (const other of ids) {
      if (other === who) continue;
      cut(who, other);
      cut(other, who);
    }
  };
  repeat(ctx, everyMs, () => {
    network.healPartitions();
    const silent = quiet.int(0, 1) === 1;
    cut = silent ? (from, to) => network.mute(from, to) : (from, to) => network.block(from, to);
    const kind = random.int(0, 5);
    if (kind === 1) {
      isolate(pick(random, ids));
    } else if (kind === 2) {
      const side = new Set(ids.filter(() => random.int(0, 1) === 0));
      for (const a of ids) for (const b of ids) if (side.has(a) !== side.has(b)) cut(a, b);
    } else if (kind === 3) {
      // One-way: a member can send but not hear (or the reverse).
      const who = pick(random, ids);
      for (const other of ids) if (other !== who) cut(random.int(0, 1) === 0 ? who : other, random.int(0, 1) === 0 ? other : who);
    } else if (kind === 4) {
      const leader = ctx.members.find((m) => m.driver?.node.role === 'leader');
      if (leader !== undefined) isolate(leader.id);
    } else if (kind === 5) {
      // A clog rolls over a few links: each delays every message by up to two seconds, so
      // messages arrive late and out of order, but arrive.
      for (let i = random.int(1, ids.length); i > 0; i--) {
        const from = pick(random, ids);
        const to = pick(random, ids.filter((id) => id !== from));
        network.clog(from, to, random.int(10, MAX_CLOG_MS));
      }
    }
    ctx.trace(`partition ${kind}`);
    const blocked = blockedLinks(network, ids, silent);
    ctx.record(silent && blocked.length > 0 ? { t: ctx.scheduler.nowMs, kind: 'partition', blocked, quiet: true } : { t: ctx.scheduler.nowMs, kind: 'partition', blocked });
  });
}

/** How often, at most, a member's answers are lost (injectLostAnswers): drawn per run between these. */
export const LOST_ANSWERS_EVERY_MS: readonly [number, number] = [2000, 10_000];

/** How long a member's answers are lost while it hears the others (injectLostAnswers). */
const LOST_ANSWERS_MS: readonly [number, number] = [300, 2500];

/**
 * Now and then, everything one member sends is lost for a while, its connections open, while it
 * hears the others: a link that fails one way, or a member whose replies are stuck behind a full
 * send buffer. Its leader counts it silent and moves its work, while it still hears that
 * leader: its lease must run out first (README, "Failures"). From `random`, a stream of its own.
 */
export function injectLostAnswers(ctx: FaultContext, everyMs: number): void {
  const { network, random, ids } = ctx;
  repeat(ctx, everyMs, () => {
    const who = pick(random, ids);
    const ms = random.int(...LOST_ANSWERS_MS);
    for (const other of ids) if (other !== who) network.muteFor(who, other, ms);
    ctx.trace(`answers lost ${who} ${ms}`);
    ctx.record({ t: ctx.scheduler.nowMs, kind: 'answers-lost', member: who, untilT: ctx.scheduler.nowMs + ms });
  });
}

/** The links blocked, or muted if `quiet`. */
function blockedLinks(network: SimNetwork, ids: readonly NodeId[], quiet: boolean): Array<[NodeId, NodeId]> {
  const out: Array<[NodeId, NodeId]> = [];
  for (const a of ids) for (const b of ids) if (a !== b && (quiet ? network.isMuted(a, b) : network.isBlocked(a, b))) out.push([a, b]);
  return out;
}

/** How a power cut is named in the trace: its host is gone, not only its process. */
const POWER_CUT = 'power cut';

/** How long a crashed member stays down (ms). */
const DOWN_MS: readonly [number, number] = [50, 3000];

/** Crashes `victim` (it loses its unsynced writes) and restarts it after `downMs`. */
function crashFor(ctx: FaultContext, victim: SimMember, downMs: readonly [number, number], how: string, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void): void {
  onCrash(victim);
  victim.crash(how === POWER_CUT);
  ctx.trace(`${how} ${victim.id}`);
  ctx.record({ t: ctx.scheduler.nowMs, kind: 'crash', member: victim.id });
  ctx.scheduler.after(ctx.random.int(...downMs), () => {
    if (!victim.up) restart(victim);
  });
}

/** Crashes a random live member (never the last one) and restarts it after a while. */
export function injectCrashes(ctx: FaultContext, everyMs: number, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void): void {
  repeat(ctx, everyMs, () => {
    const up = ctx.members.filter((m) => m.up);
    if (up.length <= 1) return;
    crashFor(ctx, pick(ctx.random, up), DOWN_MS, 'crash', restart, onCrash);
  });
}

/** The most power cuts after an acknowledgement one run draws (it draws from 1 to this many). */
export const MAX_ACK_POWER_CUTS = 4;
/** How long after the acknowledgement reaches it the leader loses power too: time to commit and apply what it counted (ms). */
const POWER_CUT_LEADER_DELAY_MS: readonly [number, number] = [1, 25];
/**
 * After a power cut the followers come back first, the leader later (a slower machine to boot):
 * the moment at which entries lost by a follower that acknowledged them too early would show.
 */
const POWER_CUT_FOLLOWER_DOWN_MS: readonly [number, number] = [50, 1000];
const POWER_CUT_LEADER_DOWN_MS: readonly [number, number] = [1500, 3000];

/**
 * `count` power cuts, each right after an acknowledgement: the moment that tells whether a
 * follower kept its promise. Each is armed at a random moment of the fault phase and waits for a
 * follower to acknowledge entries while writes are still unsynced on its disk; then every
 * follower with unsynced writes loses power at once (and what it had not synced), and the
 * leader a moment later, once it could commit and apply what it counted; the followers come
 * back first. An honest follower acknowledges only what is durable, so nothing committed is
 * lost; one that acknowledged before its write was durable has lost an entry the leader
 * counted, and the members that come back first may elect a leader without it. Plain crashes,
 * at random moments, rarely fall in the few milliseconds between such an acknowledgement and
 * the write's fsync. (Members without unsynced writes would lose nothing: they are spared, and
 * so is what their restarts would cost. A few cuts a run, however long, cost little.)
 */
export function injectAckPowerCuts(ctx: FaultContext, count: number, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void): void {
  const { network, scheduler, random } = ctx;
  let armed = 0;
  for (let i = 0; i < count; i++) {
    scheduler.at(random.int(0, ctx.untilMs), () => {
      armed++;
    });
  }
  network.onSend = (msg) => {
    if (armed === 0 || scheduler.nowMs >= ctx.untilMs || msg.type !== 'append-resp' || msg.reject) return;
    const follower = ctx.members.find((m) => m.id === msg.from);
    const leader = ctx.members.find((m) => m.id === msg.to);
    if (follower === undefined || leader === undefined || follower.disk.unsyncedWrites === 0) return;
    armed--;
    // After the send returns (the follower's driver is in the middle of sending), before any sync.
    scheduler.after(0, () => {
      for (const m of ctx.members) if (m !== leader && m.up && m.disk.unsyncedWrites > 0) crashFor(ctx, m, POWER_CUT_FOLLOWER_DOWN_MS, POWER_CUT, restart, onCrash);
    });
    scheduler.after(random.int(...POWER_CUT_LEADER_DELAY_MS), () => {
      if (leader.up) crashFor(ctx, leader, POWER_CUT_LEADER_DOWN_MS, POWER_CUT, restart, onCrash);
    });
  };
}

/** Jumps (either way, up to a minute) and frozen clocks on a minority of members; drift, small offsets and clocks set right again on any. */
export function injectClockFaults(ctx: FaultContext, everyMs: number): void {
  const { random, scheduler } = ctx;
  // Members whose clock was jumped or frozen, until it was set right and a while after: a
  // leader votes with a member's clock as last measured for as long as that estimate stays
  // fresh. The cluster's time is the median of the clocks a leader sees, and a leader may see
  // only a bare majority of them: it is promised to hold with one bad clock, so the faults keep
  // to one. (Member → true time until which it counts as bad; Infinity while it is.)
  const badUntil = new Map<SimMember, number>();
  const maxBad = ctx.members.length >= 3 ? MAX_BAD_CLOCKS : 0;
  const badNow = (): SimMember[] => [...badUntil].filter(([, until]) => until > scheduler.nowMs).map(([member]) => member);
  repeat(ctx, everyMs, () => {
    let m = pick(random, ctx.members);
    let kind = random.int(0, 4);
    const bad = badNow();
    if ((kind === 0 || kind === 2) && !bad.includes(m) && bad.length >= maxBad) {
      // No new bad clock: make one of the bad ones worse, or make a small change instead.
      if (bad.length === 0) kind = 3;
      else m = pick(random, bad);
    }
    if (kind === 0 || kind === 2) badUntil.set(m, Number.POSITIVE_INFINITY);
    if (kind === 4 && badUntil.get(m) === Number.POSITIVE_INFINITY) badUntil.set(m, scheduler.nowMs + CLOCK_OFFSET_MAX_AGE_MS);
    let note: string;
    if (kind === 0) {
      const by = random.int(-MAX_CLOCK_JUMP_MS, MAX_CLOCK_JUMP_MS);
      m.clock.jump(by);
      note = `jumped ${by} ms`;
    } else if (kind === 1) {
      const ppm = random.int(-500, 500);
      m.clock.setDrift(ppm);
      note = `drifts ${ppm} ppm`;
    } else if (kind === 2) {
      const forMs = random.int(100, 5000);
      m.clock.freeze();
      scheduler.after(forMs, () => {
        m.clock.unfreeze();
        ctx.record({ t: scheduler.nowMs, kind: 'clock', member: m.id, offsetMs: m.clock.offsetMs, note: 'runs again' });
      });
      note = `frozen for ${forMs} ms`;
    } else if (kind === 3) {
      // A small fixed offset, as NTP leaves between machines.
      m.clock.jump(random.int(-50, 50));
      note = 'small offset';
    } else {
      m.clock.reset();
      note = 'set right';
    }
    ctx.trace(`clock ${m.id} ${note}`);
    ctx.record({ t: scheduler.nowMs, kind: 'clock', member: m.id, offsetMs: m.clock.offsetMs, note });
  });
}

/** Stalls a live member's process: its timers and inbound messages wait. */
export function injectPauses(ctx: FaultContext, everyMs: number): void {
  repeat(ctx, everyMs, () => {
    const up = ctx.members.filter((m) => m.up);
    if (up.length === 0) return;
    const m = pick(ctx.random, up);
    const forMs = ctx.random.int(10, MAX_PAUSE_MS);
    m.pausedUntil = Math.max(m.pausedUntil, ctx.scheduler.nowMs + forMs);
    ctx.trace(`pause ${m.id} ${forMs}`);
    ctx.record({ t: ctx.scheduler.nowMs, kind: 'pause', member: m.id, untilT: m.pausedUntil });
  });
}

/**
 * The share of the fault phase a rolling upgrade is spread over, as fractions of it: the last
 * member is upgraded by the end of it, early enough that the cluster's version can rise (and
 * test notes commit) while the faults still go on.
 */
export const UPGRADE_SPAN: readonly [number, number] = [0.1, 0.6];
/** How long a member being upgraded stays down (ms): the time to install the new release and start it. */
const UPGRADE_DOWN_MS: readonly [number, number] = [50, 1000];

/**
 * How an upgrade takes a member's process down before its new release starts on the same disk,
 * restarted by `restart`. A crash for now (unsynced writes lost, as a kill would); a graceful
 * stop is the other variant, passed to injectUpgrades in its place once members have one.
 */
export type UpgradeStop = (ctx: FaultContext, m: SimMember, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void) => void;

/** The upgrade's stop as a crash (see UpgradeStop). */
export const crashToUpgrade: UpgradeStop = (ctx, m, restart, onCrash) => crashFor(ctx, m, UPGRADE_DOWN_MS, 'upgrade crash', restart, onCrash);

/**
 * A rolling upgrade during the other faults: every member in turn, in an order drawn, is stopped
 * (`stop`) and started again on the same disk with the release `next` installed, one at a time,
 * spread over UPGRADE_SPAN of the fault phase. A member found down when its turn comes (another
 * fault crashed it) gets the new release all the same and comes back on it when it restarts.
 */
export function injectUpgrades(ctx: FaultContext, next: VersionSupport, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void, stop: UpgradeStop = crashToUpgrade): void {
  injectRollingChange(ctx, 'upgrade', (m) => (m.versions = next), restart, onCrash, stop);
}

/**
 * A rolling deploy of jobs changed (deploys.ts), as a rolling upgrade goes: every member in
 * turn gets `jobs` and is stopped and started again with them, over UPGRADE_SPAN of the fault
 * phase, so that the change is complete while the faults still go on.
 */
export function injectDeploy(ctx: FaultContext, jobs: readonly SimJob[], restart: (m: SimMember) => void, onCrash: (m: SimMember) => void): void {
  injectRollingChange(ctx, 'deploy', (m) => (m.jobs = jobs), restart, onCrash, (c, m, r, o) => crashFor(c, m, UPGRADE_DOWN_MS, 'deploy crash', r, o));
}

/** Every member in turn, in an order drawn, changed by `change` and stopped by `stop` (restarted by it), spread over UPGRADE_SPAN. */
function injectRollingChange(ctx: FaultContext, what: string, change: (m: SimMember) => void, restart: (m: SimMember) => void, onCrash: (m: SimMember) => void, stop: UpgradeStop): void {
  const order = [...ctx.members];
  for (let i = order.length - 1; i > 0; i--) {
    const j = ctx.random.int(0, i);
    [order[i], order[j]] = [order[j] as SimMember, order[i] as SimMember];
  }
  const [from, to] = UPGRADE_SPAN;
  const step = ((to - from) * ctx.untilMs) / order.length;
  order.forEach((m, i) => {
    ctx.scheduler.at(from * ctx.untilMs + step * i + ctx.random.int(0, Math.floor(step)), () => {
      change(m);
      ctx.trace(`${what} ${m.id}`);
      if (m.up) stop(ctx, m, restart, onCrash);
    });
  });
}
