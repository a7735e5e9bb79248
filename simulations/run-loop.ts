import { MAX_DISK_STALL_MS } from './faults.js';
import type { SimMember } from './member.js';
import { drainMicrotasks } from './scheduler.js';
import type { SimWorld } from './world.js';

/** Bound on simulated events in one run, so that a livelock cannot run forever. */
const MAX_EVENTS = 20_000_000;
/** The bounds checker runs after this many events (it reads sizes, so it need not run after each). */
const BOUNDS_CHECK_EVERY = 100;
/** Bound on events run at one instant before letting their asynchronous work run. */
const MAX_EVENTS_PER_INSTANT = 64;

/**
 * The loop that moves a run's simulated time: it steps the scheduler event by event, lets what
 * each event set off asynchronously run, syncs the members' disks, and checks after every event
 * what must hold at every instant (durability, refusals, configurations, runs, and now and then
 * bounds). Every phase of a run (the faults, the checks after healing, a rolling restart) runs
 * through it; an event that throws ends the run there, with the exception as its violation.
 */
export class RunLoop {
  readonly #world: SimWorld;
  /** Set when an event threw: the run stops there, with the exception as its violation. */
  crashed = false;
  #events = 0;
  /** Disks stall only in the fault phase. */
  #diskStallPermille: number;

  constructor(world: SimWorld) {
    this.#world = world;
    this.#diskStallPermille = world.drawn.diskStallPermille;
  }

  /** Disks stall no more (healing). */
  endDiskStalls(): void {
    this.#diskStallPermille = 0;
  }

  /** Runs events up to `untilMs`, or until `stop` says so after an event, or an event throws. */
  async run(untilMs: number, stop: () => boolean = () => false): Promise<void> {
    const { scheduler, members, refusals, configurations, runChecks, report, seed } = this.#world;
    for (;;) {
      try {
        if (!scheduler.step(untilMs)) return;
        // Events due at the same instant (members' ticks line up) run back to back, and what
        // they set off asynchronously runs after them, still at that instant: time does not move.
        for (let batch = 1; batch < MAX_EVENTS_PER_INSTANT && scheduler.nextAt() === scheduler.nowMs; batch++) scheduler.step(untilMs);
      } catch (error) {
        // The protocol's own assertions (e.g. "no term for index") are violations too.
        report(scheduler.nowMs, 'exception', `${error instanceof Error ? error.message : String(error)}`);
        this.crashed = true;
        return;
      }
      await drainMicrotasks();
      const restarts = this.#world.restarts;
      if (restarts.length > 0) await Promise.all(restarts.splice(0));
      for (const m of members) {
        const driver = m.driver;
        if (driver === null) continue;
        m.scheduleSync(this.#fsyncMs, this.#syncBatch);
        this.#checkDurability(m);
        if (m.member !== null) refusals.check(scheduler.nowMs, m.id, m.member);
      }
      if (this.#world.changes) configurations.afterEvent(scheduler.nowMs, members);
      runChecks.afterEvent(scheduler.nowMs);
      this.#world.fanoutChecks?.afterEvent(scheduler.nowMs);
      if (++this.#events % BOUNDS_CHECK_EVERY === 0) for (const m of members) this.#checkBounds(m);
      if (this.#events > MAX_EVENTS) throw new Error(`seed ${seed}: more than ${MAX_EVENTS} events`);
      if (stop()) return;
    }
  }

  /** How long one fsync takes: now and then, in the fault phase, a stall. */
  readonly #fsyncMs = (): number => {
    const { random, drawn } = this.#world;
    return random.int(0, 999) < this.#diskStallPermille ? random.int(1, MAX_DISK_STALL_MS) : random.int(50, drawn.fsyncMaxUs) / 1000;
  };

  /** How many of the pending writes one sync makes durable. */
  readonly #syncBatch = (pending: number): number => this.#world.random.int(1, pending);

  // What a member believes durable must be on its disk, with the same term: its stable index
  // (a leader counts its own copy of an entry towards a majority only up to it, and a follower
  // acknowledges only up to it).
  #checkDurability(m: SimMember): void {
    const { report, scheduler } = this.#world;
    const node = m.driver?.node;
    if (node === undefined) return;
    const stable = node.log.stable;
    // An index at or before a snapshot (in memory or on disk) is covered by it: the entry is gone.
    const covered = Math.max(node.log.firstIndex() - 1, m.disk.durableBounds().snapshotIndex);
    if (stable > covered && m.disk.durableTerm(stable) !== node.log.term(stable)) {
      report(scheduler.nowMs, 'durability', `${m.id} believes index ${stable} (term ${node.log.term(stable)}) durable, but its disk holds term ${m.disk.durableTerm(stable) ?? 'nothing'} there`);
    }
    if (node.role !== 'leader') return;
    const match = node.progressOf(m.id)?.match ?? 0;
    if (match > covered && m.disk.durableTerm(match) !== node.log.term(match)) {
      report(scheduler.nowMs, 'durability', `leader ${m.id} counts index ${match} as its own, but its disk does not hold it`);
    }
  }

  // Nothing a member keeps in memory outgrows its named bound, and its disk keeps no more of
  // the log than compaction allows once its writes are done: the applied part within two
  // compaction intervals (and what is retained), plus what is not applied yet. (While writes
  // are in flight, a member catching up has compacted in memory what its disk still holds.)
  #checkBounds(m: SimMember): void {
    const { report, scheduler } = this.#world;
    const compaction = this.#world.settings.compaction;
    for (const b of m.member?.bounds() ?? []) {
      if (b.value > b.limit) report(scheduler.nowMs, 'bounds', `${m.id} holds ${b.value} ${b.name}, over its bound of ${b.limit}`);
    }
    const driver = m.driver;
    if (driver === null || driver.writesInFlight > 0) return;
    const node = driver.node;
    const disk = m.disk.durableBounds();
    const diskLimit = 2 * compaction.everyEntries + compaction.retainEntries + Math.max(0, node.log.lastIndex() - node.log.applied);
    if (disk.lastIndex - disk.snapshotIndex > diskLimit) {
      const where = `disk ${disk.snapshotIndex + 1}..${disk.lastIndex}; in memory ${node.role}, snapshot ${node.latestSnapshot.index}, first ${node.log.firstIndex()}, applied ${node.log.applied}, stable ${node.log.stable}, last ${node.log.lastIndex()}`;
      report(scheduler.nowMs, 'bounds', `${m.id}'s disk holds ${disk.lastIndex - disk.snapshotIndex} entries, over its bound of ${diskLimit} (${where})`);
    }
  }
}
