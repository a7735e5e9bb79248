import type { TopicRecord } from './records.js';
import type { FanoutState } from './state.js';

/**
 * Which bound refuses `count` more items of `topicName` in `state` (FanoutState's #fits), for the
 * emitter's BackpressureError: the topic's maxPending, or the bytes of every topic's unsettled
 * items together, which a topic nobody consumes (a mistyped name) can fill for all the others.
 * Read after the refusal, from the state as this member applied it then.
 */
export function fullness(state: FanoutState, topicName: string, count: number): string {
  const unsettled = state.topics.get(topicName)?.unsettled ?? 0;
  const limit = state.maxPendingOf(topicName);
  if (unsettled + count > limit) return `the topic ${topicName} holds ${unsettled} unsettled items: ${count} more would pass its maxPending of ${limit}`;
  let fullest: TopicRecord | undefined;
  for (const topic of state.topics.values()) if (fullest === undefined || topic.unsettled > fullest.unsettled) fullest = topic;
  const most = fullest === undefined ? '' : `; the topic holding the most is ${fullest.name}, with ${fullest.unsettled}${fullest.consumers.size === 0 ? ', which no member consumes' : ''}`;
  return `the unsettled items of every topic together take ${state.boundedUnsettledBytes} bytes of the ${state.limits.maxUnsettledBytes} they may (${topicName} holds ${unsettled})${most}`;
}
