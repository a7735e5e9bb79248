import { describe, expect, it } from 'vitest';
import { AppendedDecodings } from '../../src/runtime/appended-decodings.js';
import { encodeCommand } from '../../src/runtime/commands.js';
import { FANOUT_VERSION, SUPPORTED } from '../../src/version/versions.js';

const emit = (): Uint8Array => encodeCommand({ kind: 'fanout', command: { type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 1 } });

describe('AppendedDecodings', () => {
  it('hands the apply the decoding made as the entry was appended, once, and only under the version it was made under', () => {
    const decodings = new AppendedDecodings();
    const bytes = emit();
    const appended = decodings.decode(bytes, FANOUT_VERSION, SUPPORTED);
    expect(appended.kind).toBe('fanout');
    expect(decodings.take(bytes, FANOUT_VERSION, SUPPORTED)).toBe(appended);
    expect(decodings.served).toBe(1);
    // Once: a second apply (none happens) would decode again.
    const again = decodings.take(bytes, FANOUT_VERSION, SUPPORTED);
    expect(again).not.toBe(appended);
    expect(again).toEqual(appended);
    // Another version in force at the apply: decoded under it (a fan-out entry below its version is skipped).
    const other = emit();
    decodings.decode(other, FANOUT_VERSION, SUPPORTED);
    expect(decodings.take(other, FANOUT_VERSION - 1, SUPPORTED)).toMatchObject({ kind: 'skip', reason: 'inactive' });
    // Other bytes of the same content are another entry.
    decodings.decode(emit(), FANOUT_VERSION, SUPPORTED);
    expect(decodings.take(emit(), FANOUT_VERSION, SUPPORTED)).not.toBe(appended);
    expect(decodings.served).toBe(1);
  });
});
