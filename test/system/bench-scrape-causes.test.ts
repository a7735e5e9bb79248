import { describe, expect, it } from 'vitest';
import { SCRAPE_TARGET_MS, slowAnswerCauses } from '../../bench/scrape-lateness.js';
import type { AnswerTiming } from '../../bench/scraper.js';

const answer = (member: number, at: number, ms: number): AnswerTiming => ({ member, nth: 1, at, ms, memberMs: 0.5 });

describe('bench/scrape-lateness.ts: what held each answer over the target', () => {
  const members = [
    { stalls: [{ at: 1000, ms: 12 }], gc: [{ at: 1002, ms: 6, kind: 1 }] },
    { stalls: [{ at: 2000, ms: 3 }], gc: [] },
  ];

  it('puts an answer down to the scraper, the member (with its GC) or neither, by whether that stall alone made it late', () => {
    const answers = [
      answer(0, 0, SCRAPE_TARGET_MS - 1), // within the target: not counted
      answer(0, 500, SCRAPE_TARGET_MS + 4), // the scraper stood still for 5 ms of it
      answer(0, 1000, SCRAPE_TARGET_MS + 5), // the member stood still for 12 ms of it, a GC pause among them
      answer(1, 2000, SCRAPE_TARGET_MS + 5), // the member's 3 ms stall is not the 5 ms it is late by
    ];
    const c = slowAnswerCauses(answers, [{ at: 500, ms: 5 }], members);
    expect({ over: c.over, scraper: c.scraper, member: c.member, memberGc: c.memberGc, neither: c.neither }).toEqual({ over: 3, scraper: 1, member: 1, memberGc: 1, neither: 1 });
    expect(c.each).toHaveLength(3);
  });

  it("counts apart a member's stall that its wait for a CPU alone made long enough, from the part of each stall's wait that overlaps the answer", () => {
    const waited = [
      { stalls: [{ at: 1000, ms: 12, waitMs: 9 }], gc: [] },
      { stalls: [{ at: 2000, ms: 12, waitMs: 2 }], gc: [] },
      // Half of this stall overlaps the answer: half its wait (4 of 8 ms) does, short of the 5 ms.
      { stalls: [{ at: 2990, ms: 20, waitMs: 8 }], gc: [] },
    ];
    const answers = [answer(0, 1000, SCRAPE_TARGET_MS + 5), answer(1, 2000, SCRAPE_TARGET_MS + 5), answer(2, 3000, SCRAPE_TARGET_MS + 5)];
    const c = slowAnswerCauses(answers, [], waited);
    expect({ member: c.member, memberWaited: c.memberWaited }).toEqual({ member: 3, memberWaited: 1 });
    expect(c.each[0]).toContain('its wait for a CPU 9.00');
    expect(c.each[2]).toContain('its wait for a CPU 4.00');
  });

  it('counts the scraper first when both stood still', () => {
    const c = slowAnswerCauses([answer(0, 1000, SCRAPE_TARGET_MS + 2)], [{ at: 1000, ms: 4 }], members);
    expect(c.scraper).toBe(1);
    expect(c.member).toBe(0);
  });
});
