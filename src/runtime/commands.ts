import { decode, encode } from 'cborg';
import { isSchedulerCommand } from '../scheduler/command-shape.js';
import type { SchedulerCommand } from '../scheduler/state.js';

/**
 * What a Normal log entry carries: an application's own bytes (`cluster.propose`) or a
 * scheduler command. CBOR `[kind, payload]`; the kind tells them apart in a log that holds both.
 */
export type LogCommand = { readonly kind: 'user'; readonly data: Uint8Array } | { readonly kind: 'scheduler'; readonly command: SchedulerCommand };

const KIND_USER = 0;
const KIND_SCHEDULER = 1;

export function encodeCommand(command: LogCommand): Uint8Array {
  return command.kind === 'user' ? encode([KIND_USER, command.data]) : encode([KIND_SCHEDULER, command.command]);
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
  if (kind === KIND_SCHEDULER && isSchedulerCommand(payload)) return { kind: 'scheduler', command: payload };
  return null;
}
