/**
 * What the scheduler bench reads from member processes (test/fixtures/member-process.ts): the
 * runs they started, as events, and the jobs it schedules on them.
 */
import type { MemberProcess, ProcessCluster } from '../test/fixtures/process-cluster.js';

/** The bench's jobs fire every second: each burst of slots is one sample per job. */
export const EVERY_MS = 1000;

// Compared with times that member processes report: the wall clock, which every process shares
// (each process's performance.timeOrigin is its own, to a millisecond or so).
export const now = (): number => Date.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface RunStart {
  event: string;
  job: string;
  slotMs: number;
  attempt: number;
  member: string;
  at: number;
}

/** The runs started on any member since `sinceMs` (on the wall clock). */
export function starts(cluster: ProcessCluster, sinceMs: number): RunStart[] {
  return cluster.members.flatMap((m) => (m.events as unknown as RunStart[]).filter((e) => e.event === 'run-start' && e.at >= sinceMs));
}

/** Jobs `${prefix}0` … on every member of `members`, each every second, a handler that works 1 ms. */
export async function schedule(members: readonly MemberProcess[], count: number, prefix: string): Promise<void> {
  for (const m of members) {
    for (let i = 0; i < count; i++) await m.request('schedule', { name: `${prefix}${i}`, everyMs: EVERY_MS, workMs: 1, retries: 0 });
  }
}

/** Where each member serves HTTP, from its 'started' event (the cluster was started with the `http` option). */
export function httpAddresses(cluster: ProcessCluster): string[] {
  return cluster.members.map((m) => {
    const started = m.events.find((e) => e.event === 'started');
    if (typeof started?.http !== 'string') throw new Error(`member ${m.address} serves no HTTP`);
    return started.http;
  });
}
