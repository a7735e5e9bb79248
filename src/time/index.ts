export { systemClock, systemTimers, type Clock, type Timers, type TimerHandle } from './clock.js';
export { SeededRandom, type Random } from './random.js';
