import { Counter, Gauge, type Registry } from 'prom-client';
import type { TransportStats } from '../transport/transport.js';

/**
 * The transport's metrics: what the libp2p transport counts anyway, read from `state().transport`
 * as a scrape collects them, so that exporting them adds nothing to any message's path.
 * libp2p's own metrics (`@libp2p/prometheus-metrics`) are not used: they count every chunk of
 * every stream through a wrapper, and keep their metrics in one map per process, which members
 * sharing a process would share.
 */
export function transportMetrics(registers: Registry[], stats: () => TransportStats): void {
  const counter = <L extends string>(name: string, help: string, label: L, values: (s: TransportStats) => ReadonlyArray<readonly [string, number | undefined]>): void => {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers,
      collect: function (this: Counter<L>) {
        this.reset();
        for (const [value, n] of values(stats())) if (n !== undefined) this.inc({ [label]: value } as Record<L, string>, n);
      },
    });
  };
  const gauge = (name: string, help: string, value: (s: TransportStats) => number | undefined): void => {
    new Gauge({
      name,
      help,
      registers,
      collect: function (this: Gauge) {
        this.reset();
        const v = value(stats());
        if (v !== undefined) this.set(v);
      },
    });
  };
  counter('cronraft_transport_messages_total', 'Raft messages this member sent to and received from other members.', 'direction', (s) => [
    ['sent', s.sent],
    ['received', s.received],
  ]);
  counter('cronraft_transport_bytes_total', "Bytes of the Raft protocol's streams, frames with their length prefixes (libp2p's framing and encryption not counted).", 'direction', (s) => [
    ['sent', s.sentBytes],
    ['received', s.receivedBytes],
  ]);
  counter('cronraft_transport_dropped_total', 'Messages dropped: outbound ones to a full queue or an unreachable member, inbound frames malformed, oversized, unexpected or from a connection of another peer id.', 'reason', (s) => [
    ['queue_full', s.droppedQueueFull],
    ['malformed', s.droppedMalformed],
    ['oversized', s.droppedOversized],
    ['unexpected', s.droppedUnexpected],
    ['peer_id_mismatch', s.droppedPeerIdMismatch],
  ]);
  counter('cronraft_transport_inbound_connections_total', 'Inbound connections by what became of them: accepted, handshake_failed (no or another cluster secret), not_member, visitor (let in to ask to join), over_host_limit.', 'outcome', (s) => {
    const c = s.inboundConnections;
    return [
      ['accepted', c?.accepted],
      ['handshake_failed', c?.handshakeFailed],
      ['not_member', c?.notMember],
      ['visitor', c?.visitors],
      ['over_host_limit', c?.overHostLimit],
    ];
  });
  gauge('cronraft_transport_inbound_connections_held', 'Inbound connections held now, handshaking or open.', (s) => s.inboundConnections?.held);
  gauge('cronraft_transport_connections', 'libp2p connections open now, inbound and outbound.', (s) => s.connections);
}
