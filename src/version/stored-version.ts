import { decode } from '../bytes/cbor-decode.js';
import { VersionTooOldError } from '../errors.js';
import { EntryType } from '../raft/types.js';
import type { StoredState } from '../storage/log-storage.js';
import { decodeMemberSnapshot } from '../runtime/member-snapshot.js';
import { isClusterCommand } from './cluster-command.js';
import { FIRST_CLUSTER_VERSION, isVersion, type VersionSupport } from './versions.js';

/** The first two bytes of a cluster command's entry: a CBOR array of two, then the kind (2). */
const CLUSTER_ENTRY_HEAD = [0x82, 0x02] as const;

/**
 * The cluster version a data directory was left at: its snapshot's, raised by every committed
 * activation in the log after it (etcd's MinimalEtcdVersion). An uncommitted entry may still
 * be replaced, so it says nothing.
 */
export function storedClusterVersion(stored: StoredState): number {
  return activatedIn(stored, stored.hardState.commit);
}

/**
 * The cluster version whose wire protocol a member may speak from its start: that of every
 * activation in its stored log, uncommitted ones too. A leader proposes an activation only once
 * every member reads that version, so each of them reads its protocol; and a member restarted
 * with an entry of that protocol in its log (a conf change) but a stored commit point behind
 * the activation (a commit alone is not written) could otherwise not send that entry, nor so
 * commit anything as leader.
 */
export function storedWireVersion(stored: StoredState): number {
  return activatedIn(stored, Number.POSITIVE_INFINITY);
}

/** The snapshot's version, raised by the activations in the stored log up to index `upTo`. */
function activatedIn(stored: StoredState, upTo: number): number {
  let active = FIRST_CLUSTER_VERSION;
  if (stored.snapshot.index > 0) {
    const cluster = decodeMemberSnapshot(stored.snapshot.data)?.cluster;
    const saved = Array.isArray(cluster) ? (cluster[0] as unknown) : undefined;
    if (isVersion(saved)) active = saved;
  }
  for (const entry of stored.entries) {
    if (entry.index > upTo) break;
    if (entry.type !== EntryType.Normal || entry.data[0] !== CLUSTER_ENTRY_HEAD[0] || entry.data[1] !== CLUSTER_ENTRY_HEAD[1]) continue;
    let payload: unknown;
    try {
      payload = (decode(entry.data) as unknown[])[1];
    } catch {
      continue;
    }
    if (isClusterCommand(payload) && payload.type === 'activate' && payload.from === active && payload.to === active + 1) active = payload.to;
  }
  return active;
}

/**
 * Refuses to start a member on a data directory whose cluster version it cannot read: a
 * downgrade past that version's activation. It fails before anything is built, rather than at
 * the first entry it could not apply.
 * @throws VersionTooOldError
 */
export function checkStoredVersion(stored: StoredState, support: VersionSupport, path: string): void {
  const version = storedClusterVersion(stored);
  if (version > support.stateMachine.max) throw new VersionTooOldError(version, support.stateMachine.max, `The data directory ${path}`);
}
