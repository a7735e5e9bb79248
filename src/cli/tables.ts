import type { SlotHistory } from '../api/history.js';
import type { ClusterState } from '../api/state.js';

/** A value as JSON gives it back: its Dates as ISO strings. */
export type Jsonified<T> = T extends Date ? string : T extends ReadonlyArray<infer U> ? ReadonlyArray<Jsonified<U>> : T extends object ? { readonly [K in keyof T]: Jsonified<T[K]> } : T;

export type StateJson = Jsonified<ClusterState>;
export type HistoryJson = Jsonified<SlotHistory>;

/**
 * `text` with its control characters (C0, DEL and C1, which a terminal may take as commands) and
 * the bidirectional controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069, which reorder
 * what follows on the line: a name could make a table lie) written out (`\u001b`), line breaks
 * too unless `lines`: a job's name or a run's error is the app's, and printed raw, an escape in
 * it could recolour or retitle the operator's terminal.
 */
export function printable(text: string, lines = false): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!(c < 0x20 || (c >= 0x7f && c <= 0x9f) || isBidiControl(c)) || (lines && c === 0x0a)) continue;
    out += `${text.slice(from, i)}\\u${c.toString(16).padStart(4, '0')}`;
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

function isBidiControl(c: number): boolean {
  return c === 0x061c || c === 0x200e || c === 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/** Rows under a header, each column as wide as its widest cell, two spaces apart, each cell printable. */
export function table(header: readonly string[], cells: ReadonlyArray<readonly string[]>): string {
  const rows = cells.map((row) => row.map((cell) => printable(cell)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const dash = (value: string | number | null | undefined): string => (value === null || value === undefined ? '-' : String(value));

/** `cronraft status`: the member's view, one line per fact. */
export function statusText(state: StateJson, ready: { readonly ready: boolean; readonly reason: string | null }): string {
  const reachable = state.members.filter((m) => m.reachable).length;
  const rows: Array<[string, string]> = [
    ['member', state.id],
    ['status', state.status],
    ['role', state.role],
    ['term', String(state.term)],
    ['leader', dash(state.leader)],
    ['commit', `${state.commitIndex} (applied ${state.appliedIndex})`],
    ['clock', state.clock.synced ? 'synced' : 'not synced'],
    ['members', `${state.members.length} (${reachable} reachable)`],
    ['jobs', String(state.jobs.length)],
    ['version', String(state.version.active)],
    ['ready', ready.ready ? 'yes' : `no: ${ready.reason ?? 'unknown'}`],
  ];
  return rows.map(([k, v]) => `${k.padEnd(8)} ${printable(v)}`).join('\n');
}

/** `cronraft members`. */
export function membersTable(leader: string | null, members: StateJson['members']): string {
  return table(
    ['ID', 'ROLE', 'REACHABLE', 'LAG', 'CLOCK OFFSET MS', 'LAST CONTACT MS'],
    members.map((m) => [m.id, m.id === leader ? 'leader' : m.voter ? 'voter' : 'learner', reachableText(m), dash(m.lag), m.clockOffsetMs === null ? '-' : `${m.clockOffsetMs.toFixed(1)}${m.clockSkewed ? ' SKEWED' : ''}`, m.lastContactMs === null ? '-' : String(Math.round(m.lastContactMs))]),
  );
}

/**
 * Whether a member is reachable, and, when not, a failed handshake named (most often another
 * cluster secret): a member of an older release says nothing of it.
 */
function reachableText(m: StateJson['members'][number]): string {
  if (m.reachable) return 'yes';
  return (m.dialFailure as string | null | undefined) === 'handshake' ? 'NO (handshake failed: another secret?)' : 'NO';
}

/** `cronraft jobs`. */
export function jobsTable(jobs: StateJson['jobs']): string {
  return table(
    ['NAME', 'SPEC', 'MODE', 'PAUSED', 'NEXT SLOT', 'LAST SLOT', 'LAST OUTCOME', 'MISSED', 'SKIPPED', 'RUNNING'],
    jobs.map((j) => [
      j.name,
      j.spec,
      j.mode,
      j.paused === true ? 'yes' : 'no',
      dash(j.nextSlot),
      dash(j.lastClaim?.slot),
      j.lastClaim === null ? '-' : outcomesText(j.lastClaim.outcomes) || 'pending',
      String(j.missedSlots),
      String(j.skippedRuns),
      String(j.running.length),
    ]),
  );
}

/** `cronraft history`. */
export function historyTable(history: readonly HistoryJson[]): string {
  return table(
    ['JOB', 'SLOT', 'TOKEN', 'ASSIGNEES', 'OUTCOMES'],
    history.map((h) => [h.job, h.slot, String(h.fencingToken), h.assignees.join(','), outcomesText(h.outcomes) || (Object.keys(h.running).length > 0 ? 'running' : 'pending')]),
  );
}

/** `member=outcome` per member, or '' when none reported. */
function outcomesText(outcomes: Readonly<Record<string, { readonly outcome?: unknown }>>): string {
  return Object.entries(outcomes)
    .map(([member, o]) => `${member}=${String(o.outcome)}`)
    .join(' ');
}
