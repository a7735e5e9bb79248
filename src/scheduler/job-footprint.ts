import type { NodeId } from '../raft/types.js';
import { jsonTextBytes, numberBytes } from './claim-footprint.js';
import type { JobRecord, LockRecord } from './records.js';
import type { JobSpec } from './spec.js';

/*
 * What a job's and a lock's records take in a scheduler snapshot (state-snapshot.ts writes them
 * as JSON), at most: SchedulerState bounds each sum (maxJobBytes, maxLockBytes), so that long
 * names and many members cannot make the snapshot outgrow what a member behind takes in
 * (snapshot-shares.ts). Counted from the records alone, the same on every member. The numbers a
 * record changes as it lives (a job's mark and counts, a lock's token and time) are counted at
 * the most a number takes, so that a record's count changes only where its texts or lists do.
 */

/** The most characters JavaScript prints a number with (`-0.0000012345678901234567`). */
export const MAX_NUMBER_BYTES = 25;

/**
 * A job record's brackets, commas, flags and words (its mode, its spec's and catch-up's kinds,
 * its overlap, a paused job's `true`), and its three changing numbers (mark, missed slots,
 * skipped runs), at most: everything but its texts, its lists of members and its fixed numbers.
 */
export const JOB_RECORD_BYTES = 72 + 3 * MAX_NUMBER_BYTES;

/** A lock record's brackets and commas and its two changing numbers (token, time), at most: all but its name and holder. */
export const LOCK_RECORD_BYTES = 6 + 2 * MAX_NUMBER_BYTES;

/** What a job's record takes in a snapshot, at most (see the module's comment). */
export function jobBytes(job: JobRecord): number {
  const { policy } = job;
  let bytes = JOB_RECORD_BYTES + jsonTextBytes(job.name) + specBytes(job.spec) + numberBytes(job.anchorMs);
  bytes += numberBytes(policy.retries) + numberBytes(policy.retryDelayMs);
  if (policy.catchUp.policy === 'all') bytes += numberBytes(policy.catchUp.windowMs) + numberBytes(policy.catchUp.maxSlots);
  bytes += handlerListBytes(job.handlers);
  for (const [member, theirs] of job.conflicts) bytes += conflictBytes(member, theirs);
  return bytes;
}

/** What a job's spec takes beyond its kind's word: its texts and numbers, never changed. */
function specBytes(spec: JobSpec): number {
  switch (spec.kind) {
    case 'cron':
      return jsonTextBytes(spec.expression) + jsonTextBytes(spec.tz) + (spec.dst === undefined ? 0 : 2 + jsonTextBytes(spec.dst.gap) + jsonTextBytes(spec.dst.overlap));
    case 'every':
      return numberBytes(spec.everyMs);
    case 'at':
      return numberBytes(spec.atMs);
    case 'delay':
      return numberBytes(spec.delayMs) + numberBytes(spec.initialDelayMs) + 1;
  }
}

/** Handler sets are shared and never changed (HandlerSets): each one's count is made once. */
const handlerListBytesOf = new WeakMap<ReadonlySet<NodeId>, number>();

/** What a job's list of handlers takes beyond its brackets: each member's name and a comma. */
export function handlerListBytes(handlers: ReadonlySet<NodeId>): number {
  let bytes = handlerListBytesOf.get(handlers);
  if (bytes === undefined) {
    bytes = 0;
    for (const member of handlers) bytes += jsonTextBytes(member) + 1;
    handlerListBytesOf.set(handlers, bytes);
  }
  return bytes;
}

/** What a member's conflict (`[member, theirs]` and a comma) takes in its job's list. */
export function conflictBytes(member: NodeId, theirs: string): number {
  return jsonTextBytes(member) + jsonTextBytes(theirs) + 4;
}

/** What the lock named `name` takes in a snapshot, at most, with the comma before it. */
export function lockBytes(name: string, lock: LockRecord): number {
  return LOCK_RECORD_BYTES + jsonTextBytes(name) + jsonTextBytes(lock.holder);
}
