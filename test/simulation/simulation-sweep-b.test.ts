import { sweepHalf } from '../fixtures/sweep.js';

/**
 * Half of the CI sweep of 100 seeds (the other half is in simulation-sweep-a.test.ts, so that the
 * two halves run on two cores at once). Every checker runs after every event; a failure names
 * the seed and the command that replays it.
 */
sweepHalf('sweep b', 51, 151);
