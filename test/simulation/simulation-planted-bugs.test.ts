import { PLANTS } from '../fixtures/plants.js';
import { describePlants } from '../fixtures/plant-tests.js';

/**
 * The checkers are not vacuous: each test plants a known bug in the production code
 * (test/fixtures/plants.ts), then shows that the simulator reports it as the violation of the
 * promise it breaks, by kind, within a bounded number of seeds. Without the bug the same kind
 * is never reported (the simulation tests and the sweeps). Each test's name gives the bug's
 * catch rate as measured: in how many seeds of how many it was caught, and the first.
 */
describePlants('planted bugs are caught, each as the violation of the promise it breaks', PLANTS);
