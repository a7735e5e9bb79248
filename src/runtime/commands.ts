import { decode, decodeDroppingLeadingBom } from '../bytes/cbor-decode.js';
import { readFanoutEntry, writeFanoutEntry } from './fanout/entry-codec.js';
import { CBOR_UINT, headBytes, writeBytes, writeHead } from '../bytes/cbor-heads.js';
import { encodeSmall, pooledBytes } from '../bytes/small-cbor.js';
import { isOperationCommand, isSchedulerCommand, isVersionTwoSchedulerCommand } from '../scheduler/command-shape.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import { VersionTooOldError } from '../errors.js';
import { isClusterCommand, type ClusterCommand } from '../version/cluster-command.js';
import { BATCH_VERSION, EXACT_TEXT_VERSION, FANOUT_VERSION, FIRST_CLUSTER_VERSION, FORFEIT_VERSION, isVersion, OPERATIONS_VERSION, SUPPORTED, type VersionSupport } from '../version/versions.js';
import { isFanoutCommand } from '../fanout/command-shape.js';
import type { FanoutCommand } from '../fanout/command.js';
import { batchCommands, batchPayload, type BatchedCommand } from './command-batch.js';
import { shareStrings } from './shared-strings.js';

/**
 * What a Normal log entry carries: an application's own bytes (`cluster.propose`), a scheduler
 * command, or a command of the cluster's own state (versions). CBOR `[kind, payload]`, or
 * `[kind, payload, version]` for a command of a cluster version after the first: the version
 * each entry needs is in the entry, so that every member, whatever its release, decides alike
 * what to do with it (decodeEntry). `scheduler-batch` (cluster version 2, BATCH_VERSION): the
 * registrations of many jobs, applied in order at the entry's index, written compactly (see
 * command-batch.ts); a `forfeit` (cluster version
 * 2, FORFEIT_VERSION) is a scheduler command of that form too, and so are `pause`, `resume`,
 * `trigger` and `cancel-runs` of cluster version 3 (OPERATIONS_VERSION). `extension`: a command of
 * the test-only next version (see version/extension.ts).
 */
export type LogCommand =
  | { readonly kind: 'user'; readonly data: Uint8Array }
  | { readonly kind: 'scheduler'; readonly command: SchedulerCommand }
  | { readonly kind: 'scheduler-batch'; readonly commands: readonly BatchedCommand[] }
  | { readonly kind: 'cluster'; readonly command: ClusterCommand }
  | { readonly kind: 'fanout'; readonly command: FanoutCommand }
  | { readonly kind: 'extension'; readonly version: number; readonly command: unknown };

/** An entry every member skips, alike: not a command under its version's rules, or of a version not active at its index. */
export interface SkippedEntry {
  readonly kind: 'skip';
  readonly reason: 'malformed' | 'inactive';
}

const KIND_USER = 0;
const KIND_SCHEDULER = 1;
const KIND_CLUSTER = 2;
/** The kind of a fan-out command's entry, its first item (fanout/entry-codec.ts writes and reads them). */
export const KIND_FANOUT = 3;
const CBOR_ARRAY_OF_TWO = 0x82;
const CBOR_ARRAY_OF_THREE = 0x83;

/**
 * Whether `bytes` is an application entry, read from its first two bytes without decoding it:
 * 0x82 opens a CBOR array of two, and KIND_USER, a small integer, is one byte of its own. An
 * entry that passes this and is malformed further on is one decodeCommand would skip too.
 */
export function isUserCommand(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === CBOR_ARRAY_OF_TWO && bytes[1] === KIND_USER;
}

/**
 * Whether `bytes` may be a fan-out command, read from its first two bytes without decoding it:
 * 0x83 opens a CBOR array of three (a command of a version after the first), and KIND_FANOUT, a
 * small integer, is one byte of its own. decodeEntry decides whether it is one.
 */
export function mayBeFanoutCommand(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === CBOR_ARRAY_OF_THREE && bytes[1] === KIND_FANOUT;
}

/**
 * Short-lived bytes (see encodeSmall): a proposal's command lives while the proposal waits to be
 * applied or to fail (maxPendingProposals of them at most). A leader copies what it appends into
 * the arena for log data (RaftConfig.keepData), where the log keeps it until compaction.
 */
export function encodeCommand(command: LogCommand): Uint8Array {
  if (command.kind === 'scheduler') return encodeSmall(schedulerEntry(command.command));
  if (command.kind === 'cluster') return encodeSmall([KIND_CLUSTER, command.command]);
  if (command.kind === 'scheduler-batch') return encodeSmall([KIND_SCHEDULER, batchPayload(command.commands), BATCH_VERSION]);
  if (command.kind === 'extension') return encodeSmall([KIND_CLUSTER, command.command, command.version]);
  // The commands of every item are written by hand (fanout/entry-codec.ts), the same bytes.
  if (command.kind === 'fanout') return writeFanoutEntry(KIND_FANOUT, command.command, FANOUT_VERSION) ?? encodeSmall([KIND_FANOUT, command.command, FANOUT_VERSION]);
  // A user's command is written head by head (cbor-heads.ts), the same bytes cborg writes for
  // [KIND_USER, data] at a fraction of its allocation: one per proposal, on the commit path.
  const { data } = command;
  const out = pooledBytes(2 + headBytes(data.length) + data.length);
  out[0] = CBOR_ARRAY_OF_TWO;
  writeBytes(out, writeHead(out, 1, CBOR_UINT, KIND_USER), data);
  return out;
}

/** A scheduler command's entry: `[kind, command]`, or with the cluster version its kind needs (see decodeEntry). */
function schedulerEntry(command: SchedulerCommand): unknown[] {
  switch (command.type) {
    case 'forfeit':
      return [KIND_SCHEDULER, command, FORFEIT_VERSION];
    case 'pause':
    case 'resume':
    case 'trigger':
    case 'cancel-runs':
      return [KIND_SCHEDULER, command, OPERATIONS_VERSION];
    default:
      return [KIND_SCHEDULER, command];
  }
}

/**
 * Decodes an entry written by encodeCommand, at an index where cluster version `active` is in
 * force, by a member that reads `support`. The decision is a function of the bytes and
 * `active` alone, never of the member's release, so that members of different releases apply
 * the same log alike:
 * - an entry of a version above `active` is skipped (`inactive`), by every member: no member
 *   proposes one (the gate, gate.ts), so only a bug or a forgery writes one;
 * - an entry that is not a command under its version's rules is skipped (`malformed`): its
 *   version is active, so every member reads those rules. A scheduler command is checked
 *   field by field (see isSchedulerCommand), so that no bad value enters the replicated state;
 * - an entry of an active version this member cannot read throws VersionTooOldError: it must
 *   stop, never skip what the others apply. (It stopped already at that version's activation;
 *   this is the defence behind it.)
 */
export function decodeEntry(bytes: Uint8Array, active: number, support: VersionSupport): LogCommand | SkippedEntry {
  let value: unknown;
  try {
    // A fan-out command's entry, one or more for every item, is read by hand where it can be
    // (fanout/entry-codec.ts), to the same value (its text ASCII, which it leaves to cborg else).
    // Text as written only from EXACT_TEXT_VERSION on, as members of 0.1.0 read it before.
    value = (mayBeFanoutCommand(bytes) ? readFanoutEntry(bytes) : undefined) ?? (active >= EXACT_TEXT_VERSION ? decode(bytes) : decodeDroppingLeadingBom(bytes));
  } catch {
    return MALFORMED;
  }
  if (!Array.isArray(value) || (value.length !== 2 && value.length !== 3)) return MALFORMED;
  const [kind, payload, version] = value as [unknown, unknown, unknown];
  if (value.length === 2) {
    if (kind === KIND_USER && payload instanceof Uint8Array) return { kind: 'user', data: payload };
    if (kind === KIND_SCHEDULER && isSchedulerCommand(payload)) return { kind: 'scheduler', command: shareStrings(payload) };
    if (kind === KIND_CLUSTER && isClusterCommand(payload)) return { kind: 'cluster', command: payload };
    return MALFORMED;
  }
  // A version is written only when it is not the first: [kind, payload, 1] is not an encoding.
  if (!isVersion(version) || version === FIRST_CLUSTER_VERSION) return MALFORMED;
  if (version > active) return INACTIVE;
  if (version > support.stateMachine.max) throw new VersionTooOldError(version, support.stateMachine.max, 'An entry of the log');
  const extension = support.extension;
  if (kind === KIND_CLUSTER && extension?.version === version) {
    const command = extension.decode(payload);
    if (command !== null) return { kind: 'extension', version, command };
  }
  // Each version that adds commands decodes them here, by the version the entry names.
  if (version === BATCH_VERSION && kind === KIND_SCHEDULER) {
    const commands = batchCommands(payload);
    if (commands !== null) return { kind: 'scheduler-batch', commands };
  }
  if (version === FORFEIT_VERSION && kind === KIND_SCHEDULER && isVersionTwoSchedulerCommand(payload)) return { kind: 'scheduler', command: shareStrings(payload) };
  if (version === OPERATIONS_VERSION && kind === KIND_SCHEDULER && isOperationCommand(payload)) return { kind: 'scheduler', command: shareStrings(payload) };
  if (version === FANOUT_VERSION && kind === KIND_FANOUT && isFanoutCommand(payload)) return { kind: 'fanout', command: payload };
  return MALFORMED;
}

const MALFORMED: SkippedEntry = { kind: 'skip', reason: 'malformed' };
const INACTIVE: SkippedEntry = { kind: 'skip', reason: 'inactive' };

/**
 * decodeEntry at the first cluster version for a member of this release, null for a skipped
 * entry: for tests and tools that read a log of scheduler and user commands.
 */
export function decodeCommand(bytes: Uint8Array): LogCommand | null {
  const decoded = decodeEntry(bytes, FIRST_CLUSTER_VERSION, SUPPORTED);
  return decoded.kind === 'skip' ? null : decoded;
}
