import type { NodeId } from '../raft/types.js';
import { isAssignMode, isJobPolicy, isJobSpec } from '../scheduler/command-shape.js';
import type { AssignMode, JobPolicy, SchedulerCommand } from '../scheduler/command.js';
import type { JobSpec } from '../scheduler/spec.js';
import { sharedString, shareStrings } from './shared-strings.js';

/**
 * The scheduler commands a batch may hold: registrations, which use no fencing token (the
 * entry's index), so that many of them may share one entry. An app that schedules ten
 * thousand jobs as it starts writes twenty entries rather than ten thousand.
 */
export type BatchedCommand = Extract<SchedulerCommand, { type: 'register' | 'unregister' }>;

/**
 * The most commands one batch holds; a longer one read from the log is malformed. Each job costs
 * a batch its name (at most 200 characters, 600 bytes) and a small number, so that a batch of
 * jobs scheduled alike stays below the largest proposal (maxProposalBytes). Every entry costs
 * each member a disk write, messages and a plan of the leader's: larger batches, fewer entries.
 */
export const MAX_COMMANDS_PER_BATCH = 512;

const REGISTER = 0;
const UNREGISTER = 1;

/** `items` cut into runs of at most `size`, in order: batches of MAX_COMMANDS_PER_BATCH, say. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

type Registration = Extract<SchedulerCommand, { type: 'register' }>;

/**
 * The payload of a batch's entry (cluster version 2, see commands.ts): one member's
 * registrations made at one time, or its unregistrations, with what they share written once.
 * - `[0, member, atMs, forms, jobs]`: `forms` lists each distinct `[spec, mode, policy]` of the
 *   batch once (a spec and a policy as a register command holds them), and `jobs` alternates a
 *   job's name and the place of its form in `forms`, in the batch's order;
 * - `[1, member, names]`: the jobs the member unregisters, in order.
 *
 * A register command written out whole repeats its field names, its member, spec and policy for
 * every job: at ten thousand jobs the batches' bytes, their decoding and the objects decoded on
 * every member cost more than applying them. Forms are told apart by identity: the registrations
 * of jobs scheduled alike share their spec and policy (Registrations makes them so), and a form
 * written twice is only less compact.
 *
 * Throws TypeError for commands that do not make such a batch (none, more than
 * MAX_COMMANDS_PER_BATCH, of two members, of two times, or registrations beside unregistrations).
 */
export function batchPayload(commands: readonly BatchedCommand[]): unknown {
  const first = commands[0];
  if (first === undefined || commands.length > MAX_COMMANDS_PER_BATCH) throw new TypeError(`A batch holds 1 to ${MAX_COMMANDS_PER_BATCH} commands`);
  if (first.type === 'unregister') {
    const names = commands.map((c) => (c.type === 'unregister' && c.member === first.member ? c.job : notOneBatch()));
    return [UNREGISTER, first.member, names];
  }
  const forms: Array<[JobSpec, AssignMode, JobPolicy]> = [];
  const jobs: Array<string | number> = [];
  for (const c of commands) {
    if (c.type !== 'register' || c.member !== first.member || c.atMs !== first.atMs) notOneBatch();
    let form = forms.findIndex(([spec, mode, policy]) => spec === c.spec && mode === c.mode && policy === c.policy);
    if (form < 0) form = forms.push([c.spec, c.mode, c.policy]) - 1;
    jobs.push(c.job, form);
  }
  return [REGISTER, first.member, first.atMs, forms, jobs];
}

function notOneBatch(): never {
  throw new TypeError("A batch holds one member's registrations made at one time, or its unregistrations");
}

/**
 * The commands of a batch's payload read from the log, or null if it is not one this release
 * writes: every field checked as a register or unregister command's is (isSchedulerCommand),
 * 1 to MAX_COMMANDS_PER_BATCH jobs, every form used and every job's form one of the batch's. The
 * commands of one form share its spec, policy and strings (see shareStrings), as their jobs'
 * records then do.
 */
export function batchCommands(payload: unknown): BatchedCommand[] | null {
  if (!Array.isArray(payload)) return null;
  const [type, member] = payload as unknown[];
  if (typeof member !== 'string') return null;
  if (type === UNREGISTER && payload.length === 3) return unregistrations(sharedString(member), payload[2]);
  if (type === REGISTER && payload.length === 5) return registrations(member, payload[2], payload[3], payload[4]);
  return null;
}

function unregistrations(member: NodeId, names: unknown): BatchedCommand[] | null {
  if (!Array.isArray(names) || names.length === 0 || names.length > MAX_COMMANDS_PER_BATCH) return null;
  const out: BatchedCommand[] = [];
  for (const job of names as unknown[]) {
    if (typeof job !== 'string') return null;
    out.push({ type: 'unregister', job, member });
  }
  return out;
}

function registrations(member: NodeId, atMs: unknown, forms: unknown, jobs: unknown): BatchedCommand[] | null {
  if (typeof atMs !== 'number' || !Number.isFinite(atMs)) return null;
  if (!Array.isArray(jobs) || jobs.length === 0 || jobs.length % 2 !== 0 || jobs.length > 2 * MAX_COMMANDS_PER_BATCH) return null;
  if (!Array.isArray(forms) || forms.length === 0 || forms.length > jobs.length / 2) return null;
  // Each form as the first registration of its jobs, its strings shared; a job's copies it.
  const templates: Registration[] = [];
  for (const form of forms as unknown[]) {
    if (!Array.isArray(form) || form.length !== 3) return null;
    const [spec, mode, policy] = form as unknown[];
    if (!isJobSpec(spec) || !isAssignMode(mode) || !isJobPolicy(policy)) return null;
    templates.push(shareStrings({ type: 'register', job: '', spec, mode, policy, member, atMs }) as Registration);
  }
  const used = new Array<boolean>(templates.length).fill(false);
  const out: BatchedCommand[] = [];
  for (let i = 0; i < jobs.length; i += 2) {
    const job: unknown = jobs[i];
    const form: unknown = jobs[i + 1];
    if (typeof job !== 'string' || typeof form !== 'number') return null;
    const t = templates[form];
    // An index that is not a whole number in range finds no template.
    if (t === undefined || !Number.isInteger(form)) return null;
    used[form] = true;
    out.push({ type: 'register', job, spec: t.spec, mode: t.mode, policy: t.policy, member: t.member, atMs });
  }
  return used.every(Boolean) ? out : null;
}
