import type { ClaimRecord } from './records.js';

/*
 * What a kept claim takes in a scheduler snapshot (state-snapshot.ts writes its record as JSON),
 * at most: SchedulerState bounds the sum over its kept claims (maxClaimBytes), so that a claim's
 * texts (its members' names, its runs' errors) and the members of a mode 'all' job cannot make
 * the snapshot outgrow what a member behind takes in (MAX_SNAPSHOT_BYTES). Counted from the
 * record alone, the same on every member: a pure function of replicated values.
 */

/**
 * A claim record's brackets, commas and flags (`true`, `null`), its place in the claims and in
 * the snapshot's lists of open and in-progress claims, at most: everything but its texts and numbers.
 */
export const CLAIM_RECORD_BYTES = 48;

/** An outcome's, a start's or a cancel's brackets and commas, at most. */
export const CLAIM_PART_BYTES = 8;

/** What `claim`'s record takes in a snapshot, at most (see the module's comment). */
export function claimBytes(claim: ClaimRecord): number {
  let bytes = CLAIM_RECORD_BYTES + nameBytes(claim.job) + numberBytes(claim.slotMs) + numberBytes(claim.token) + numberBytes(claim.attempt) + numberBytes(claim.retried);
  bytes += claim.claimedAtMs === undefined ? 4 : numberBytes(claim.claimedAtMs);
  for (const member of claim.assignees) bytes += nameBytes(member) + 1;
  for (const [member, o] of claim.outcomes) bytes += CLAIM_PART_BYTES + nameBytes(member) + partBytes(o);
  for (const [member, s] of claim.starts) bytes += CLAIM_PART_BYTES + nameBytes(member) + partBytes(s);
  const ended = claim.cancelled;
  if (ended !== null) {
    bytes += CLAIM_PART_BYTES + numberBytes(ended.token) + numberBytes(ended.atMs);
    bytes += 'byMember' in ended ? 4 + jsonTextBytes(ended.byMember) : numberBytes(ended.bySlotMs);
  }
  return bytes;
}

/** Names remembered by nameBytes at most: members, jobs and outcomes, of which claims name a few over and over. */
const MAX_NAMES_REMEMBERED = 1024;

const nameBytesOf = new Map<string, number>();

/** jsonTextBytes of a member's or a job's name, or an outcome's kind, remembered (forgotten all at once past MAX_NAMES_REMEMBERED). */
function nameBytes(name: string): number {
  let bytes = nameBytesOf.get(name);
  if (bytes === undefined) {
    if (nameBytesOf.size >= MAX_NAMES_REMEMBERED) nameBytesOf.clear();
    bytes = jsonTextBytes(name);
    nameBytesOf.set(name, bytes);
  }
  return bytes;
}

/** What an outcome's or a start's own fields take. */
function partBytes(part: { readonly outcome?: string; readonly atMs: number; readonly token: number; readonly error?: string }): number {
  let bytes = numberBytes(part.atMs) + numberBytes(part.token);
  if (part.outcome !== undefined) bytes += nameBytes(part.outcome);
  if (part.error !== undefined) bytes += jsonTextBytes(part.error) + 1;
  return bytes;
}

/**
 * The bytes JSON.stringify gives `text`, quotes included, exactly: a control character, a quote
 * or a backslash is escaped (a named escape takes 2, `\u00XX` 6), a lone surrogate is written as
 * `\uXXXX` (6), a pair takes 4 bytes of UTF-8, and the rest their UTF-8.
 */
export function jsonTextBytes(text: string): number {
  // Most texts (names, outcomes, most errors) are printable ASCII with nothing to escape: one byte a character.
  if (PLAIN_ASCII.test(text)) return text.length + 2;
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c < 0x80) bytes += c === 0x22 || c === 0x5c ? 2 : 1;
    else if (c < 0x20) bytes += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) bytes += 6;
    else bytes += 3;
  }
  return bytes;
}

/** Text that JSON writes as it is, a byte a character: printable ASCII but a quote and a backslash. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** The characters JavaScript prints `n` with (as JSON does): counted for a whole number, printed otherwise (a triggered slot's fraction, rare). */
export function numberBytes(n: number): number {
  if (!Number.isSafeInteger(n)) return String(n).length;
  const magnitude = Math.abs(n);
  let digits = 1;
  while (digits < POWERS_OF_TEN.length && magnitude >= POWERS_OF_TEN[digits]!) digits++;
  return n < 0 ? digits + 1 : digits;
}

/** 10 to the power of its place, up to the first past Number.MAX_SAFE_INTEGER. */
const POWERS_OF_TEN = Array.from({ length: 17 }, (_, k) => 10 ** k);
