import type { ExtensionState, VersionExtension } from './extension.js';
import { SUPPORTED, type VersionSupport } from './versions.js';

/** Bound on a test note's length. */
export const MAX_TEST_NOTE_LENGTH = 256;
/** Notes kept: the latest ones. */
export const MAX_TEST_NOTES = 64;

/** The one command of the test-only next version. */
export interface TestNote {
  readonly type: 'test-note';
  readonly text: string;
}

/**
 * "The next release", for tests only (index.ts does not export it): it reads every cluster
 * version `base` reads and one more, whose one command, `test-note`, appends a text to a
 * replicated list. A member built with it beside members of `base` is a rolling upgrade in
 * miniature: the command is refused until every member runs it and the version rises.
 */
export function testNextVersion(base: VersionSupport = SUPPORTED): VersionSupport {
  const version = base.stateMachine.max + 1;
  return { protocol: base.protocol, stateMachine: { min: base.stateMachine.min, max: version }, extension: notesExtension(version) };
}

function notesExtension(version: number): VersionExtension {
  return {
    version,
    decode: (payload) => (isTestNote(payload) ? payload : null),
    create: () => new Notes(),
  };
}

function isTestNote(value: unknown): value is TestNote {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return v.type === 'test-note' && typeof v.text === 'string' && v.text.length <= MAX_TEST_NOTE_LENGTH && Object.keys(v).length === 2;
}

/** The replicated notes: the latest MAX_TEST_NOTES texts, in log order. */
export class Notes implements ExtensionState {
  texts: string[] = [];

  apply(command: unknown): unknown {
    this.texts.push((command as TestNote).text);
    if (this.texts.length > MAX_TEST_NOTES) this.texts.shift();
    return this.texts.length;
  }

  save(): unknown {
    return this.texts;
  }

  restore(value: unknown): boolean {
    if (!Array.isArray(value) || value.length > MAX_TEST_NOTES || !value.every((t) => typeof t === 'string' && t.length <= MAX_TEST_NOTE_LENGTH)) return false;
    this.texts = [...(value as string[])];
    return true;
  }
}
