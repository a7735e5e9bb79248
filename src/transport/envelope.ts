import type { HeartbeatMessage, HeartbeatResponse, Message, SnapshotMessage } from '../raft/types.js';

/*
 * What travels with a Raft message between members' drivers, which the protocol never sees:
 * clock stamps on heartbeats (clock synchronization, src/runtime/clock-sync.ts) and the place of
 * a snapshot's chunk. The driver adds them as a message leaves and takes them off as it arrives;
 * the transport carries them.
 */

/**
 * The leader's clock readings on a heartbeat, added by the driver as the message leaves (see
 * `src/runtime/clock-sync.ts`). Every time is in milliseconds on the MONOTONIC clock
 * (`Timers.now()`, any origin) of the member named: offsets between monotonic clocks never step.
 */
export interface HeartbeatClock {
  /** The leader's monotonic clock when the heartbeat left (NTP's t1). */
  readonly sentAt: number;
  /** The leader's estimate of the recipient's clock, once it has one. */
  readonly estimate?: ClockEstimate;
  /**
   * The recipient's own monotonic clock when it sent the latest stamped answer this leader took
   * in, in its term (that answer's `sentAt`, t3): the leader counts the recipient's silence from
   * no earlier, so the recipient's lease counts from it (peer-contact.ts). At protocol 2 only.
   */
  readonly heardAt?: number;
}

export interface ClockEstimate {
  /** The recipient's monotonic clock minus the leader's. */
  readonly offsetMs: number;
  /** The round trip of the exchange the offset was measured in: the offset is good to half of it. */
  readonly rttMs: number;
  /**
   * The cluster's time minus the leader's monotonic clock. The recipient's cluster time is its
   * monotonic clock - offsetMs + clusterOffsetMs.
   */
  readonly clusterOffsetMs: number;
}

/** A follower's answer to the latest stamped heartbeat it got from its leader, added by its driver. */
export interface HeartbeatEcho {
  /** That heartbeat's `sentAt` (leader's monotonic clock, t1). */
  readonly echo: number;
  /** When it arrived (follower's monotonic clock, t2). */
  readonly receivedAt: number;
  /** When this response left (follower's monotonic clock, t3). */
  readonly sentAt: number;
  /** The follower's wall clock minus its monotonic clock at t3: its wall clock's vote for the cluster's time. */
  readonly wallOffset: number;
  /**
   * The follower's cluster time minus its monotonic clock (the correction it holds), at protocol
   * 2; absent while it knows no time. A leader that holds none counts the time its followers
   * hold as the vote between the two clocks it sees (ClockSync).
   */
  readonly clusterOffset?: number;
}

/** A heartbeat as it travels: with the leader's clock readings, once the driver stamped it. */
export interface StampedHeartbeat extends HeartbeatMessage {
  readonly clock?: HeartbeatClock;
}

/** A heartbeat's answer as it travels: with the follower's echo of the latest stamp. */
export interface StampedHeartbeatResponse extends HeartbeatResponse {
  readonly clock?: HeartbeatEcho;
}

/**
 * A snapshot as it travels: one larger than a frame goes in chunks, `data` being the bytes from
 * `offset` of `total`. The driver splits and joins them; the protocol sees whole ones.
 */
export interface SnapshotChunk extends SnapshotMessage {
  readonly chunk?: { readonly offset: number; readonly total: number };
}

/** A message as transports carry it: a Raft message, with what the drivers add to it. */
export type WireMessage = Exclude<Message, HeartbeatMessage | HeartbeatResponse | SnapshotMessage> | StampedHeartbeat | StampedHeartbeatResponse | SnapshotChunk;
