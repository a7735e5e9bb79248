import type { NodeId } from '../raft/types.js';
import { MAX_PREFETCH_PER_PARALLELISM, PREFETCH_PER_PARALLELISM } from './prefetch.js';
import type { FanoutState } from './state.js';

/**
 * How deep the leader fills each member's prefetch of each topic (issue 19; prefetch.ts), its
 * own and pure: MAX_PREFETCH_PER_PARALLELISM for a member that ran out of the items it held
 * while more of the topic waited, and PREFETCH_PER_PARALLELISM otherwise. Such a member runs its
 * items faster than the round trip of its outcomes and its next lease, and each round trip is two
 * commands through the log: leased deeper, it runs more items per command. A member that still
 * holds items when the leader looks is topped up to the first depth only: its runs are not
 * known to be fast, and a deeper prefetch would hold items that another member could run.
 *
 * Looked at as the leader plans (`update`), for the members it may lease to then (no lease of
 * theirs in flight). Bounded by the topics' consumers: each look keeps only the pairs of a
 * topic and a member that consumes it. A new leader starts at the first depth for every member.
 */
export class PrefetchDepths {
  /** The pairs leased deeper, by pairKey. */
  #deep = new Set<string>();
  /** The pairs that held items when last looked at: running out is seen only after holding some. */
  #held = new Set<string>();

  /** Looks at every member of every topic that no lease of is in flight (`busy` holds those that have one). */
  update(state: FanoutState, busy: Pick<ReadonlySet<NodeId>, 'has'>): void {
    const deep = new Set<string>();
    const held = new Set<string>();
    for (const topic of state.topics.values()) {
      for (const [member, settings] of topic.consumers) {
        const key = pairKey(topic.name, member);
        // A member with a lease in flight gets nothing this round; what it holds is looked at
        // once that lease applied.
        if (busy.has(member)) {
          if (this.#held.has(key)) held.add(key);
          continue;
        }
        const holds = topic.inFlight.get(member) ?? 0;
        const first = settings.parallelism * (1 + PREFETCH_PER_PARALLELISM);
        if (holds === 0 && this.#held.has(key) && topic.ready.size > first) deep.add(key);
        if (holds > 0) held.add(key);
      }
    }
    this.#deep = deep;
    this.#held = held;
  }

  /** The depth of `member`'s prefetch of `topic`, per unit of its parallelism. */
  of(topic: string, member: NodeId): number {
    return this.#deep.has(pairKey(topic, member)) ? MAX_PREFETCH_PER_PARALLELISM : PREFETCH_PER_PARALLELISM;
  }
}

function pairKey(topic: string, member: NodeId): string {
  return `${topic}\n${member}`;
}
