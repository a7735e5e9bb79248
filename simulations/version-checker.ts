import { createHash } from 'node:crypto';
import { decode } from '../src/bytes/cbor-decode.js';
import { VersionTooOldError } from '../src/errors.js';
import type { Entry, NodeId } from '../src/raft/types.js';
import type { Member } from '../src/runtime/member.js';
import { isVersion } from '../src/version/versions.js';
import type { SimMember } from './member.js';
import type { NoteEvents } from './upgrades.js';
import type { Report } from './violations.js';

/**
 * After healing, with every member on the next release, the cluster's version must reach it, and
 * a test note proposed then commit, within this (ms): an election, an announcement from each
 * member, the leader's two looks VERSION_CHECK_MS apart (version-keeper.ts), and a commit, with
 * room to spare for the scheduler's own catching up after the faults.
 */
export const VERSION_LIVENESS_BOUND_MS = 15_000;

/** An entry's first byte when it carries a version (a CBOR array of three, see commands.ts). */
const CBOR_ARRAY_OF_THREE = 0x83;
const CBOR_ARRAY_OF_TWO = 0x82;
/** The kind of a cluster command (commands.ts KIND_CLUSTER): its entries change the cluster's state. */
const KIND_CLUSTER = 2;

/**
 * The checkers of mixed versions (a rolling upgrade in the fault swarm):
 * - `state-divergence`: every member decides alike at each index: applied, or skipped as
 *   malformed or inactive, and the cluster version in force after it; after each entry of the
 *   cluster's own state (announcements, activations, test notes), that state itself, as its
 *   snapshot's value (ClusterVersionState.save), compared by digest;
 * - `inactive-version`: no entry of a version above the one in force at its index is committed
 *   (read from its bytes, `[kind, payload, version]`): the gate keeps them out of the log;
 * - `version-too-old`: no member stops on an entry or a snapshot of a version it cannot read
 *   (the swarm never downgrades, so only a bug that raises the version early does it);
 * - `version-liveness`: once every member runs the next release and the faults have healed, the
 *   version rises to it and a test note proposed after commits, within VERSION_LIVENESS_BOUND_MS.
 */
export class VersionChecker implements NoteEvents {
  readonly #report: Report;
  readonly #version: number;
  /** Per index, the decision the first member to apply it made (see #decision). */
  readonly #decided = new Map<number, string>();
  /** Per index, the first member to apply it, for the report. */
  readonly #decidedBy = new Map<number, NodeId>();
  /** Indexes already reported as diverging, and as inactive, so that one bad entry is one violation of each. */
  readonly #diverged = new Set<number>();
  readonly #inactive = new Set<number>();
  /** Per member's life, its skip counters as last read: a change is the entry just applied. */
  readonly #skipped = new WeakMap<Member, { malformed: number; inactive: number }>();
  /** The shared strings of decisions that carry no digest, so that a long log keeps one copy of each. */
  readonly #interned = new Map<string, string>();
  refusedNotes = 0;
  committedNotes = 0;
  /** Notes proposed while the next version was in force on their proposer, and committed. */
  notesAfterActivation = 0;

  /** `version`: the next release's cluster version, which the upgrade must activate. */
  constructor(report: Report, version: number) {
    this.#report = report;
    this.#version = version;
  }

  onApplied(t: number, m: SimMember, entry: Entry): void {
    const member = m.member;
    if (member === null) return;
    const decision = this.#decision(member, entry);
    const known = this.#decided.get(entry.index);
    if (known === undefined) {
      this.#decided.set(entry.index, decision);
      this.#decidedBy.set(entry.index, m.id);
    } else if (known !== decision && !this.#diverged.has(entry.index)) {
      this.#diverged.add(entry.index);
      this.#report(t, 'state-divergence', `index ${entry.index} applied as ${known} on ${this.#decidedBy.get(entry.index)} and as ${decision} on ${m.id}`);
    }
    const needs = entryVersion(entry.data);
    // An entry of a version never changes the version in force: read after it, it is the one at its index.
    if (needs !== null && needs > member.versions.active && !this.#inactive.has(entry.index)) {
      this.#inactive.add(entry.index);
      this.#report(t, 'inactive-version', `index ${entry.index}, of cluster version ${needs}, committed while ${m.id} had version ${member.versions.active} in force`);
    }
  }

  /** True if `error` is this checker's to report (a member stopped on a version it cannot read). */
  onFatal(t: number, id: NodeId, error: unknown): boolean {
    if (!(error instanceof VersionTooOldError)) return false;
    this.#report(t, 'version-too-old', `${id}, never downgraded, stopped: ${error.message}`);
    return true;
  }

  onRefused(): void {
    this.refusedNotes++;
  }

  onCommitted(_t: number, _member: SimMember, _index: number, active: number): void {
    this.committedNotes++;
    if (active >= this.#version) this.notesAfterActivation++;
  }

  /** Whether every member runs the next version with it in force, and a note proposed under it committed. */
  reached(members: readonly SimMember[]): boolean {
    return this.notesAfterActivation > 0 && members.every((m) => m.member !== null && m.member.versions.active >= this.#version);
  }

  /** After the bound past healing: reports `version-liveness` unless `reached`. */
  checkLiveness(t: number, members: readonly SimMember[], healedAt: number): void {
    if (this.reached(members)) return;
    const where = members.map((m) => `${m.id} reads up to ${m.versions.stateMachine.max}, ${m.member === null ? 'down' : `version ${m.member.versions.active}, waiting for ${describeWait(m.member)}`}`);
    this.#report(t, 'version-liveness', `after healing at ${healedAt} ms, the cluster did not reach version ${this.#version} with a note committed under it within ${VERSION_LIVENESS_BOUND_MS} ms (${this.notesAfterActivation} such notes; ${where.join('; ')})`);
  }

  /**
   * What `member` did with `entry`, as it shows from outside: which skip counter moved, the
   * version in force after it, and for an entry of the cluster's state a digest of that state.
   */
  #decision(member: Member, entry: Entry): string {
    const seen = this.#skipped.get(member) ?? { malformed: 0, inactive: 0 };
    const now = member.skippedEntries;
    const what = now.malformed !== seen.malformed ? 'skipped as malformed' : now.inactive !== seen.inactive ? 'skipped as inactive' : 'applied';
    this.#skipped.set(member, { ...now });
    const plain = `${what} at version ${member.versions.active}`;
    const data = entry.data;
    if ((data[0] === CBOR_ARRAY_OF_TWO || data[0] === CBOR_ARRAY_OF_THREE) && data[1] === KIND_CLUSTER) {
      const digest = createHash('sha256').update(JSON.stringify(member.versions.save())).digest('hex').slice(0, 12);
      return `${plain}, cluster state ${digest}`;
    }
    let shared = this.#interned.get(plain);
    if (shared === undefined) this.#interned.set(plain, (shared = plain));
    return shared;
  }
}

/** The version an entry's bytes say it needs (`[kind, payload, version]`), or null for an entry of the first version or none. */
export function entryVersion(data: Uint8Array): number | null {
  if (data[0] !== CBOR_ARRAY_OF_THREE) return null;
  let value: unknown;
  try {
    value = decode(data);
  } catch {
    return null;
  }
  const version = Array.isArray(value) ? (value[2] as unknown) : undefined;
  return isVersion(version) ? version : null;
}

function describeWait(member: Member): string {
  const d = member.versionKeeper.decision;
  return d.kind === 'waiting' ? d.waitingFor.join(', ') : d.kind;
}
