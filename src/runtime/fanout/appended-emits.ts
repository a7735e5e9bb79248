import type { FanoutCommand } from '../../fanout/command.js';
import type { RaftLog } from '../../raft/log.js';
import { EntryType } from '../../raft/types.js';
import { mayBeFanoutCommand } from '../commands.js';
import type { AppendedEmit } from './leader-delivery.js';

/**
 * The emits and requeues among the entries `from` to `to` a leader appended to `log`
 * (LeaderDelivery.appended), in log order. `decode` reads a fan-out command from an entry's
 * bytes as the apply will, or gives null: only entries that may be one are decoded (the first
 * bytes say), so entries of other kinds cost next to nothing here.
 */
export function appendedEmits(log: RaftLog, from: number, to: number, decode: (bytes: Uint8Array) => FanoutCommand | null): AppendedEmit[] {
  const emits: AppendedEmit[] = [];
  for (let index = from; index <= to; index++) {
    const entry = log.entry(index);
    if (entry === undefined || entry.type !== EntryType.Normal || !mayBeFanoutCommand(entry.data)) continue;
    const command = decode(entry.data);
    if (command?.type === 'emit') emits.push({ index: entry.index, topic: command.topic, count: command.items.length, keyed: command.items.some((item) => item.key !== null) });
    else if (command?.type === 'requeue') emits.push({ index: entry.index, topic: command.topic, count: null, keyed: true });
  }
  return emits;
}
