import { decode, encode } from 'cborg';

/**
 * A member's snapshot: what its state machine holds, which today is the scheduler's state.
 * CBOR `[version, scheduler]`, versioned apart from the scheduler's own encoding so that state
 * of another kind can join it later without a guess at what old bytes mean.
 */
export const MEMBER_SNAPSHOT_VERSION = 1;

export function encodeMemberSnapshot(scheduler: Uint8Array): Uint8Array {
  return encode([MEMBER_SNAPSHOT_VERSION, scheduler]);
}

/** The scheduler's part of a member snapshot, or null when the bytes are not one this version reads. */
export function decodeMemberSnapshot(data: Uint8Array): Uint8Array | null {
  let value: unknown;
  try {
    value = decode(data, { strict: true, allowUndefined: false, useMaps: false, tags: [] });
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2 || value[0] !== MEMBER_SNAPSHOT_VERSION || !(value[1] instanceof Uint8Array)) return null;
  return value[1];
}
