import { describe, expect, it } from 'vitest';
import { drawFanout, drawFanoutMode, fanoutRandom, MAX_SIM_BACKLOG_SECONDS, MAX_SIM_EMIT } from '../../simulations/fanout.js';

const FOUNDERS = ['m1', 'm2', 'm3'];

describe("the fault swarm's fan-out draws", () => {
  it('cap each topic’s maxPending to MAX_SIM_BACKLOG_SECONDS of what its founding consumers work off: its rate, or their parallelism over the mean run time', () => {
    let rated = 0;
    let slow = 0;
    for (let seed = 1; seed <= 400; seed++) {
      if (!drawFanoutMode(seed)) continue;
      for (const topic of drawFanout(fanoutRandom(seed), FOUNDERS, MAX_SIM_EMIT).topics) {
        const { ratePerSecond, parallelism = 1, maxPending } = topic.options;
        const meanRunSeconds = (topic.runMs[0] + topic.runMs[1]) / 2000;
        const perSecond = Math.min(ratePerSecond ?? Number.POSITIVE_INFINITY, (topic.consumers.length * parallelism) / meanRunSeconds);
        expect(maxPending, `seed ${seed}, ${topic.name}`).toBeLessThanOrEqual(Math.max(1, Math.floor(perSecond * MAX_SIM_BACKLOG_SECONDS)));
        expect(maxPending).toBeGreaterThanOrEqual(1);
        if (ratePerSecond !== undefined) rated++;
        if (topic.runMs[1] > 1000) slow++;
      }
    }
    // Not vacuous: rated and slow topics were drawn.
    expect(rated).toBeGreaterThan(10);
    expect(slow).toBeGreaterThan(10);
  });

  it('give seed 9128 of three members, whose backlog took 41 simulated minutes to drain after healing, a maxPending of two minutes of its rate', () => {
    const [topic] = drawFanout(fanoutRandom(9128), FOUNDERS, MAX_SIM_EMIT).topics;
    expect(topic?.options).toMatchObject({ ratePerSecond: 3, maxPending: 3 * MAX_SIM_BACKLOG_SECONDS });
  });
});
