import { errorMonitor, type EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Cluster, InvalidArgumentError } from '../../src/index.js';

describe("Cluster's emit", () => {
  it('refuses an event no Cluster tells, naming emitItems: emit(topic, items) emitted nothing, unsaid', () => {
    const cluster = new Cluster([]);
    // As a JavaScript app following fan-out's first sketch would call it.
    const emit = cluster.emit.bind(cluster) as (event: string, ...args: unknown[]) => boolean;
    expect(() => emit('thumbnails', [{ id: 1 }])).toThrow(InvalidArgumentError);
    expect(() => emit('thumbnails', [{ id: 1 }])).toThrow(/emitItems/);
  });

  it("tells its own events to their listeners, and EventEmitter's own", () => {
    const cluster = new Cluster([]);
    const told: unknown[] = [];
    // EventEmitter's own events, which ClusterEvents does not type.
    const untyped = cluster as unknown as EventEmitter;
    untyped.on('newListener', (name: string | symbol) => told.push(['newListener', name]));
    cluster.on('missed', (e) => told.push(['missed', e.job]));
    untyped.on(errorMonitor, (e: Error) => told.push(['monitor', e.message]));
    cluster.on('error', (e) => told.push(['error', e.message]));
    expect(cluster.emit('missed', { job: 'a', slot: new Date(0), reason: 'r', index: 1 })).toBe(true);
    expect(cluster.emit('error', new Error('boom'))).toBe(true);
    expect(told).toEqual([['newListener', 'missed'], ['newListener', errorMonitor], ['newListener', 'error'], ['missed', 'a'], ['monitor', 'boom'], ['error', 'boom']]);
  });
});
