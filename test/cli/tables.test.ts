/**
 * The CLI's tables for people print the app's texts (job names, errors, member ids) with their
 * control characters written out: printed raw, a job named with an escape sequence recoloured or
 * retitled the operator's terminal (found by a stranger's attack).
 */
import { describe, expect, it } from 'vitest';
import { membersTable, printable, table, type StateJson } from '../../src/cli/tables.js';

describe('cronraft CLI tables', () => {
  it('write out C0, DEL and C1 control characters and bidirectional controls, as \\u escapes, and leave the rest as it is', () => {
    expect(printable('nightly-report é 😀')).toBe('nightly-report é 😀');
    expect(printable('x\u001b]0;pwned\u0007')).toBe('x\\u001b]0;pwned\\u0007');
    expect(printable('a\u007fb\u009bc')).toBe('a\\u007fb\\u009bc');
    // A right-to-left override made a name read backwards, and what follows it on the line.
    expect(printable('job\u202egnp.exe')).toBe('job\\u202egnp.exe');
    expect(printable('\u2066a\u2069 \u200f')).toBe('\\u2066a\\u2069 \\u200f');
    expect(printable('\u061ca')).toBe('\\u061ca');
    // A cell's line break too; a whole text for people keeps its own.
    expect(printable('a\nb')).toBe('a\\u000ab');
    expect(printable('a\nb\u001b', true)).toBe('a\nb\\u001b');
  });

  it('measure and pad each cell as it is printed', () => {
    expect(table(['job', 'n'], [['a\u001bb', '1'], ['long-name', '2']]).split('\n')).toEqual(['job        n', 'a\\u001bb   1', 'long-name  2']);
  });
});

describe('the members table', () => {
  const member = (id: string, reachable: boolean, dialFailure?: 'handshake' | 'connection' | null): StateJson['members'][number] =>
    ({ id, addrs: [], voter: true, reachable, lastContactMs: null, matchIndex: null, lag: null, peerId: null, clockOffsetMs: null, clockSkewed: false, ...(dialFailure === undefined ? {} : { dialFailure }) }) as StateJson['members'][number];

  it('names a failed handshake beside an unreachable member (most often another secret), and says nothing more of one an older member describes', () => {
    const rows = membersTable('a', [member('a', true, null), member('b', false, 'handshake'), member('c', false, 'connection'), member('d', false)]).split('\n');
    expect(rows.map((row) => row.split(/\s{2,}/)[2])).toEqual(['REACHABLE', 'yes', 'NO (handshake failed: another secret?)', 'NO', 'NO']);
  });
});
