import { ExclusiveTasks } from '../src/api/run-exclusive.js';
import { unansweredLockHooks, UnansweredLocks } from '../src/api/unanswered-locks.js';
import { RaftNode } from '../src/raft/node.js';
import type { Entry, NodeId } from '../src/raft/types.js';
import type { WireMessage } from '../src/transport/envelope.js';
import type { SoftState } from '../src/raft/ready.js';
import { Member, type MemberParts } from '../src/runtime/member.js';
import { heartbeatIntervalMs, type MemberSettings } from '../src/runtime/member-settings.js';
import { parseSpec } from '../src/scheduler/spec.js';
import { MemoryDisk } from '../src/storage/memory-disk.js';
import { MemoryLogStorage } from '../src/storage/memory-log-storage.js';
import type { TimerHandle, Timers } from '../src/time/clock.js';
import { SeededRandom } from '../src/time/random.js';
import type { Transport } from '../src/transport/transport.js';
import { SUPPORTED, type VersionSupport } from '../src/version/versions.js';
import { storedWireVersion } from '../src/version/stored-version.js';
import { SimClock } from './clock-model.js';
import { consumeTopics, EMIT_JOB, simEmitHandler, type ItemEvent, type SimFanout } from './fanout.js';
import { simHandler, type HandlerEvent, type SimJob } from './jobs.js';
import { callLocks, type LockEvent, type SimLocks } from './locks.js';
import type { SimNetwork, SimTransport } from './network.js';
import type { SimScheduler } from './scheduler.js';

/** What every member of a simulated cluster is started with. */
export interface SimMemberConfig {
  readonly voters: readonly NodeId[];
  readonly jobs: readonly SimJob[];
  /** Timing and limits, as `Cluster` computes them (see simulations/settings.ts). */
  readonly settings: MemberSettings;
  /** The run's fan-out (simulations/fanout.ts), and whether its slots emit still; null: none. */
  readonly fanout?: { readonly plan: SimFanout; readonly emitting: () => boolean } | null;
  /** The run's calls of runExclusive (simulations/locks.ts); null: none. */
  readonly locks?: SimLocks | null;
}

/** What the simulation watches on each member, with the incarnation that did it. */
export interface MemberHooks {
  readonly onStart: (id: NodeId, snapshotIndex: number) => void;
  readonly onApplied: (id: NodeId, entry: Entry) => void;
  readonly onSnapshotInstalled: (id: NodeId, index: number) => void;
  readonly onSoftState: (id: NodeId, node: RaftNode, state: SoftState) => void;
  readonly onSchedulerApplied: (id: NodeId, ...args: Parameters<NonNullable<MemberParts['onSchedulerApplied']>>) => void;
  readonly onRunStart: (id: NodeId, incarnation: number, ...args: Parameters<NonNullable<MemberParts['onRunStart']>>) => void;
  readonly onRun: (id: NodeId, incarnation: number, ...args: Parameters<NonNullable<MemberParts['onRun']>>) => void;
  /** A fan-out command applied, with its result. */
  readonly onFanoutApplied?: (id: NodeId, ...args: Parameters<NonNullable<MemberParts['onFanoutApplied']>>) => void;
  /** What a fan-out consumer's handler of `topic` saw (see ItemEvent). */
  readonly onItem?: (id: NodeId, incarnation: number, topic: string, event: ItemEvent) => void;
  /** A message the process takes in (once any stall ended), before the member handles it. */
  readonly onReceiving?: (id: NodeId, m: WireMessage) => void;
  /** A message the process took in (once any stall ended), after the member handled it; `termBefore`, its term before. */
  readonly onReceived?: (id: NodeId, m: WireMessage, termBefore: number) => void;
  /** A message the member hands its transport, as it sends it. */
  readonly onSend?: (id: NodeId, m: WireMessage) => void;
  /** What a job's handler saw (see HandlerEvent). */
  readonly onHandler?: (id: NodeId, incarnation: number, event: HandlerEvent) => void;
  /** What a runExclusive task saw (see LockEvent). */
  readonly onLock?: (id: NodeId, incarnation: number, event: LockEvent) => void;
  /** The member stopped after a fatal error (not called for a life a crash already ended). */
  readonly onFatal: (id: NodeId, error: unknown) => void;
}

/**
 * One simulated member: the production member assembly (Raft driver and scheduler runtime)
 * over a simulated disk, network and clock. A crash loses what the disk had not synced and
 * everything in memory, and silences every timer of that life; a restart reopens the disk
 * and schedules the jobs again, as a new process would. A pause stalls the process: its
 * timers and inbound messages wait until the pause ends.
 */
export class SimMember {
  readonly id: NodeId;
  readonly disk: MemoryDisk;
  readonly clock: SimClock;
  member: Member | null = null;
  /**
   * What the release installed on this host reads: kept across restarts, as a binary on disk
   * is; an upgrade (faults.ts, injectUpgrades) replaces it while the process is down.
   */
  versions: VersionSupport = SUPPORTED;
  /** The jobs this member's app schedules at boot, once a rolling deploy changed them (deploys.ts); null: the run's. */
  jobs: readonly SimJob[] | null = null;
  incarnation = 0;
  /** When this life started (the simulated time): a deploy that drops a job counts from it (SchedulerRuntime's UNSCHEDULED_AFTER_MS). */
  startedAtMs = 0;
  /** True time until which the process is stalled. */
  pausedUntil = 0;
  /** The process life whose graceful stop began (stopGracefully), if any: from then on its member is stopping. */
  stoppingIncarnation = 0;
  #syncScheduled = false;
  readonly #seed: number;
  readonly #scheduler: SimScheduler;
  /** This life's store, until it ends. */
  #storage: MemoryLogStorage | null = null;
  /** This life's transport, until it ends. */
  #link: SimTransport | null = null;
  /** This life's runExclusive tasks and its timers, which a graceful stop lets end (as Cluster.stop() does); null without locks. */
  #exclusive: { readonly tasks: ExclusiveTasks; readonly timers: Timers } | null = null;

  constructor(id: NodeId, seed: number, scheduler: SimScheduler) {
    this.id = id;
    this.#seed = seed;
    this.#scheduler = scheduler;
    this.clock = new SimClock(scheduler);
    this.disk = new MemoryDisk({ name: `disk-${id}`, manualSync: true });
  }

  get up(): boolean {
    return this.member !== null;
  }

  get driver(): Member['driver'] | null {
    return this.member?.driver ?? null;
  }

  async start(network: SimNetwork, config: SimMemberConfig, hooks: MemberHooks): Promise<void> {
    const { settings } = config;
    const incarnation = ++this.incarnation;
    this.startedAtMs = this.#scheduler.nowMs;
    const storage = new MemoryLogStorage(this.disk);
    this.#storage = storage;
    const stored = await storage.open();
    const node = new RaftNode(
      { id: this.id, voters: config.voters, ...settings.raft },
      { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries },
      new SeededRandom(this.#seed * 7919 + incarnation),
    );
    hooks.onStart(this.id, stored.snapshot.index);
    const link = network.attach(this.id);
    this.#link = link;
    const transport = this.#pausable(link, incarnation, hooks);
    // Each process's monotonic clock has its own origin (as performance.now() does), so clock
    // synchronization cannot lean on the simulation's shared virtual time.
    const timers = this.#timers(incarnation, new SeededRandom(this.#seed * 65_537 + incarnation).int(0, 1_000_000_000) / 1000);
    // runExclusive's lock proposals that went unanswered, let go should they commit, as Cluster wires them (cluster-start.ts).
    const locks = config.locks ?? null;
    const unanswered = new UnansweredLocks();
    const lockHooks = locks === null ? null : unansweredLockHooks(this.id, unanswered, () => member, (run) => void timers.setTimeout(run, heartbeatIntervalMs(settings.timing)));
    const member: Member = new Member({
      self: this.id,
      node,
      storedVersion: storedWireVersion(stored),
      storage,
      transport,
      clock: this.clock,
      timers,
      timing: settings.timing,
      bootId: `${this.id}.${incarnation}`,
      compaction: settings.compaction,
      snapshotChunkBytes: settings.snapshotChunkBytes,
      versions: this.versions,
      onApplied: (e) => hooks.onApplied(this.id, e),
      onSnapshotInstalled: (index) => {
        hooks.onSnapshotInstalled(this.id, index);
        lockHooks?.installed(index);
      },
      onSoftState: (s) => hooks.onSoftState(this.id, node, s),
      onSchedulerApplied: (index, command, result, version) => {
        hooks.onSchedulerApplied(this.id, index, command, result, version);
        lockHooks?.applied(index, command, result);
      },
      onRunStart: (run) => hooks.onRunStart(this.id, incarnation, run),
      onRun: (run) => hooks.onRun(this.id, incarnation, run),
      onFanoutApplied: (...args) => hooks.onFanoutApplied?.(this.id, ...args),
      onFatal: (error) => {
        if (incarnation === this.incarnation && this.up) hooks.onFatal(this.id, error);
      },
    });
    this.member = member;
    // As Cluster wires libp2p's `disconnected`: a closed connection to the leader is the fastest
    // sign that it died. A stalled process hears of it when it resumes.
    link.onPeerGone = (peer) => this.#whenRunning(incarnation, () => member.driver.peerDisconnected(peer));
    await transport.start();
    member.start();
    // The app schedules its jobs at boot, as every member of a real cluster would.
    const random = new SeededRandom(this.#seed * 104_729 + incarnation);
    const observe = (event: HandlerEvent): void => hooks.onHandler?.(this.id, incarnation, event);
    const fanout = config.fanout ?? null;
    const fanoutRandom = new SeededRandom(this.#seed * 15_485_863 + incarnation);
    for (const job of this.jobs ?? config.jobs) {
      const handler = fanout !== null && job.name === EMIT_JOB ? simEmitHandler(fanout.plan, timers, fanoutRandom, fanout.emitting, observe) : simHandler(job, timers, random, observe);
      member.scheduler.schedule(job.name, parseSpec(job.spec), handler, job.options ?? {});
    }
    const stopped = (): boolean => incarnation !== this.incarnation || this.member !== member;
    this.#exclusive = null;
    if (locks !== null) {
      const random = new SeededRandom(this.#seed * 27_644_437 + incarnation);
      const tasks = new ExclusiveTasks();
      this.#exclusive = { tasks, timers };
      callLocks(member, this.id, locks, settings, timers, random, { unanswered, tasks }, stopped, (event) => hooks.onLock?.(this.id, incarnation, event));
    }
    if (fanout !== null) {
      consumeTopics(member, this.id, config.voters.includes(this.id), fanout.plan, timers, fanoutRandom, stopped, (topic, event) => hooks.onItem?.(this.id, incarnation, topic, event));
    }
  }

  /**
   * The process dies: unsynced writes are lost, and nothing of this life runs again. Its peers
   * see its connections close at once, as the kernel closes a killed process's sockets; unless
   * its host lost power (`hostLost`), when they look open until it comes back, as TCP notices a
   * dead host only on a timeout.
   */
  crash(hostLost = false): void {
    this.member?.stop();
    this.member = null;
    this.disk.crash();
    this.#syncScheduled = false;
    this.pausedUntil = 0;
    if (hostLost) this.#link?.loseHost();
    else void this.#link?.stop();
    this.#link = null;
  }

  /**
   * The process stops as `Cluster.stop()` does: it hands its work over (Member.stopGracefully,
   * its runs given at most `timeoutMs`), then stops. Its writes complete (a store closes after
   * its writes), and its peers see its connections close. Resolves once it is down; a crash
   * meanwhile leaves it down all the same.
   */
  async stopGracefully(timeoutMs: number): Promise<void> {
    const member = this.member;
    if (member === null) return;
    this.stoppingIncarnation = this.incarnation;
    // Its runExclusive tasks end within the same time and release their locks, as Cluster.stop()'s do.
    const exclusive = this.#exclusive;
    await Promise.all([member.stopGracefully(timeoutMs), exclusive?.tasks.settle(exclusive.timers, timeoutMs)]);
    if (this.member !== member) return;
    await this.stop();
  }

  /**
   * The process stops cleanly, handing nothing over (a member removed from the configuration
   * is stopped this way): its store's pending writes complete and its lock is released, and its
   * peers see its connections close. Resolves once the store is closed.
   */
  async stop(): Promise<void> {
    const member = this.member;
    if (member === null) return;
    member.stop();
    this.member = null;
    await this.#storage?.close();
    this.#storage = null;
    this.#syncScheduled = false;
    void this.#link?.stop();
    this.#link = null;
  }

  /**
   * Completes some of the disk's pending writes after a simulated fsync latency (both drawn
   * only when a sync starts): `batch(pending)` of them, oldest first, and the rest after another
   * latency, so that one write can complete, and be seen, before the next.
   */
  scheduleSync(fsyncMs: () => number, batch: (pending: number) => number): void {
    if (this.#syncScheduled || this.disk.unsyncedWrites === 0) return;
    this.#syncScheduled = true;
    const incarnation = this.incarnation;
    this.#scheduler.after(fsyncMs(), () =>
      this.#whenRunning(incarnation, () => {
        this.#syncScheduled = false;
        this.disk.sync(batch(this.disk.unsyncedWrites));
      }),
    );
  }

  /** Runs `run` now if this life is still going, later if the process is stalled. */
  #whenRunning(incarnation: number, run: () => void): void {
    if (incarnation !== this.incarnation || !this.up) return;
    if (this.#scheduler.nowMs < this.pausedUntil) {
      this.#scheduler.at(this.pausedUntil, () => this.#whenRunning(incarnation, run));
      return;
    }
    run();
  }

  /** Timers of one life: silenced by a crash, held back by a pause. */
  #timers(incarnation: number, originMs: number): Timers {
    return {
      // A stalled process's monotonic clock still advances: the stall is time that passed.
      now: () => originMs + this.#scheduler.nowMs,
      setTimeout: (callback: () => void, delayMs: number): TimerHandle => this.#scheduler.after(delayMs, () => this.#whenRunning(incarnation, callback)),
      clearTimeout: (handle: TimerHandle): void => {
        (handle as { cancelled: boolean }).cancelled = true;
      },
    };
  }

  /** The member's transport, whose inbound messages wait while the process is stalled. */
  #pausable(inner: Transport, incarnation: number, hooks: MemberHooks): Transport {
    return {
      start: () => inner.start(),
      stop: () => inner.stop(),
      send: (m: WireMessage) => {
        hooks.onSend?.(this.id, m);
        inner.send(m);
      },
      flush: () => inner.flush(),
      setProtocol: (protocol) => inner.setProtocol(protocol),
      setMembers: (members) => inner.setMembers(members),
      peerId: () => inner.peerId(),
      remotePeerIdOf: (member) => inner.remotePeerIdOf(member),
      onMessage: (handler) =>
        inner.onMessage((m) =>
          this.#whenRunning(incarnation, () => {
            const termBefore = this.driver?.node.term ?? 0;
            hooks.onReceiving?.(this.id, m);
            handler(m);
            hooks.onReceived?.(this.id, m, termBefore);
          }),
        ),
      isConnected: (peer) => inner.isConnected(peer),
      stats: () => inner.stats(),
    };
  }
}
