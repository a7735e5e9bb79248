import { FANOUT_PLANTS } from '../fixtures/fanout-plants.js';
import { describePlants } from '../fixtures/plant-tests.js';

/**
 * Fan-out's checkers are not vacuous: each test plants a known bug in fan-out's production code
 * (test/fixtures/fanout-plants.ts), then shows that the simulator reports it as the violation of
 * the promise it breaks, by kind, within a bounded number of seeds. Each test's name gives the
 * bug's catch rate as measured: in how many seeds of how many it was caught, and the first.
 */
describePlants('fan-out: planted bugs are caught, each as the violation of the promise it breaks', FANOUT_PLANTS);
