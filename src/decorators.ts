/**
 * TypeScript's standard (TC39) decorators for class methods, the subpath export
 * `cronraft/decorators`: `@scheduled` makes a method a job, `@exclusive` runs it under a
 * cluster-wide lock (ShedLock's `@SchedulerLock`). Standard decorators, not the legacy
 * `experimentalDecorators`: TypeScript 5 compiles them with its default settings.
 *
 * @module cronraft/decorators
 */
import type { Cluster } from './cluster.js';
import { InvalidArgumentError } from './errors.js';
import { exclusiveArguments } from './api/run-exclusive.js';
import { JOB_OPTION_KEYS, validateJobOptions, validateName } from './job-options.js';
import { optionsObject } from './option-checks.js';
import type { JobContext, JobOptions } from './runtime/scheduler/job-types.js';
import { parseSpec, type SpecInput } from './scheduler/spec.js';

/** `@scheduled`'s options: a job's (JobOptions), and the job's name if not `ClassName.method`. */
export interface ScheduledOptions extends JobOptions {
  readonly name?: string;
}

/** What `@scheduled(...)` gives: a standard decorator of a method that takes a job's context. */
export type ScheduledDecorator<This> = <Return>(method: (this: This, ctx: JobContext) => Return, context: ClassMethodDecoratorContext<This, (this: This, ctx: JobContext) => Return>) => void;

/** What `@exclusive(...)` gives: a standard decorator that replaces the method by one returning a promise. */
export type ExclusiveDecorator<This, Args extends unknown[]> = <Return>(
  method: (this: This, ...args: Args) => Promise<Return | undefined> | Return | undefined,
  context: ClassMethodDecoratorContext<This, (this: This, ...args: Args) => Promise<Return | undefined>>,
) => (this: This, ...args: Args) => Promise<Return | undefined>;

/**
 * Schedules the method as a job on `cluster`, named `ClassName.method` (the class of the
 * instance) unless `options.name` says otherwise, run with the job's context and `this` bound
 * to the instance: the method as the instance has it at each run, so that a decorator written
 * above this one (`@exclusive`) and an override in a subclass take part. A standard method decorator cannot reach the instance itself: it asks for
 * an initializer (`context.addInitializer`), which runs as each instance is constructed, and
 * that schedules the job then; for a static method, as the class is defined. So construct one
 * instance per member, as for any job: a second one schedules the same name again, which
 * `cluster.schedule` refuses with InvalidArgumentError from the constructor, and the jobs the
 * instance's other methods scheduled before it are unscheduled. The initializers run before the
 * constructor's body: a constructor whose own body throws leaves the jobs scheduled, bound to
 * the instance that failed, until `cluster.unschedule(name)`. Before or after
 * `cluster.start()`, like `cluster.schedule`.
 */
export function scheduled<This extends object>(cluster: Cluster, spec: SpecInput, options: ScheduledOptions = {}): ScheduledDecorator<This> {
  // Checked as the class is defined: null was a TypeError there, not the InvalidArgumentError
  // every other bad option is, and a bad spec or option failed only as the class was made.
  checkCluster(cluster, '@scheduled');
  const given = optionsObject(options, [...JOB_OPTION_KEYS, 'name']);
  parseSpec(spec);
  const { name: chosenName, ...checked } = given;
  validateJobOptions(checked);
  if (chosenName !== undefined) validateName(chosenName);
  return function <Return>(method: (this: This, ctx: JobContext) => Return, context: ClassMethodDecoratorContext<This, (this: This, ctx: JobContext) => Return>): void {
    if (context.kind !== 'method') throw new InvalidArgumentError('@scheduled', context.kind, 'a class method');
    context.addInitializer(function (this: This) {
      const owner = context.static ? (this as unknown as { name: string }).name : this.constructor.name;
      const name = chosenName ?? `${owner}.${String(context.name)}`;
      // The method as the instance has it, at each run, not the one this decorator was handed:
      // a decorator above this one (@exclusive, as ShedLock's users stack it) replaced it, and
      // a subclass may override it. (Handed the one below, the job ran outside the lock.)
      const mine = scheduledBy.get(this) ?? [];
      try {
        cluster.schedule(name, spec, (ctx) => context.access.get(this).call(this, ctx), checked);
      } catch (error) {
        // The jobs this instance's other methods scheduled go too: left, they ran on an instance
        // whose construction failed (its fields never set), until unscheduled by hand.
        for (const job of mine.splice(0)) cluster.unschedule(job);
        throw error;
      }
      mine.push(name);
      scheduledBy.set(this, mine);
    });
  };
}

/** The jobs each instance (or class, for static methods) scheduled through `@scheduled`, in order. */
const scheduledBy = new WeakMap<object, string[]>();

/** A decorator's cluster, checked as the class is defined rather than failing as it is made. */
function checkCluster(cluster: unknown, decorator: string): void {
  const c = cluster as Partial<Cluster> | null | undefined;
  if (typeof c !== 'object' || c === null || typeof c.schedule !== 'function' || typeof c.unschedule !== 'function' || typeof c.runExclusive !== 'function') throw new InvalidArgumentError(`${decorator}'s cluster`, cluster, 'a Cluster');
}

/** `@exclusive`'s options, in milliseconds, as ShedLock's `lockAtMostFor` and `lockAtLeastFor`. */
export interface ExclusiveDecoratorOptions {
  /** The lock expires this long after it was taken, even if its holder died. */
  readonly atMostFor: number;
  /** The lock is held at least this long, even if the method returns sooner. @default 0 */
  readonly atLeastFor?: number;
}

/**
 * Runs the method only while this member holds the cluster-wide lock `name`
 * (`cluster.runExclusive`): the decorated method returns a promise of the method's result, or
 * of undefined when another member held the lock (the method did not run). The lock is held at
 * least `atLeastFor` ms and at most `atMostFor` ms; the method's error rejects the call, after
 * the lock is released. The method gets neither the lock's fencing token nor its signal: call
 * `cluster.runExclusive` for those.
 */
export function exclusive<This, Args extends unknown[]>(cluster: Cluster, name: string, options: ExclusiveDecoratorOptions): ExclusiveDecorator<This, Args> {
  // As runExclusive checks them, but as the class is defined: a bad name or atMostFor failed
  // only at the first call, and none at all was a TypeError.
  checkCluster(cluster, '@exclusive');
  const lockOptions = exclusiveArguments(name, options);
  return function <Return>(
    method: (this: This, ...args: Args) => Promise<Return | undefined> | Return | undefined,
    context: ClassMethodDecoratorContext<This, (this: This, ...args: Args) => Promise<Return | undefined>>,
  ): (this: This, ...args: Args) => Promise<Return | undefined> {
    if (context.kind !== 'method') throw new InvalidArgumentError('@exclusive', context.kind, 'a class method');
    return async function (this: This, ...args: Args): Promise<Return | undefined> {
      let value: Return | undefined;
      await cluster.runExclusive(name, lockOptions, async () => {
        value = await method.call(this, ...args);
      });
      return value;
    };
  };
}
