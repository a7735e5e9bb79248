import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { VersionTooOldError } from '../../src/errors.js';
import { MAX_COMMANDS_PER_BATCH } from '../../src/runtime/command-batch.js';
import { decodeEntry, encodeCommand } from '../../src/runtime/commands.js';
import { testNextVersion } from '../../src/version/test-next-version.js';
import { BATCH_VERSION, MAX_VERSION, SUPPORTED } from '../../src/version/versions.js';

const note = { type: 'test-note', text: 'hi' };
const unregister = { type: 'unregister', job: 'j', member: 'a' } as const;
const claim = { type: 'claim', job: 'j', slotMs: 1000, assignees: ['a'] } as const;
const NEXT = testNextVersion();
/** The highest cluster version this release reads, and the next one, the test-only release's. */
const C = SUPPORTED.stateMachine.max;
const N = C + 1;

/** Each entry of the corpus, and what a member of this release and one of the next decide at cluster version C (`at1`) and N (`at2`). */
const CORPUS: ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array; readonly at1: readonly [string, string]; readonly at2: readonly [string, string] }> = [
  { name: 'a user entry', bytes: encodeCommand({ kind: 'user', data: Uint8Array.of(1, 2) }), at1: ['user', 'user'], at2: ['user', 'user'] },
  { name: 'a scheduler command', bytes: encodeCommand({ kind: 'scheduler', command: { type: 'unregister', job: 'j', member: 'a' } }), at1: ['scheduler', 'scheduler'], at2: ['scheduler', 'scheduler'] },
  { name: 'a cluster command', bytes: encodeCommand({ kind: 'cluster', command: { type: 'activate', from: 1, to: 2 } }), at1: ['cluster', 'cluster'], at2: ['cluster', 'cluster'] },
  { name: 'a test note (version N)', bytes: encodeCommand({ kind: 'extension', version: N, command: note }), at1: ['inactive', 'inactive'], at2: ['too old', 'extension'] },
  { name: 'a malformed test note (version N)', bytes: encodeCommand({ kind: 'extension', version: N, command: { type: 'test-note', text: 7 } }), at1: ['inactive', 'inactive'], at2: ['too old', 'malformed'] },
  { name: 'a command of version N + 1', bytes: encode([2, note, N + 1]), at1: ['inactive', 'inactive'], at2: ['inactive', 'inactive'] },
  { name: 'a scheduler kind under version N', bytes: encode([1, { type: 'unregister', job: 'j', member: 'a' }, N]), at1: ['inactive', 'inactive'], at2: ['too old', 'malformed'] },
  { name: 'a batch of registrations (version 2)', bytes: encodeCommand({ kind: 'scheduler-batch', commands: [unregister, unregister] }), at1: ['scheduler-batch', 'scheduler-batch'], at2: ['scheduler-batch', 'scheduler-batch'] },
  { name: 'a batch of whole commands, a claim among them (which needs an index of its own)', bytes: encode([1, [unregister, claim], BATCH_VERSION]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'an empty batch', bytes: encode([1, [1, 'a', []], BATCH_VERSION]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a batch past MAX_COMMANDS_PER_BATCH', bytes: encode([1, [1, 'a', Array.from({ length: MAX_COMMANDS_PER_BATCH + 1 }, () => 'j')], BATCH_VERSION]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a batch holding a malformed job name', bytes: encode([1, [1, 'a', ['j', 7]], BATCH_VERSION]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a batch without its version', bytes: encode([1, [1, 'a', ['j']]]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'three elements with version 1', bytes: encode([2, note, 1]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'version 0', bytes: encode([2, note, 0]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a version past MAX_VERSION', bytes: encode([2, note, MAX_VERSION + 1]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a fractional version', bytes: encode([2, note, 2.5]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a string version', bytes: encode([2, note, '2']), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'an array of four', bytes: encode([2, note, 2, 0]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'an unknown kind', bytes: encode([9, note]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'a bad cluster command', bytes: encode([2, { type: 'activate', from: 1 }]), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'not CBOR', bytes: new TextEncoder().encode('p12'), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'truncated CBOR', bytes: Uint8Array.of(0x83, 0x02), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
  { name: 'nothing', bytes: new Uint8Array(0), at1: ['malformed', 'malformed'], at2: ['malformed', 'malformed'] },
];

/** What decodeEntry decided, as one word: the command's kind, the reason it was skipped, or `too old` for VersionTooOldError. */
function decided(bytes: Uint8Array, active: number, support = SUPPORTED): string {
  try {
    const d = decodeEntry(bytes, active, support);
    return d.kind === 'skip' ? d.reason : d.kind;
  } catch (error) {
    if (error instanceof VersionTooOldError) return 'too old';
    throw error;
  }
}

describe('decodeEntry decides by the bytes and the version in force, alike on every release that reads that version', () => {
  for (const c of CORPUS) {
    it(c.name, () => {
      expect([decided(c.bytes, C), decided(c.bytes, C, NEXT)]).toEqual(c.at1);
      expect([decided(c.bytes, N), decided(c.bytes, N, NEXT)]).toEqual(c.at2);
    });
  }

  it('skips a batch alike at version 1, where no member proposes one: cronraft 0.1.0 reads none', () => {
    const batch = encodeCommand({ kind: 'scheduler-batch', commands: [unregister] });
    const release010 = { protocol: { min: 1, max: 1 }, stateMachine: { min: 1, max: 1 } };
    expect([decided(batch, 1), decided(batch, 1, NEXT), decided(batch, 1, release010)]).toEqual(['inactive', 'inactive', 'inactive']);
    expect(decodeEntry(batch, BATCH_VERSION, SUPPORTED)).toEqual({ kind: 'scheduler-batch', commands: [unregister] });
  });

  it('refuses to encode a batch it would not read back', () => {
    expect(() => encodeCommand({ kind: 'scheduler-batch', commands: [] })).toThrow(TypeError);
    expect(() => encodeCommand({ kind: 'scheduler-batch', commands: [claim as never] })).toThrow(TypeError);
  });

  it('gives the next release its command once active', () => {
    expect(decodeEntry(encodeCommand({ kind: 'extension', version: N, command: note }), N, NEXT)).toEqual({ kind: 'extension', version: N, command: note });
  });
});
