import type { NodeId } from '../src/raft/types.js';
import type { JobRecord } from '../src/scheduler/records.js';
import { sameForm, type RegistrationForm } from '../src/scheduler/command.js';
import { parseSpec } from '../src/scheduler/spec.js';
import { registrationForm } from '../src/runtime/scheduler/registrations.js';
import type { Random } from '../src/time/random.js';
import { SeededRandom } from '../src/time/random.js';
import { DEFAULT_SIM_JOBS, validateJobs, type SimJob } from './jobs.js';
import { seedDraws } from './seed-share.js';

/**
 * The share of the seeds running the default jobs that draw a rolling deploy which changes some
 * jobs' specs and policies (DEPLOYED_SIM_JOBS): each member in turn restarts with them, during
 * the other faults, and the job must take the new form once every member runs it
 * (src/scheduler/job-takeover.ts).
 */
export const DEPLOY_SHARE = 0.25;

/**
 * The default jobs after such a deploy, every one changed, each at the rate it had (the sweeps
 * count the slots claimed): 'every-second' moves from an interval anchored at its registration
 * to a cron of whole seconds (its instants are all new ones), 'cron-5s' (long runs, skipped
 * while one runs) two seconds later in each five, 'all-members' (mode 'all', queued) from an
 * interval to a cron of every third second, and 'flaky' keeps one retry of its two. What a
 * member decides alone (mode, timeout, the handler) stays.
 */
export const DEPLOYED_SIM_JOBS: readonly SimJob[] = DEFAULT_SIM_JOBS.map((job) => {
  switch (job.name) {
    case 'every-second':
      return { ...job, spec: '* * * * * *' };
    case 'cron-5s':
      return { ...job, spec: '2/5 * * * * *' };
    case 'all-members':
      return { ...job, spec: '*/3 * * * * *' };
    case 'flaky':
      return { ...job, options: { ...job.options, retries: 1 } };
    default:
      return job;
  }
});

/** Draws whether a run of the default jobs deploys DEPLOYED_SIM_JOBS, on a stream of its own (seed-share.ts). */
export function drawDeployMode(seed: number): boolean {
  return seedDraws(seed, 40_692, 19, DEPLOY_SHARE);
}

/**
 * The share of the drawn deploys that drop 'flaky' rather than change it (DROPPING_SIM_JOBS): its
 * members are killed with it registered and start again without it, and each must take itself off
 * it (checkDropped), under the swarm's faults.
 */
export const DEPLOY_DROP_SHARE = 0.5;

/** DEPLOYED_SIM_JOBS without 'flaky', which the deploy drops. */
export const DROPPING_SIM_JOBS: readonly SimJob[] = DEPLOYED_SIM_JOBS.filter((job) => job.name !== 'flaky');

/** Draws whether a drawn deploy drops 'flaky' (DEPLOY_DROP_SHARE), on a stream of its own. */
export function drawDeployDrop(seed: number): boolean {
  return seedDraws(seed, 61_379, 29, DEPLOY_DROP_SHARE);
}

/** The stream a rolling deploy draws from (its order and moments), apart from every other fault's. */
export function deployRandom(seed: number): Random {
  return new SeededRandom(seed * 52_951 + 23);
}

/**
 * Checks the jobs a deploy moves `jobs` to: names of before, each with the same mode, timeout,
 * run times and failure rate (what the checkers read from the jobs as first scheduled, and what
 * a take-over leaves as it was: a mode stays a conflict); only the spec and the policy (retries,
 * their delay, catch-up, overlap) may change. A job may be left out (dropped: see
 * checkDropped), but not every one, and none added.
 */
export function validateDeploy(jobs: readonly SimJob[], deployed: readonly SimJob[]): void {
  validateJobs(deployed);
  const before = new Map(jobs.map((j) => [j.name, j]));
  if (deployed.length === 0 || deployed.some((j) => !before.has(j.name))) {
    throw new TypeError('deploy: the jobs must be jobs of before, at least one (a deploy here changes specs and policies, and may drop jobs, not add them)');
  }
  for (const job of deployed) {
    const old = before.get(job.name) as SimJob;
    const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
    if ((job.options?.mode ?? 'one') !== (old.options?.mode ?? 'one') || job.options?.timeoutMs !== old.options?.timeoutMs || !same(job.runMs, old.runMs) || job.failRate !== old.failRate) {
      throw new TypeError(`deploy: job ${JSON.stringify(job.name)} may change its spec and policy only (not its mode, timeoutMs, runMs or failRate)`);
    }
  }
}

/** The jobs of before that a deploy leaves out. */
export function droppedJobs(jobs: readonly SimJob[], deployed: readonly SimJob[]): string[] {
  const kept = new Set(deployed.map((j) => j.name));
  return jobs.filter((j) => !kept.has(j.name)).map((j) => j.name);
}

/** The deployed jobs whose form (spec, mode, policy) differs from before: the ones a take-over must move. */
export function changedJobs(jobs: readonly SimJob[], deployed: readonly SimJob[]): SimJob[] {
  const before = new Map(jobs.map((j) => [j.name, j]));
  return deployed.filter((job) => {
    const old = before.get(job.name);
    return old === undefined || !sameForm(formOf(old), formOf(job));
  });
}

function formOf(job: SimJob): RegistrationForm {
  return registrationForm(parseSpec(job.spec), job.options ?? {});
}

/**
 * `deploy`: once the faults healed and the scheduler settled, every member of the configuration
 * runs the deployed jobs, so each job the deploy changed must have taken its new form in every
 * member's state, with every member of the configuration among its handlers (they all registered
 * that form: the last one to leave the old form took the job over, and the others joined it).
 */
export function checkDeployed(states: ReadonlyArray<{ readonly id: NodeId; readonly jobs: ReadonlyMap<string, JobRecord> }>, current: readonly NodeId[], changed: readonly SimJob[], report: (what: string) => void): void {
  for (const { id, jobs } of states) {
    for (const job of changed) {
      const record = jobs.get(job.name);
      if (record === undefined) {
        report(`${id} holds no job ${job.name} after every member deployed it`);
        continue;
      }
      if (!sameForm(record, formOf(job))) {
        report(`${id} holds job ${job.name} in its old form after every member deployed a new one (${JSON.stringify(job.spec)}, ${JSON.stringify(job.options ?? {})})`);
        continue;
      }
      const missing = current.filter((member) => !record.handlers.has(member));
      if (missing.length > 0) report(`${id} holds job ${job.name} in its new form without ${missing.join(', ')} among its handlers, though every member deployed it`);
    }
  }
}

/**
 * `deploy`, for the jobs it dropped: once every member of the configuration has run the deployed
 * jobs for longer than UNSCHEDULED_AFTER_MS (the caller waits), none of them handles a dropped
 * job in any member's state. A member killed rather than stopped left its registration in the
 * log, and takes itself off once a slot of the job reaches it past that time (scheduler-runtime.ts).
 */
export function checkDropped(states: ReadonlyArray<{ readonly id: NodeId; readonly jobs: ReadonlyMap<string, JobRecord> }>, current: readonly NodeId[], dropped: readonly string[], report: (what: string) => void): void {
  for (const { id, jobs } of states) {
    for (const name of dropped) {
      const record = jobs.get(name);
      if (record === undefined) continue;
      const still = current.filter((member) => record.handlers.has(member) || record.conflicts.has(member));
      if (still.length > 0) report(`${id} holds job ${name}, which every member dropped, as still registered by ${still.join(', ')}`);
    }
  }
}
