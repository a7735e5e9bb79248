import { describe, expect, it } from 'vitest';
import { configurationOf } from '../../src/raft/configuration.js';
import type { Configuration, NodeId } from '../../src/raft/types.js';
import { BindingKeeper } from '../../src/runtime/binding-keeper.js';
import type { RaftDriver } from '../../src/runtime/driver.js';
import type { Timers } from '../../src/time/clock.js';
import { RecordingTransport } from '../fixtures/recording-transport.js';

/** A transport that authenticated `remote` (member → peer id) and is `own` itself. */
function transportOf(own: string | null, remote: Record<NodeId, string>): RecordingTransport {
  const t = new RecordingTransport();
  t.peerId = (): string | null => own;
  t.remotePeerIdOf = (member: NodeId): string | null => remote[member] ?? null;
  return t;
}

function keeper(conf: Configuration, transport: RecordingTransport, live: (id: NodeId) => boolean = () => true): BindingKeeper {
  return new BindingKeeper({ self: 'a', conf: () => conf, activeVersion: () => 2, driver: {} as RaftDriver, transport, timers: {} as Timers, live });
}

describe('which member the leader binds next', () => {
  const remote = { b: 'PB', c: 'PC' };

  it('binds itself to its own peer id, then each member to the one its live connection authenticated, in order', () => {
    expect(keeper(configurationOf(['a', 'b', 'c']), transportOf('PA', remote)).nextBinding()).toEqual({ id: 'a', peerId: 'PA' });
    expect(keeper(configurationOf(['a', 'b', 'c'], [], [['a', 'PA']]), transportOf('PA', remote)).nextBinding()).toEqual({ id: 'b', peerId: 'PB' });
    expect(keeper(configurationOf(['a', 'b', 'c'], ['d'], [['a', 'PA'], ['b', 'PB'], ['c', 'PC']]), transportOf('PA', { ...remote, d: 'PD' })).nextBinding()).toEqual({ id: 'd', peerId: 'PD' });
    expect(keeper(configurationOf(['a', 'b', 'c'], [], [['a', 'PA'], ['b', 'PB'], ['c', 'PC']]), transportOf('PA', remote)).nextBinding()).toBeNull();
  });

  it('passes over a member not heard from lately, one never heard from, and a peer id that is taken or malformed', () => {
    const conf = configurationOf(['a', 'b', 'c'], [], [['a', 'PA']]);
    expect(keeper(conf, transportOf('PA', remote), (id) => id !== 'b').nextBinding()).toEqual({ id: 'c', peerId: 'PC' });
    expect(keeper(conf, transportOf('PA', { c: 'PC' })).nextBinding()).toEqual({ id: 'c', peerId: 'PC' });
    expect(keeper(conf, transportOf('PA', { b: 'PA', c: 'not a peer id' })).nextBinding()).toBeNull();
  });
});
