import { describe, expect, it } from 'vitest';
import { MAX_HELD_RECORDS, MAX_RECORD_DELAY_MS, RecordBatcher } from '../../src/runtime/scheduler/record-batcher.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

interface Setup {
  readonly timers: ManualTimers;
  readonly sent: Array<{ record: string; atMs: number }>;
  readonly batcher: RecordBatcher<string>;
}

function setup(quietInMs: (limitMs: number) => number = () => 0): Setup {
  const timers = new ManualTimers();
  const sent: Array<{ record: string; atMs: number }> = [];
  const batcher = new RecordBatcher<string>({ timers, msUntilQuiet: quietInMs, send: (record) => sent.push({ record, atMs: timers.now() }) });
  return { timers, sent, batcher };
}

describe('RecordBatcher', () => {
  it('sends at once when no slot is near', () => {
    const { batcher, sent, timers } = setup();
    batcher.hold('a');
    expect(sent).toEqual([{ record: 'a', atMs: 0 }]);
    expect(timers.pending).toBe(0);
  });

  it('holds records while a slot is near, then sends them together, in order', () => {
    let quietUntil = 15;
    const { batcher, sent, timers } = setup(() => Math.max(0, quietUntil - timers.now()));
    batcher.hold('start');
    timers.advance(5);
    batcher.hold('outcome');
    expect(sent).toEqual([]);
    // When the timer fires, a slot claimed meanwhile keeps them held a little longer.
    quietUntil = 30;
    timers.advance(10);
    expect(sent).toEqual([]);
    timers.advance(15);
    expect(sent).toEqual([
      { record: 'start', atMs: 30 },
      { record: 'outcome', atMs: 30 },
    ]);
    expect(batcher.size).toBe(0);
  });

  it('never holds a record longer than MAX_RECORD_DELAY_MS, however busy', () => {
    const { batcher, sent, timers } = setup((limitMs) => limitMs);
    batcher.hold('a');
    timers.advance(MAX_RECORD_DELAY_MS / 2);
    batcher.hold('b');
    timers.advance(MAX_RECORD_DELAY_MS / 2 - 1);
    expect(sent).toEqual([]);
    timers.advance(1);
    expect(sent.map((s) => [s.record, s.atMs])).toEqual([
      ['a', MAX_RECORD_DELAY_MS],
      ['b', MAX_RECORD_DELAY_MS],
    ]);
    // The next record's wait starts afresh.
    batcher.hold('c');
    timers.advance(MAX_RECORD_DELAY_MS - 1);
    expect(sent).toHaveLength(2);
    timers.advance(1);
    expect(sent).toHaveLength(3);
  });

  it('sends everything once MAX_HELD_RECORDS are held', () => {
    const { batcher, sent } = setup((limitMs) => limitMs);
    for (let i = 0; i < MAX_HELD_RECORDS - 1; i++) batcher.hold(`r${i}`);
    expect(sent).toHaveLength(0);
    batcher.hold('last');
    expect(sent).toHaveLength(MAX_HELD_RECORDS);
    expect(batcher.size).toBe(0);
  });

  it('flush sends what is held at once and cancels the wait', () => {
    const { batcher, sent, timers } = setup((limitMs) => limitMs);
    batcher.hold('a');
    expect(timers.pending).toBe(1);
    batcher.flush();
    expect(sent).toEqual([{ record: 'a', atMs: 0 }]);
    expect(timers.pending).toBe(0);
  });

  it('treats a wait under a millisecond as none', () => {
    const { batcher, sent } = setup(() => 0.4);
    batcher.hold('a');
    expect(sent).toHaveLength(1);
  });
});
