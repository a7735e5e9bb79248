import { RaftNode } from '../src/raft/node.js';
import type { Entry, NodeId } from '../src/raft/types.js';
import { RaftDriver } from '../src/runtime/driver.js';
import { MemoryDisk } from '../src/storage/memory-disk.js';
import { MemoryLogStorage } from '../src/storage/memory-log-storage.js';
import { SeededRandom } from '../src/time/random.js';
import type { SimNetwork } from './network.js';
import type { SimScheduler } from './scheduler.js';

export interface MemberSettings {
  readonly voters: readonly NodeId[];
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly requestTimeoutMs: number;
}

export interface MemberHooks {
  readonly onStart: (id: NodeId, snapshotIndex: number) => void;
  readonly onApplied: (id: NodeId, entry: Entry) => void;
  readonly onLeader: (id: NodeId, node: RaftNode) => void;
}

/**
 * One simulated member: the production RaftNode and RaftDriver over a simulated disk and
 * network. A crash loses what the disk had not synced and everything in memory; a restart
 * reopens the disk as a new process would.
 */
export class SimMember {
  readonly id: NodeId;
  readonly disk: MemoryDisk;
  driver: RaftDriver | null = null;
  incarnation = 0;
  #syncScheduled = false;
  readonly #seed: number;

  constructor(id: NodeId, seed: number) {
    this.id = id;
    this.#seed = seed;
    this.disk = new MemoryDisk({ name: `disk-${id}`, manualSync: true });
  }

  get up(): boolean {
    return this.driver !== null;
  }

  async start(scheduler: SimScheduler, network: SimNetwork, settings: MemberSettings, hooks: MemberHooks): Promise<void> {
    this.incarnation++;
    const storage = new MemoryLogStorage(this.disk);
    const stored = await storage.open();
    const node = new RaftNode(
      { id: this.id, voters: settings.voters, electionTicks: settings.electionTicks, heartbeatTicks: settings.heartbeatTicks },
      { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries },
      new SeededRandom(this.#seed * 7919 + this.incarnation),
    );
    hooks.onStart(this.id, stored.snapshot.index);
    const transport = network.attach(this.id);
    this.driver = new RaftDriver({
      node,
      storage,
      transport,
      stateMachine: { apply: () => null },
      clock: scheduler.clock(),
      timers: scheduler.timers(),
      tickMs: settings.tickMs,
      requestTimeoutMs: settings.requestTimeoutMs,
      maxPendingProposals: 1000,
      maxProposalBatch: 64,
      maxProposalBatchBytes: 64 * 1024,
      maxPendingReads: 100,
      leaderSilenceMs: settings.tickMs * settings.electionTicks,
      bootId: `${this.id}.${this.incarnation}`,
      onApplied: (e) => hooks.onApplied(this.id, e),
      onSoftState: (s) => {
        if (s.role === 'leader') hooks.onLeader(this.id, node);
      },
    });
    await transport.start();
    this.driver.start();
  }

  /** The process dies: unsynced writes are lost, timers and callbacks stop. */
  crash(network: SimNetwork): void {
    this.driver?.stop();
    this.driver = null;
    this.disk.crash();
    this.#syncScheduled = false;
    network.detach(this.id);
  }

  /** Completes the disk's pending writes after a simulated fsync latency. */
  scheduleSync(scheduler: SimScheduler, fsyncMs: number): void {
    if (this.#syncScheduled || this.disk.unsyncedWrites === 0) return;
    this.#syncScheduled = true;
    const incarnation = this.incarnation;
    scheduler.after(fsyncMs, () => {
      if (incarnation !== this.incarnation || !this.up) return;
      this.#syncScheduled = false;
      this.disk.sync();
    });
  }
}
