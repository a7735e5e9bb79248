import type { ConfChange } from '../../src/raft/conf-change.js';
import type { RaftConfig } from '../../src/raft/config.js';
import { RaftNode } from '../../src/raft/node.js';
import { emptyHardState, type Entry, type EntryType, type HardState, type Message, type NodeId, type Snapshot } from '../../src/raft/types.js';
import { SeededRandom } from '../../src/time/random.js';

/** What a member has made durable; survives `restart`. */
interface Disk {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
}

interface Member {
  node: RaftNode;
  disk: Disk;
  applied: Entry[];
  readStates: Array<{ ctx: number; index: number }>;
  forwarded: Array<{ pid: string; accepted: boolean; reason?: string }>;
}

export interface NetworkOptions {
  electionTicks?: number;
  heartbeatTicks?: number;
  seed?: number;
  config?: Partial<RaftConfig>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * An in-memory cluster of pure Raft nodes for tests, after etcd's raft test `network`:
 * messages queue until delivered; links can be dropped, cut or isolated; members can restart
 * from what they persisted. The harness performs each Ready in the contract's order.
 */
export class TestNetwork {
  /** Every member started, founding or added (see addMember). */
  readonly ids: NodeId[];
  /** The founding voters, given to every member as RaftConfig.voters. */
  readonly #founding: readonly NodeId[];
  readonly members = new Map<NodeId, Member>();
  readonly #options: Required<Omit<NetworkOptions, 'config'>> & { config: Partial<RaftConfig> };
  #queue: Message[] = [];
  #blocked = new Set<string>();
  #seq = 0;
  /** Every message delivered, for counting. */
  delivered: Message[] = [];
  /** Optional filter: return false to drop a message in flight. */
  filter: ((m: Message) => boolean) | null = null;

  constructor(ids: NodeId[], options: NetworkOptions = {}) {
    this.ids = [...ids];
    this.#founding = [...ids];
    this.#options = { electionTicks: 10, heartbeatTicks: 1, seed: 1, config: {}, ...options };
    for (const id of ids) {
      const disk: Disk = { hardState: emptyHardState, snapshot: { index: 0, term: 0, data: new Uint8Array(0) }, entries: [] };
      this.members.set(id, { node: this.#newNode(id, disk), disk, applied: [], readStates: [], forwarded: [] });
    }
  }

  #newNode(id: NodeId, disk: Disk): RaftNode {
    const config: RaftConfig = {
      id,
      voters: this.#founding,
      electionTicks: this.#options.electionTicks,
      heartbeatTicks: this.#options.heartbeatTicks,
      ...this.#options.config,
    };
    const seed = this.#options.seed * 1000 + this.ids.indexOf(id) + this.#seq++ * 7919;
    return new RaftNode(config, { hardState: disk.hardState, snapshot: disk.snapshot, entries: disk.entries }, new SeededRandom(seed));
  }

  node(id: NodeId): RaftNode {
    return this.member(id).node;
  }

  member(id: NodeId): Member {
    const m = this.members.get(id);
    if (m === undefined) throw new Error(`no member ${id}`);
    return m;
  }

  /** Performs every member's pending Ready: persist, then queue messages, then apply. */
  flush(): void {
    for (const id of this.ids) {
      const m = this.member(id);
      while (m.node.hasReady()) {
        const rd = m.node.ready();
        if (rd.hardState !== null) m.disk.hardState = rd.hardState;
        if (rd.snapshot !== null) {
          // An installed snapshot replaces the whole log, on disk and in the state machine.
          m.disk.snapshot = rd.snapshot;
          m.disk.entries = [];
          m.applied = restoreApplied(rd.snapshot);
        }
        const first = rd.entries[0];
        if (first !== undefined) {
          m.disk.entries = m.disk.entries.filter((e) => e.index < first.index).concat(rd.entries);
        }
        // The write above is durable at once here, so what waits for it leaves right after what
        // did not have to (the driver's order).
        for (const msg of rd.messages) this.#queue.push(msg);
        for (const msg of rd.messagesAfterWrite) this.#queue.push(msg);
        for (const e of rd.committed) m.applied.push(e);
        for (const r of rd.readStates) m.readStates.push(r);
        for (const f of rd.forwardResults) m.forwarded.push(f.accepted || f.reason === undefined ? { pid: f.pid, accepted: f.accepted } : { pid: f.pid, accepted: false, reason: f.reason });
        m.node.advance(rd);
      }
    }
  }

  /** Delivers queued messages (and those they cause) until the network is quiet. */
  stabilize(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      this.flush();
      if (this.#queue.length === 0) return;
      const batch = this.#queue;
      this.#queue = [];
      for (const msg of batch) this.#deliver(msg);
    }
    throw new Error('network did not stabilize');
  }

  /** Delivers only the messages queued now, without following up. */
  deliverOnce(): Message[] {
    this.flush();
    const batch = this.#queue;
    this.#queue = [];
    for (const msg of batch) this.#deliver(msg);
    this.flush();
    return batch;
  }

  /** Messages queued and not yet delivered (after flushing Readies). */
  pending(): Message[] {
    this.flush();
    return [...this.#queue];
  }

  /** Drops every queued message. */
  discardPending(): void {
    this.flush();
    this.#queue = [];
  }

  #deliver(msg: Message): void {
    if (this.#blocked.has(`${msg.from}>${msg.to}`)) return;
    if (this.filter !== null && !this.filter(msg)) return;
    const target = this.members.get(msg.to);
    if (target === undefined) return;
    this.delivered.push(msg);
    target.node.step(msg);
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) this.node(id).tick();
  }

  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const id of this.ids) this.node(id).tick();
      this.stabilize();
    }
  }

  /** Makes `id` campaign now and delivers the election. */
  elect(id: NodeId): void {
    this.node(id).campaign();
    this.stabilize();
  }

  /**
   * Makes `id` campaign at once as if told by the leader (TimeoutNow): no pre-vote and no
   * leader lease, so a test can stage an exact election without ticking lease windows away.
   */
  forceElection(id: NodeId): void {
    const from = this.ids.find((other) => other !== id) as NodeId;
    this.node(id).step({ type: 'timeout-now', from, to: id, term: this.node(id).term });
    this.stabilize();
  }

  propose(id: NodeId, text: string): ReturnType<RaftNode['propose']> {
    const outcome = this.node(id).propose([{ pid: `${id}#${++this.#seq}`, data: encoder.encode(text) }]);
    return outcome;
  }

  /** Proposes a change of the configuration on `id` (see RaftNode.proposeConfChange). */
  confChange(id: NodeId, change: ConfChange): ReturnType<RaftNode['propose']> | ReturnType<RaftNode['proposeConfChange']> {
    return this.node(id).proposeConfChange(change, `${id}#${++this.#seq}`);
  }

  /**
   * Starts a new, empty member `id`, given the founding voters as every member is: outside its
   * configuration, it waits for a leader to add it and replicate to it.
   */
  addMember(id: NodeId): void {
    if (this.members.has(id)) throw new Error(`${id} is a member already`);
    const disk: Disk = { hardState: emptyHardState, snapshot: { index: 0, term: 0, data: new Uint8Array(0) }, entries: [] };
    this.ids.push(id);
    this.members.set(id, { node: this.#newNode(id, disk), disk, applied: [], readStates: [], forwarded: [] });
  }

  /** Blocks both directions between a and b. */
  cut(a: NodeId, b: NodeId): void {
    this.#blocked.add(`${a}>${b}`);
    this.#blocked.add(`${b}>${a}`);
  }

  /** Blocks one direction only. */
  drop(from: NodeId, to: NodeId): void {
    this.#blocked.add(`${from}>${to}`);
  }

  isolate(id: NodeId): void {
    for (const other of this.ids) if (other !== id) this.cut(id, other);
  }

  recover(): void {
    this.#blocked.clear();
    this.filter = null;
  }

  /** Restarts a member from what it persisted: its volatile state is lost, its snapshot restored. */
  restart(id: NodeId): void {
    const m = this.member(id);
    this.#queue = this.#queue.filter((msg) => msg.to !== id && msg.from !== id);
    m.node = this.#newNode(id, m.disk);
    m.applied = restoreApplied(m.disk.snapshot);
  }

  /**
   * Restarts a member with nothing on disk, as a member on `storage: 'memory'` restarts: its
   * term, vote, log and snapshot are gone, while the others still count what it acknowledged.
   */
  wipe(id: NodeId): void {
    this.member(id).disk = { hardState: emptyHardState, snapshot: { index: 0, term: 0, data: new Uint8Array(0) }, entries: [] };
    this.restart(id);
  }

  /**
   * Snapshots `id`'s state machine (its applied texts) at its applied index and compacts its
   * log, keeping `retain` entries in memory; on disk, everything up to the snapshot goes.
   * Returns whether the node took it.
   */
  compact(id: NodeId, retain = 0, everyEntries?: number): boolean {
    this.flush();
    const m = this.member(id);
    const index = m.node.log.applied;
    const term = m.node.log.term(index);
    if (term === undefined) return false;
    const snapshot: Snapshot = { index, term, data: encodeApplied(m.applied) };
    if (!m.node.compact(snapshot, retain, everyEntries)) return false;
    // The node's copy carries the configuration as of the snapshot's index.
    m.disk.snapshot = m.node.latestSnapshot;
    m.disk.entries = m.disk.entries.filter((e) => e.index > index);
    return true;
  }

  leaders(): NodeId[] {
    return this.ids.filter((id) => this.node(id).role === 'leader');
  }

  appliedTexts(id: NodeId): string[] {
    return this.member(id).applied.filter((e) => e.type === 0).map((e) => decoder.decode(e.data));
  }

  /** Messages of `type` delivered so far. */
  count(type: Message['type']): number {
    return this.delivered.filter((m) => m.type === type).length;
  }

  logTerms(id: NodeId): number[] {
    const log = this.node(id).log;
    const out: number[] = [];
    for (let i = log.firstIndex(); i <= log.lastIndex(); i++) out.push(log.term(i) ?? -1);
    return out;
  }
}

/** The test state machine's snapshot: the entries it applied, so checkers can compare them after a restore. */
function encodeApplied(applied: readonly Entry[]): Uint8Array {
  return encoder.encode(JSON.stringify(applied.map((e) => [e.index, e.term, e.type, decoder.decode(e.data), e.pid])));
}

function restoreApplied(snapshot: Snapshot): Entry[] {
  if (snapshot.data.byteLength === 0) return [];
  const rows = JSON.parse(decoder.decode(snapshot.data)) as Array<[number, number, EntryType, string, string]>;
  return rows.map(([index, term, type, text, pid]): Entry => ({ index, term, type, data: encoder.encode(text), pid }));
}
