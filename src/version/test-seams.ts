import type { Member } from '../runtime/member.js';
import { SUPPORTED, type VersionSupport } from './versions.js';

/**
 * Seams for tests that run "the next release" in a real process (test/system): the version
 * support a Cluster starts with, and its member, to propose a command of that release. Kept
 * out of the public API: index.ts exports none of this.
 */
const supports = new WeakMap<object, VersionSupport>();
const members = new WeakMap<object, Member>();

/** Makes `cluster` start with `support` instead of this release's. Call before start(). */
export function useVersionSupport(cluster: object, support: VersionSupport): void {
  supports.set(cluster, support);
}

export function versionSupportOf(cluster: object): VersionSupport {
  return supports.get(cluster) ?? SUPPORTED;
}

/** Called by Cluster as its member starts. */
export function setMemberOf(cluster: object, member: Member): void {
  members.set(cluster, member);
}

/** The member a started cluster runs, for a test to reach what the public API does not. */
export function memberOf(cluster: object): Member | undefined {
  return members.get(cluster);
}
