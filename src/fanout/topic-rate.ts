import type { TopicRecord } from './state.js';

/**
 * A topic's rate (`ratePerSecond`, issue 19): the least any of its consumers asks for, null when
 * none asks for one. The leader's token bucket limits the topic's starts to it (planner.ts), a
 * topic with one gets no prefetch (prefetch.ts), and `state().topics` shows it.
 */
export function rateOf(topic: TopicRecord): number | null {
  let rate: number | null = null;
  for (const settings of topic.consumers.values()) if (settings.ratePerSecond !== null) rate = rate === null ? settings.ratePerSecond : Math.min(rate, settings.ratePerSecond);
  return rate;
}
