import { RaftNode, type RaftConfig } from '../../src/raft/index.js';
import { emptyHardState, type Entry, type HardState, type Message, type NodeId } from '../../src/raft/types.js';
import { SeededRandom } from '../../src/time/random.js';

/** What a member has made durable; survives `restart`. */
interface Disk {
  hardState: HardState;
  entries: Entry[];
}

interface Member {
  node: RaftNode;
  disk: Disk;
  applied: Entry[];
  readStates: Array<{ ctx: number; index: number }>;
  forwarded: Array<{ pid: string; accepted: boolean }>;
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
  readonly ids: NodeId[];
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
    this.ids = ids;
    this.#options = { electionTicks: 10, heartbeatTicks: 1, seed: 1, config: {}, ...options };
    for (const id of ids) {
      const disk: Disk = { hardState: emptyHardState, entries: [] };
      this.members.set(id, { node: this.#newNode(id, disk), disk, applied: [], readStates: [], forwarded: [] });
    }
  }

  #newNode(id: NodeId, disk: Disk): RaftNode {
    const config: RaftConfig = {
      id,
      voters: this.ids,
      electionTicks: this.#options.electionTicks,
      heartbeatTicks: this.#options.heartbeatTicks,
      ...this.#options.config,
    };
    const seed = this.#options.seed * 1000 + this.ids.indexOf(id) + this.#seq++ * 7919;
    return new RaftNode(config, { hardState: disk.hardState, snapshot: { index: 0, term: 0 }, entries: disk.entries }, new SeededRandom(seed));
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
        const first = rd.entries[0];
        if (first !== undefined) {
          m.disk.entries = m.disk.entries.filter((e) => e.index < first.index).concat(rd.entries);
        }
        for (const msg of rd.messages) this.#queue.push(msg);
        for (const e of rd.committed) m.applied.push(e);
        for (const r of rd.readStates) m.readStates.push(r);
        for (const f of rd.forwardResults) m.forwarded.push({ pid: f.pid, accepted: f.accepted });
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

  /** Restarts a member from what it persisted: its volatile state is lost. */
  restart(id: NodeId): void {
    const m = this.member(id);
    this.#queue = this.#queue.filter((msg) => msg.to !== id && msg.from !== id);
    m.node = this.#newNode(id, m.disk);
    m.applied = [];
  }

  leaders(): NodeId[] {
    return this.ids.filter((id) => this.node(id).role === 'leader');
  }

  appliedTexts(id: NodeId): string[] {
    return this.member(id).applied.filter((e) => e.type === 0).map((e) => decoder.decode(e.data));
  }

  logTerms(id: NodeId): number[] {
    const log = this.node(id).log;
    const out: number[] = [];
    for (let i = log.firstIndex(); i <= log.lastIndex(); i++) out.push(log.term(i) ?? -1);
    return out;
  }
}
