import { decode } from 'cborg';
import { CBOR_UINT, headBytes, writeBytes, writeHead } from '../bytes/cbor-heads.js';
import { encodeSmall, pooledBytes } from '../bytes/small-cbor.js';
import { isSchedulerCommand } from '../scheduler/command-shape.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import { shareStrings } from './shared-strings.js';

/**
 * What a Normal log entry carries: an application's own bytes (`cluster.propose`) or a
 * scheduler command. CBOR `[kind, payload]`; the kind tells them apart in a log that holds both.
 */
export type LogCommand = { readonly kind: 'user'; readonly data: Uint8Array } | { readonly kind: 'scheduler'; readonly command: SchedulerCommand };

const KIND_USER = 0;
const KIND_SCHEDULER = 1;
const CBOR_ARRAY_OF_TWO = 0x82;

/**
 * Whether `bytes` is an application entry, read from its first two bytes without decoding it:
 * 0x82 opens a CBOR array of two, and KIND_USER, a small integer, is one byte of its own. An
 * entry that passes this and is malformed further on is one decodeCommand would skip too.
 */
export function isUserCommand(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === CBOR_ARRAY_OF_TWO && bytes[1] === KIND_USER;
}

/**
 * Short-lived bytes (see encodeSmall): a proposal's command lives while the proposal waits to be
 * applied or to fail (maxPendingProposals of them at most). A leader copies what it appends into
 * the arena for log data (RaftConfig.keepData), where the log keeps it until compaction.
 */
export function encodeCommand(command: LogCommand): Uint8Array {
  if (command.kind === 'scheduler') return encodeSmall([KIND_SCHEDULER, command.command]);
  // A user's command is written head by head (cbor-heads.ts), the same bytes cborg writes for
  // [KIND_USER, data] at a fraction of its allocation: one per proposal, on the commit path.
  const { data } = command;
  const out = pooledBytes(2 + headBytes(data.length) + data.length);
  out[0] = CBOR_ARRAY_OF_TWO;
  writeBytes(out, writeHead(out, 1, CBOR_UINT, KIND_USER), data);
  return out;
}

/**
 * Decodes an entry written by encodeCommand. Entries come from the replicated log, which only
 * members write, so anything else means a bug or a newer format: null, and the entry is skipped
 * the same way on every member. A scheduler command is checked field by field (see
 * isSchedulerCommand), so that no bad value enters the replicated state.
 */
export function decodeCommand(bytes: Uint8Array): LogCommand | null {
  let value: unknown;
  try {
    value = decode(bytes);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [kind, payload] = value as [unknown, unknown];
  if (kind === KIND_USER && payload instanceof Uint8Array) return { kind: 'user', data: payload };
  if (kind === KIND_SCHEDULER && isSchedulerCommand(payload)) return { kind: 'scheduler', command: shareStrings(payload) };
  return null;
}
