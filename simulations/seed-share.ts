import { SeededRandom } from '../src/time/random.js';

/**
 * Whether seed `seed` is among the `share` of the seeds that draw something, on a stream of its
 * own (`multiplier` and `offset` set it apart from every other), so that no other draw moves with
 * it. The generator's first draw from seeds that differ by a constant step is far from random (it
 * drew configuration changes for every odd seed from 1 to 41 and every even one from 128 to 200,
 * and runExclusive's calls for every third or fourth seed), so it is passed over.
 */
export function seedDraws(seed: number, multiplier: number, offset: number, share: number): boolean {
  const random = new SeededRandom(seed * multiplier + offset);
  random.int(0, 999);
  return random.int(0, 999) < share * 1000;
}
