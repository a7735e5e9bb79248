import type { SchedulerCommand } from '../scheduler/command.js';

/**
 * Strings kept for sharing: a cluster's member ids and the names of modes, kinds, policies and
 * outcomes, a few dozen at most. Past this many (a log that names ever new members, which only a
 * faulty one does), the table starts over: sharing saves memory, it never changes a value.
 */
const MAX_SHARED_STRINGS = 256;

/**
 * Longer strings are left as they are: member ids and names of kinds are short, and the table
 * must not hold 256 of whatever length a command may carry (an outcome's name is any string).
 */
const MAX_SHARED_STRING_LENGTH = 256;

const strings = new Map<string, string>();

/** One copy of `value` for every command that holds it. */
export function sharedString(value: string): string {
  if (value.length > MAX_SHARED_STRING_LENGTH) return value;
  const known = strings.get(value);
  if (known !== undefined) return known;
  if (strings.size >= MAX_SHARED_STRINGS) strings.clear();
  strings.set(value, value);
  return value;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Replaces, in a command just decoded (and checked), the strings that recur in command after
 * command with one copy of each: decoding makes a new string of every occurrence, and the state
 * keeps them per job and per claim (handlers, modes, policies, assignees, outcomes), in the
 * live state and in its mirror, so that ten thousand jobs held tens of thousands of copies of
 * three member ids. Returns the command.
 */
export function shareStrings(command: SchedulerCommand): SchedulerCommand {
  switch (command.type) {
    case 'register': {
      const c = command as Mutable<typeof command>;
      c.member = sharedString(c.member);
      c.mode = sharedString(c.mode) as typeof c.mode;
      (c.spec as Mutable<typeof c.spec>).kind = sharedString(c.spec.kind) as typeof c.spec.kind;
      const policy = c.policy as Mutable<typeof c.policy>;
      if (policy.overlap !== undefined) policy.overlap = sharedString(policy.overlap) as typeof policy.overlap;
      (policy.catchUp as Mutable<typeof policy.catchUp>).policy = sharedString(policy.catchUp.policy) as typeof policy.catchUp.policy;
      return command;
    }
    case 'claim':
    case 'reassign':
    case 'trigger':
      (command as Mutable<typeof command>).assignees = command.assignees.map(sharedString);
      return command;
    case 'started':
    case 'unregister':
    case 'lock':
    case 'forfeit':
      (command as Mutable<typeof command>).member = sharedString(command.member);
      return command;
    case 'outcome': {
      const c = command as Mutable<typeof command>;
      c.member = sharedString(c.member);
      c.outcome = sharedString(c.outcome) as typeof c.outcome;
      return command;
    }
    default:
      return command;
  }
}
