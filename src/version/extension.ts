/**
 * The commands and state of a cluster version this release does not know, read by a member
 * built with it. Only tests build one (test-next-version.ts): it lets a simulation or a test
 * process run "the next release" beside this one, so that the version gate is tested on a
 * command that older members cannot read, as a real upgrade will be.
 */
export interface VersionExtension {
  /** The cluster version that introduces its commands. */
  readonly version: number;
  /** A command of its own from an entry's payload, checked in full; null if it is not one. */
  decode(payload: unknown): unknown;
  /** Its part of the replicated state, empty. */
  create(): ExtensionState;
}

export interface ExtensionState {
  /** Applies a command `decode` returned, at its entry's index; deterministic. */
  apply(command: unknown, index: number): unknown;
  /** The state as a CBOR-encodable value, for snapshots. */
  save(): unknown;
  /** Replaces the state with a saved one; false if `value` is not one. */
  restore(value: unknown): boolean;
}
