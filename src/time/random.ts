import { xoroshiro128plus, unsafeUniformIntDistribution, type RandomGenerator } from 'pure-rand';

/** A source of randomness, injected so that simulations are seeded and replayable. */
export interface Random {
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
}

/** A seeded generator (pure-rand's xoroshiro128+): the same seed gives the same sequence. */
export class SeededRandom implements Random {
  readonly #rng: RandomGenerator;

  constructor(seed: number) {
    this.#rng = xoroshiro128plus(seed);
  }

  int(min: number, max: number): number {
    // The unsafe variant advances the generator in place instead of copying it per call.
    return unsafeUniformIntDistribution(min, max, this.#rng);
  }
}
