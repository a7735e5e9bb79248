import type { NodeId } from '../raft/types.js';
import type { MemberVersions } from './cluster-version.js';
import { inRange, protocolOf } from './versions.js';

/** What the leader should do about the cluster version (see nextActivation). */
export type VersionDecision =
  /** Propose raising the version from `from` to `to`. */
  | { readonly kind: 'activate'; readonly from: number; readonly to: number }
  /** `active` is the highest version every member reads: nothing to raise. */
  | { readonly kind: 'current' }
  /** The next version may be read by all, but these members have not said so lately. */
  | { readonly kind: 'waiting'; readonly waitingFor: readonly NodeId[] };

export interface ActivationInput {
  readonly active: number;
  readonly voters: readonly NodeId[];
  /** What each member announced, as applied from the log. */
  readonly announced: ReadonlyMap<NodeId, MemberVersions>;
  /**
   * Whether a member is live now (heard within an election timeout): a member that is down
   * may come back on another release, so its old announcement is not enough.
   */
  readonly live: (id: NodeId) => boolean;
}

/**
 * The next step of the cluster version, pure (etcd's decideClusterVersion): one version up,
 * once every member of the configuration is live and has announced that it reads it, over the
 * protocol it needs. Silence counts as "not yet", never as "yes": a member of cronraft 0.1.0
 * announces nothing, so a cluster with one never raises its version. One step at a time, so
 * that every version's activation is an entry of its own that a member too old for it meets
 * (and stops at) before any entry of that version.
 */
export function nextActivation(input: ActivationInput): VersionDecision {
  const to = input.active + 1;
  const waitingFor: NodeId[] = [];
  for (const id of input.voters) {
    const v = input.announced.get(id);
    if (v !== undefined && v.stateMachine.max < to) return CURRENT;
    if (v === undefined || !input.live(id)) waitingFor.push(id);
    else if (v.stateMachine.min > to || !inRange(v.protocol, protocolOf(to))) waitingFor.push(id);
  }
  return waitingFor.length === 0 ? { kind: 'activate', from: input.active, to } : { kind: 'waiting', waitingFor };
}

const CURRENT: VersionDecision = { kind: 'current' };
