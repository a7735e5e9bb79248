import { NotRunningError, VersionNotActiveError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { TimerHandle, Timers } from '../time/clock.js';
import type { ClusterVersionState } from '../version/cluster-version.js';

/**
 * Calls waiting for a cluster version at once, at most, on one member: a call past it is refused
 * at once, as every call was before calls waited.
 */
export const MAX_VERSION_WAITS = 1024;

export interface VersionWaitsOptions {
  readonly versions: ClusterVersionState;
  /** The members of the configuration now: those whose announcements say whether a version can come. */
  readonly members: () => readonly NodeId[];
  readonly timers: Timers;
  /** How long a call waits at most (the member's requestTimeoutMs): then it is refused. */
  readonly timeoutMs: number;
}

interface Wait {
  readonly feature: string;
  readonly needs: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  timer: TimerHandle | null;
}

/**
 * The calls of a feature of a later cluster version (fan-out, an operator's actions, membership
 * changes) made before that version is in force. A new cluster starts at the first version and
 * raises it a step at a time once every member has announced what it reads, within seconds of
 * forming: a call made then (an app that emits or pauses a job as it starts) waits for the raise,
 * for `timeoutMs` at most, rather than failing. It is refused at once, as before, when a member
 * of the configuration announced it cannot read the version (a rolling upgrade under way: the
 * version rises only once that member is upgraded), and when MAX_VERSION_WAITS calls wait.
 * Refusals are VersionNotActiveError; a stop or a fatal error rejects the waits with NotRunningError.
 */
export class VersionWaits {
  readonly #o: VersionWaitsOptions;
  readonly #waits = new Set<Wait>();
  /** What the member is once stopped (NotRunningError's state), or null while it runs. */
  #stopped: string | null = null;

  constructor(options: VersionWaitsOptions) {
    this.#o = options;
  }

  /** Calls waiting now. */
  get waiting(): number {
    return this.#waits.size;
  }

  /** Resolves once cluster version `needs` is in force (at once if it is); `feature` names it in a refusal. */
  whenActive(feature: string, needs: number): Promise<void> {
    const versions = this.#o.versions;
    if (versions.active >= needs) return Promise.resolve();
    if (this.#stopped !== null) return Promise.reject(new NotRunningError(this.#stopped));
    if (this.#blocked(needs) || this.#waits.size >= MAX_VERSION_WAITS) return Promise.reject(this.#refusal(feature, needs));
    return new Promise<void>((resolve, reject) => {
      const wait: Wait = { feature, needs, resolve, reject, timer: null };
      wait.timer = this.#o.timers.setTimeout(() => {
        wait.timer = null;
        this.#settle(wait, this.#refusal(feature, needs));
      }, this.#o.timeoutMs);
      this.#waits.add(wait);
    });
  }

  /**
   * The cluster's version state changed (a cluster command applied, a snapshot restored): the
   * waits for a version now in force resolve, and those for one a member announced it cannot
   * read are refused.
   */
  changed(): void {
    const active = this.#o.versions.active;
    for (const wait of this.#waits) {
      if (active >= wait.needs) this.#settle(wait, null);
      else if (this.#blocked(wait.needs)) this.#settle(wait, this.#refusal(wait.feature, wait.needs));
    }
  }

  /** The member stopped (`state`: or failed): every wait is rejected with NotRunningError, and calls from now on too. */
  stop(state: 'stopped' | 'failed' = 'stopped'): void {
    this.#stopped ??= state;
    for (const wait of this.#waits) this.#settle(wait, new NotRunningError(this.#stopped));
  }

  /** The refusal of a call for `feature`, naming the members that never said what they read. */
  #refusal(feature: string, needs: number): VersionNotActiveError {
    const { versions } = this.#o;
    return new VersionNotActiveError(feature, needs, versions.active, this.#o.members().filter((id) => !versions.members.has(id)));
  }

  #blocked(needs: number): boolean {
    return this.#o.versions.cannotRead(needs, this.#o.members()).length > 0;
  }

  #settle(wait: Wait, error: Error | null): void {
    if (!this.#waits.delete(wait)) return;
    if (wait.timer !== null) this.#o.timers.clearTimeout(wait.timer);
    wait.timer = null;
    if (error === null) wait.resolve();
    else wait.reject(error);
  }
}
