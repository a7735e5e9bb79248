import type { NodeId } from '../../src/raft/types.js';
import type { RaftDriver } from '../../src/runtime/driver.js';
import type { Report } from '../violations.js';

/** A read barrier asked: by whom, when, and the greatest index any member had applied then. */
export interface AskedRead {
  readonly member: NodeId;
  readonly t: number;
  readonly committedBefore: number;
}

/**
 * `barrier()`'s promise, linearizability (`stale-read`): a barrier resolves with an index at
 * least that of every entry committed before it was asked (any entry some member had applied by
 * then), and its member has applied up to that index when it resolves. An entry applied
 * anywhere is committed (the Raft checkers hold that), so a barrier answered below one applied
 * before it was asked let its caller read a state older than one already seen.
 */
export class ReadChecker {
  readonly #report: Report;
  readonly #committed: () => number;
  /** Barriers asked, in all. */
  asks = 0;
  /** Barriers asked and answered, in all. */
  answers = 0;

  constructor(report: Report, committed: () => number) {
    this.#report = report;
    this.#committed = committed;
  }

  /**
   * `member` asks its `driver` for a barrier now (true time `now()`), and its answer is judged:
   * resolves with whether it was answered (false: refused).
   */
  ask(now: () => number, member: NodeId, driver: Pick<RaftDriver, 'readBarrier' | 'appliedIndex'>): Promise<boolean> {
    const read = this.#asked(now(), member);
    return driver.readBarrier().then(
      (index) => {
        this.#answered(now(), read, index, driver.appliedIndex);
        return true;
      },
      () => false,
    );
  }

  /** `member` asks for a barrier at true time `t`. */
  #asked(t: number, member: NodeId): AskedRead {
    this.asks++;
    return { member, t, committedBefore: this.#committed() };
  }

  /** The barrier `read` resolved at true time `t` with `index`, its member having applied up to `applied`. */
  #answered(t: number, read: AskedRead, index: number, applied: number): void {
    this.answers++;
    if (index < read.committedBefore) {
      this.#report(t, 'stale-read', `${read.member}'s barrier asked at ${read.t.toFixed(1)} ms resolved with index ${index}, below ${read.committedBefore}, applied by a member before it was asked`);
    } else if (applied < index) {
      this.#report(t, 'stale-read', `${read.member}'s barrier resolved with index ${index} while it had applied up to ${applied} only`);
    }
  }
}
