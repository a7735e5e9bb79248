import { crc32 } from '../bytes/crc32.js';
import { MAX_READ_CTX } from '../raft/bounds.js';

/**
 * How many read contexts (a ReadIndex request's `ctx`) one process life has: `MAX_READ_CTX`
 * split among 2^32 ranges, one per CRC-32 of a life's boot id.
 */
export const READ_CTXS_PER_LIFE = MAX_READ_CTX / 2 ** 32;

/**
 * The read contexts of one process life (`bootId`, unique across a member's restarts), in a
 * range of their own. A leader answers a read by its context alone, and may still hold one a
 * member asked before it restarted (a read waits for the leader's first commit of its term, and
 * for a heartbeat round a majority answers): counted from 1 in every life, the new life's read
 * took that old answer, an index from before its own question, and a barrier came back below an
 * entry applied before it was asked (seed 8 of a swarm with upgrades, locks and fan-out, 5
 * members, 60 s). Past READ_CTXS_PER_LIFE reads a life takes its range again from the start: a
 * leader holds a read for a heartbeat round or until its first commit, far less than the time
 * that many reads take.
 */
export class ReadContexts {
  readonly #base: number;
  #next = 0;

  constructor(bootId: string) {
    this.#base = crc32(new TextEncoder().encode(bootId)) * READ_CTXS_PER_LIFE;
  }

  /** The next context of this life's range: one past its base, up to READ_CTXS_PER_LIFE - 1 past it, then from one past again. */
  next(): number {
    this.#next = (this.#next % (READ_CTXS_PER_LIFE - 1)) + 1;
    return this.#base + this.#next;
  }
}
