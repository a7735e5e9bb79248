import type { VersionSupport } from '../version/versions.js';
import { decodeEntry, type LogCommand, type SkippedEntry } from './commands.js';

/**
 * The fan-out entries a leader decoded as it appended them (appended-emits.ts), kept for the
 * apply of the same entries: a leader decoded each of them twice, and fan-out's entries are
 * most of what it appends under load. Kept by the entry's bytes, the log's own copy, which the
 * apply is handed, and weakly: an entry compacted away takes its decoding with it. A decoding
 * serves only the apply under the cluster version it was made under (decodeEntry decides by
 * it), and once; the apply does not change what it is handed.
 */
export class AppendedDecodings {
  readonly #kept = new WeakMap<Uint8Array, { readonly active: number; readonly decoded: LogCommand | SkippedEntry }>();
  /** Applies served a kept decoding (for tests: the apply is handed the very bytes appended). */
  served = 0;

  /** decodeEntry of `bytes`, kept for `take`. */
  decode(bytes: Uint8Array, active: number, support: VersionSupport): LogCommand | SkippedEntry {
    const decoded = decodeEntry(bytes, active, support);
    this.#kept.set(bytes, { active, decoded });
    return decoded;
  }

  /** The decoding kept of `bytes` under version `active`, forgotten as it is handed out; or decodeEntry's. */
  take(bytes: Uint8Array, active: number, support: VersionSupport): LogCommand | SkippedEntry {
    const kept = this.#kept.get(bytes);
    if (kept === undefined) return decodeEntry(bytes, active, support);
    this.#kept.delete(bytes);
    if (kept.active !== active) return decodeEntry(bytes, active, support);
    this.served++;
    return kept.decoded;
  }
}
