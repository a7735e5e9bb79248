import { VersionNotActiveError, VersionTooOldError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { ClusterCommand } from './cluster-command.js';
import type { ExtensionState } from './extension.js';
import { FIRST_CLUSTER_VERSION, isVersion, type VersionRange, type VersionSupport } from './versions.js';

/** What a member announced it reads (see ClusterCommand 'announce'). */
export interface MemberVersions {
  readonly protocol: VersionRange;
  readonly stateMachine: VersionRange;
}

/** What `apply` did with a cluster command: `ignored` when it changes nothing here (see apply). */
export type ClusterApplyResult = 'applied' | 'ignored';

/**
 * The cluster's own replicated state: the cluster version in force and what each member last
 * announced it reads. Every member applies the same entries to it, in the same order, and
 * holds it in its snapshots beside the scheduler's state.
 */
export class ClusterVersionState {
  readonly #support: VersionSupport;
  readonly #isMember: (id: NodeId) => boolean;
  #active = FIRST_CLUSTER_VERSION;
  #activatedAt = 0;
  readonly #members = new Map<NodeId, MemberVersions>();
  /** The extension's state (tests only), once its version is active. */
  #extension: ExtensionState | null = null;

  /** `isMember`: whether an id is a member of the configuration (announcements of others change nothing). */
  constructor(support: VersionSupport, isMember: (id: NodeId) => boolean) {
    this.#support = support;
    this.#isMember = isMember;
  }

  /** The cluster version in force: what the log's entries and the snapshots mean from here on. */
  get active(): number {
    return this.#active;
  }

  /** The index of the entry that made `active` the cluster version; 0 for the first version. */
  get activatedAt(): number {
    return this.#activatedAt;
  }

  /**
   * Throws VersionNotActiveError unless cluster version `needs` is in force: a feature checks
   * before it proposes a command of its version, so that none is ever committed while a
   * member that cannot read it is in the cluster.
   */
  require(feature: string, needs: number): void {
    if (this.#active < needs) throw new VersionNotActiveError(feature, needs, this.#active);
  }

  /**
   * The members among `members` that announced they read no version as high as `needs`: while
   * one of them is in the configuration the cluster version stays below it, until it is
   * upgraded. (A member that announced nothing, one of cronraft 0.1.0 or one just started, is
   * not among them: the version waits for it too, but its silence says nothing of what it reads.)
   */
  cannotRead(needs: number, members: Iterable<NodeId>): NodeId[] {
    const below: NodeId[] = [];
    for (const id of members) {
      const v = this.#members.get(id);
      if (v !== undefined && v.stateMachine.max < needs) below.push(id);
    }
    return below;
  }

  /** What this member reads. */
  get support(): VersionSupport {
    return this.#support;
  }

  /** What each member last announced, by id. */
  get members(): ReadonlyMap<NodeId, MemberVersions> {
    return this.#members;
  }

  /**
   * Applies a cluster command at `index`. An `activate` applies only from the version in force
   * and one step up: a second leader's duplicate, or a forged jump, is ignored alike on every
   * member. An activation of a version this member cannot read throws VersionTooOldError: it
   * must stop rather than apply entries whose meaning it does not know.
   */
  apply(command: ClusterCommand, index: number): ClusterApplyResult {
    if (command.type === 'announce') {
      if (!this.#isMember(command.member)) return 'ignored';
      const [pMin, pMax] = command.protocol;
      const [smMin, smMax] = command.stateMachine;
      this.#members.set(command.member, { protocol: { min: pMin, max: pMax }, stateMachine: { min: smMin, max: smMax } });
      return 'applied';
    }
    if (command.from !== this.#active || command.to !== command.from + 1) return 'ignored';
    if (command.to > this.#support.stateMachine.max) throw new VersionTooOldError(command.to, this.#support.stateMachine.max, `Entry ${index} activates a cluster version that`);
    this.#active = command.to;
    this.#activatedAt = index;
    if (this.#support.extension?.version === this.#active) this.#extension = this.#support.extension.create();
    return 'applied';
  }

  /** Applies a command of the extension's version (the caller checked that it is active). */
  applyExtension(command: unknown, index: number): unknown {
    return this.#extension?.apply(command, index);
  }

  /** The extension's state, when its version is active (tests read it). */
  get extension(): ExtensionState | null {
    return this.#extension;
  }

  /**
   * The state as a CBOR-encodable value: `[active, activatedAt, [[id, pMin, pMax, smMin,
   * smMax], ...]]`, members sorted by id so that equal states give equal bytes on every
   * member, and the extension's state after them once its version is active.
   */
  save(): unknown[] {
    const members = [...this.#members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, v]) => [id, v.protocol.min, v.protocol.max, v.stateMachine.min, v.stateMachine.max]);
    const saved: unknown[] = [this.#active, this.#activatedAt, members];
    if (this.#extension !== null) saved.push(this.#extension.save());
    return saved;
  }

  /**
   * Whether `value` is a saved state `restore` takes; throws VersionTooOldError if it is one of
   * a version this member cannot read. Changes nothing.
   */
  accepts(value: unknown): boolean {
    return this.#prepare(value) !== null;
  }

  /** Replaces the state with a saved one (a snapshot's) that `accepts` took; throws otherwise. */
  restore(value: unknown): void {
    const prepared = this.#prepare(value);
    if (prepared === null) throw new TypeError('Not a saved cluster state');
    const { saved, extension } = prepared;
    this.#active = saved.active;
    this.#activatedAt = saved.activatedAt;
    this.#members.clear();
    for (const [id, v] of saved.members) this.#members.set(id, v);
    this.#extension = extension;
  }

  #prepare(value: unknown): { readonly saved: Saved; readonly extension: ExtensionState | null } | null {
    const saved = parseSaved(value);
    if (saved === null) return null;
    if (saved.active > this.#support.stateMachine.max) throw new VersionTooOldError(saved.active, this.#support.stateMachine.max, 'A snapshot of the cluster');
    const ext = this.#support.extension;
    if (ext === undefined || saved.active < ext.version) return saved.extension === undefined ? { saved, extension: null } : null;
    const extension = ext.create();
    return saved.extension !== undefined && extension.restore(saved.extension) ? { saved, extension } : null;
  }

  /** Back to the state before any entry (a snapshot of cronraft 0.1.0, which held none of this). */
  reset(): void {
    this.#active = FIRST_CLUSTER_VERSION;
    this.#activatedAt = 0;
    this.#members.clear();
    this.#extension = null;
  }
}

interface Saved {
  readonly active: number;
  readonly activatedAt: number;
  readonly members: ReadonlyArray<readonly [NodeId, MemberVersions]>;
  readonly extension?: unknown;
}

/** Bound on the members a saved state lists: far more than a cluster has, so that a hostile snapshot cannot make a member hold an unbounded table. */
export const MAX_MEMBERS_SAVED = 1_024;

function parseSaved(value: unknown): Saved | null {
  if (!Array.isArray(value) || (value.length !== 3 && value.length !== 4)) return null;
  const [active, activatedAt, members, extension] = value as [unknown, unknown, unknown, unknown];
  if (!isVersion(active) || !Number.isSafeInteger(activatedAt) || (activatedAt as number) < 0) return null;
  if (!Array.isArray(members) || members.length > MAX_MEMBERS_SAVED) return null;
  const out: Array<readonly [NodeId, MemberVersions]> = [];
  for (const m of members as unknown[]) {
    if (!Array.isArray(m) || m.length !== 5) return null;
    const [id, pMin, pMax, smMin, smMax] = m as unknown[];
    if (typeof id !== 'string' || id.length === 0 || !isVersion(pMin) || !isVersion(pMax) || !isVersion(smMin) || !isVersion(smMax) || pMin > pMax || smMin > smMax) return null;
    out.push([id, { protocol: { min: pMin, max: pMax }, stateMachine: { min: smMin, max: smMax } }]);
  }
  return { active, activatedAt: activatedAt as number, members: out, ...(value.length === 4 ? { extension } : {}) };
}
