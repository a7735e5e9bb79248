import type { Entry, Message } from './types.js';

/**
 * The bounds of the protocol's numbers, far below 2^53, where a double stops holding every
 * integer. A peer can send any number the wire can carry, and one that is large enough does
 * harm for good: at a term of 2^53 - 1 the next term is not a safe integer, so a member that
 * adopted it could never send a vote again, and with it on disk a restart kept it. So the codec
 * refuses a frame with any number past these, the protocol checks them again
 * (`messageWithinBounds`), and a member never adopts a term it could not campaign after.
 *
 * The transport imports these (it must not let through what the protocol refuses); they live
 * here because the protocol may not import the transport.
 */

/**
 * The largest term on the wire and on disk. A member holds a term only below it (see
 * `canHoldTerm`), so the next term, which it campaigns at, is in bounds too. At 2^48 a member
 * campaigning every millisecond would need some 8,900 years to reach it, and a term plus one
 * stays exact.
 */
export const MAX_TERM = 2 ** 48;

/**
 * The largest log index, commit index or snapshot index. At 2^51 a million entries a second
 * would take some 71 years (this implementation commits well under a tenth of that), and the
 * sum of two indexes, or of an index and a count, stays below 2^53 and exact.
 */
export const MAX_INDEX = 2 ** 51;

/**
 * The largest read context: a read-index request's `ctx` and a heartbeat round's `readCtx`, both
 * counters that grow by one per read. At 2^51 a million reads a second would take some 71 years.
 */
export const MAX_READ_CTX = 2 ** 51;

/**
 * How far ahead of a member's term a vote request from outside its voters may be and still be
 * taken (node.ts #takesVoteRequest). An honest such asker is a voter of a configuration the
 * member has not applied, whose term ran ahead by the elections the member missed: a few, or
 * some hundreds of thousands after a day of elections every quarter second. A stranger holding
 * the secret gains at most this much per leaderless moment, so pushing a cluster to MAX_TERM,
 * where no member could campaign again, would take it some 2^28 of them.
 */
export const MAX_OUTSIDE_TERM_LEAD = 2 ** 20;

/** Whether `value` is an integer from 0 to `max`. */
function isBoundedCount(value: number, max: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value <= max;
}

/**
 * Whether a member may hold `term`: a term in bounds whose successor, the term it campaigns at
 * next, is in bounds too. A member at the last such term cannot campaign again, rather than
 * campaign with votes it could not send.
 */
export function canHoldTerm(term: number): boolean {
  return isBoundedCount(term, MAX_TERM - 1);
}

/**
 * Whether every number of `m` is in bounds and consistent with its term: a term a member may
 * hold, indexes and read contexts within theirs, and the terms of a log (a candidate's last
 * entry, an append's entries and the one before them, a snapshot, a rejection's hint) no later
 * than the term of the message that carries them, as a correct member's always are. An entry of
 * a later term would outrank every member's log in elections and break the order of terms along
 * the log; an index or context past its bound could not be answered.
 */
export function messageWithinBounds(m: Message): boolean {
  if (!canHoldTerm(m.term)) return false;
  switch (m.type) {
    case 'prevote':
    case 'vote':
      return isBoundedCount(m.lastIndex, MAX_INDEX) && isBoundedCount(m.lastTerm, m.term);
    case 'append':
      return isBoundedCount(m.commit, MAX_INDEX) && isBoundedCount(m.prevTerm, m.term) && entriesWithinBounds(m.prevIndex, m.prevTerm, m.term, m.entries);
    case 'append-resp':
      return isBoundedCount(m.index, MAX_INDEX) && isBoundedCount(m.hintIndex, MAX_INDEX) && isBoundedCount(m.hintTerm, m.term);
    case 'heartbeat':
      return isBoundedCount(m.commit, MAX_INDEX) && isBoundedCount(m.readCtx, MAX_READ_CTX);
    case 'heartbeat-resp':
      return isBoundedCount(m.readCtx, MAX_READ_CTX);
    case 'propose-resp':
    case 'conf-propose-resp':
      return isBoundedCount(m.index, MAX_INDEX);
    case 'read-index':
      return isBoundedCount(m.ctx, MAX_READ_CTX);
    case 'read-index-resp':
      return isBoundedCount(m.ctx, MAX_READ_CTX) && isBoundedCount(m.index, MAX_INDEX);
    case 'snapshot':
      return isBoundedCount(m.snapshot.index, MAX_INDEX) && isBoundedCount(m.snapshot.term, m.term);
    case 'prevote-resp':
    case 'vote-resp':
    case 'timeout-now':
    case 'propose':
    case 'conf-propose':
      return true;
  }
}

/** Entries that follow `prevIndex` one after another, up to MAX_INDEX, with terms that never fall, from `prevTerm` to `term`. */
function entriesWithinBounds(prevIndex: number, prevTerm: number, term: number, entries: readonly Entry[]): boolean {
  if (!isBoundedCount(prevIndex, MAX_INDEX - entries.length)) return false;
  let previous = prevTerm;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as Entry;
    if (e.index !== prevIndex + 1 + i || !isBoundedCount(e.term, term) || e.term < previous) return false;
    previous = e.term;
  }
  return true;
}
