import { describe, expect, it } from 'vitest';
import { freePort } from '../fixtures/process-cluster.js';
import type * as DecoratedApp from '../fixtures/decorated-app.js';
import type * as Cronraft from '../../src/index.js';
import type * as Decorators from '../../src/decorators.js';
import type { Cluster } from '../../src/index.js';
import { stoppedAfterEach } from '../fixtures/loopback-members.js';

/** The app's classes and cronraft itself, as tsc compiled them (see decorated-app.ts), built by the global setup. */
const app = (await import(new URL('../../dist/test/fixtures/decorated-app.js', import.meta.url).href)) as typeof DecoratedApp;
const cronraft = (await import(new URL('../../dist/src/index.js', import.meta.url).href)) as typeof Cronraft;

const started = stoppedAfterEach();

async function oneMember(): Promise<Cluster> {
  const listen = `127.0.0.1:${await freePort()}`;
  const cluster = new cronraft.Cluster([listen], { storage: 'memory', listen });
  started.push(cluster);
  return cluster;
}

describe('cronraft/decorators, as an app writes them', () => {
  it('refuses options that are null, missing or of another name with InvalidArgumentError as the class is defined, not a TypeError', async () => {
    const decorators = (await import(new URL('../../dist/src/decorators.js', import.meta.url).href)) as typeof Decorators;
    const cluster = await oneMember();
    expect(() => decorators.scheduled(cluster, '* * * * *', null as never)).toThrow(cronraft.InvalidArgumentError);
    expect(() => decorators.scheduled(cluster, '* * * * *', { retires: 2 } as never)).toThrow(expect.objectContaining({ option: 'retires' }));
    expect(() => decorators.exclusive(cluster, 'x', undefined as never)).toThrow(expect.objectContaining({ option: 'atMostFor' }));
    expect(() => decorators.exclusive(cluster, 'x', { atMostFor: 1000, atLeastfor: 5 } as never)).toThrow(expect.objectContaining({ option: 'atLeastfor' }));
    // A bad spec, option, name or atMostFor failed only as the class was made, or at the first call.
    expect(() => decorators.scheduled(cluster, 'not a cron')).toThrow(cronraft.InvalidArgumentError);
    expect(() => decorators.scheduled(cluster, '* * * * *', { retries: -1 })).toThrow(expect.objectContaining({ option: 'options.retries' }));
    expect(() => decorators.scheduled(cluster, '* * * * *', { name: '..' })).toThrow(expect.objectContaining({ option: 'name' }));
    expect(() => decorators.exclusive(cluster, '', { atMostFor: 1000 })).toThrow(expect.objectContaining({ option: 'name' }));
    expect(() => decorators.exclusive(cluster, 'x', { atMostFor: -5 })).toThrow(expect.objectContaining({ option: 'atMostFor' }));
    // No cluster: a TypeError as each instance was made, before.
    expect(() => decorators.scheduled(undefined as never, '* * * * *')).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: "@scheduled's cluster" }));
    expect(() => decorators.exclusive({} as never, 'x', { atMostFor: 1000 })).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: "@exclusive's cluster" }));
  });

  it('@scheduled on a class one of whose jobs is refused unschedules the jobs its other methods scheduled for that instance', async () => {
    const cluster = await oneMember();
    cluster.schedule('taken', { every: '1h' }, () => undefined);
    const Colliding = app.collidingOn(cluster);
    expect(() => new Colliding()).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT' }));
    // Before, Colliding.first stayed scheduled, and ran on the instance whose construction failed.
    expect(cluster.unschedule('Colliding.first')).toBe(false);
    expect(cluster.unschedule('taken')).toBe(true);
    expect(() => new Colliding()).not.toThrow();
    expect(cluster.unschedule('Colliding.first')).toBe(true);
  });

  it('@scheduled makes a method a job named ClassName.method, run with the instance as this', async () => {
    const cluster = await oneMember();
    const Reports = app.reportsOn(cluster);
    const reports = new Reports();
    await cluster.start();
    await expect.poll(() => reports.seen.length, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(2);
    const jobs = cluster.state().jobs.map((j) => [j.name, j.mode]);
    expect(jobs).toEqual(expect.arrayContaining([['Reports.nightly', 'one'], ['reports-weekly', 'all']]));
    // One instance per member: a second would schedule the same names again.
    expect(() => new Reports()).toThrow(cronraft.InvalidArgumentError);
  });

  it('@scheduled on a static method schedules ClassName.method as the class is defined, run with the class as this', async () => {
    const cluster = await oneMember();
    // No instance is made: the class itself holds the job.
    const Maintenance = app.maintenanceOn(cluster);
    expect(cluster.unschedule('Maintenance.vacuum')).toBe(true);
    const Again = app.maintenanceOn(cluster);
    await cluster.start();
    await expect.poll(() => Again.vacuumed.length, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(2);
    expect(Maintenance.vacuumed).toEqual([]);
    expect(cluster.state().jobs.map((j) => j.name)).toContain('Maintenance.vacuum');
  });

  it('@scheduled on a class whose constructor throws leaves the job scheduled, as the README says, until the app unschedules it', async () => {
    const cluster = await oneMember();
    const failing = { now: true };
    const Failing = app.failingOn(cluster, failing);
    expect(() => new Failing()).toThrow('the app could not build its jobs');
    failing.now = false;
    expect(() => new Failing()).toThrow(cronraft.InvalidArgumentError);
    expect(cluster.unschedule('Failing.hourly')).toBe(true);
    expect(() => new Failing()).not.toThrow();
  });

  it('@exclusive written above @scheduled holds the lock on every scheduled run', async () => {
    // @scheduled ran the method it was handed, the one below @exclusive: outside the lock.
    const cluster = await oneMember();
    const Guarded = app.guardedOn(cluster);
    const guarded = new Guarded();
    await cluster.start();
    await expect.poll(() => guarded.held.length, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(2);
    expect(guarded.held.every((held) => held)).toBe(true);
  });

  it('@exclusive runs the method under the cluster-wide lock: not while another call holds it, and held at least atLeastFor', async () => {
    const cluster = await oneMember();
    await cluster.start();
    await cluster.waitForLeader();
    const Cleanup = app.cleanupOn(cluster, 1000, 100);
    const cleanup = new Cleanup();
    const first = cleanup.purge(7);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The second call finds the lock held: the method does not run.
    expect(await cleanup.purge(8)).toBeUndefined();
    expect(await first).toBe('purged 7 days');
    // The first run ended long before atLeastFor: the lock is held still.
    expect(await cleanup.purge(9)).toBeUndefined();
    expect(cleanup.runs).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await cleanup.purge(10)).toBe('purged 10 days');
    expect(cleanup.runs).toBe(2);
  });
});
