import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StepwiseConcat, concatBytes } from '../../src/bytes/concat-bytes.js';

describe('StepwiseConcat', () => {
  it('gives concatBytes’s bytes, copying at most maxBytes a call: one call per maxBytes begun', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 8 }), fc.integer({ min: 1, max: 50 }), (pieces, maxBytes) => {
        const join = new StepwiseConcat(pieces);
        let calls = 1;
        let out = join.copy(maxBytes);
        for (; out === null; calls++) out = join.copy(maxBytes);
        const total = pieces.reduce((n, p) => n + p.byteLength, 0);
        expect(calls).toBe(Math.max(1, Math.ceil(total / maxBytes)));
        expect(out).toEqual(concatBytes(pieces));
      }),
      { numRuns: 300 },
    );
  });
});
