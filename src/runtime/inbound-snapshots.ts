import { VersionTooOldError } from '../errors.js';
import type { SnapshotMessage } from '../raft/types.js';
import type { SnapshotChunk } from '../transport/envelope.js';
import { SnapshotAssembler } from './snapshot-chunks.js';
import type { StateMachine } from './state-machine.js';

/**
 * A leader's snapshots as they come in: joined from their chunks (snapshot-chunks.ts), and handed
 * to the protocol only once whole and readable by the state machine, so that a member never
 * installs a snapshot it could not restore.
 */
export class InboundSnapshots {
  readonly #chunks = new SnapshotAssembler();
  readonly #stateMachine: StateMachine;
  readonly #fail: (error: unknown) => void;
  /** Snapshots from a leader that the state machine could not read: dropped (see acceptsSnapshot). */
  invalid = 0;

  constructor(stateMachine: StateMachine, fail: (error: unknown) => void) {
    this.#stateMachine = stateMachine;
    this.#fail = fail;
  }

  /**
   * Takes a snapshot message (or a chunk of one) that arrived at `now` (monotonic milliseconds).
   * Returns the whole snapshot once its last chunk is in and the state machine can read it;
   * null while chunks are missing, or when it was dropped (counted in `invalid`), or when the
   * member must stop (a snapshot of a cluster version it cannot read: `fail` was called).
   */
  take(m: SnapshotChunk, now: number): SnapshotMessage | null {
    const whole = this.#chunks.add(m, now);
    if (whole === null) return null;
    let accepted: boolean;
    try {
      accepted = this.#stateMachine.acceptsSnapshot(whole.snapshot.data);
    } catch (error) {
      // A snapshot of a cluster version this member cannot read: it could never catch up,
      // and must not skip what it cannot read. It stops, saying which version it needs.
      if (error instanceof VersionTooOldError) {
        this.#fail(error);
        return null;
      }
      accepted = false;
    }
    if (!accepted) {
      this.invalid++;
      return null;
    }
    return whole;
  }

  /** Drops a snapshot whose next chunk did not come in time (SnapshotAssembler.expire). */
  expire(now: number): void {
    this.#chunks.expire(now);
  }

  /** Chunks of snapshots dropped as no honest leader sends them (see SnapshotAssembler.invalid). */
  get invalidChunks(): number {
    return this.#chunks.invalid;
  }
}
