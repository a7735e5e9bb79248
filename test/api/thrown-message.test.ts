import { describe, expect, it } from 'vitest';
import { thrownMessage } from '../../src/errors.js';

describe('thrownMessage, what a run or an item records of what its handler threw', () => {
  it("keeps an Error's message, or its name when it has none, an object's message, and anything else as a string", () => {
    expect(thrownMessage(new Error('disk full'))).toBe('disk full');
    // Recorded as 'failed' before, the kind lost.
    expect(thrownMessage(new Error())).toBe('Error');
    expect(thrownMessage(new AggregateError([new Error('a')], ''))).toBe('AggregateError');
    // '[object Object]' before.
    expect(thrownMessage({ message: 'quota exceeded', code: 'Q' })).toBe('quota exceeded');
    expect(thrownMessage({ message: '' })).toBe('[object Object]');
    expect(thrownMessage('plain')).toBe('plain');
    expect(thrownMessage(42)).toBe('42');
    expect(thrownMessage(Object.create(null))).toBe('a value with no string form');
    expect(thrownMessage({ get message(): string { throw new Error('no'); } })).toBe('a value with no string form');
  });
});
