/**
 * Every bound and default of the transport, named in one place so that the Raft layer can size
 * its batches below them and reviewers can see the limits a hostile peer runs into.
 */

/** The libp2p protocol id of cronraft's Raft stream. Bump the major version on an incompatible change. */
export const PROTOCOL_ID = '/cronraft/raft/1.0.0';

/** The version written in every frame of protocol 1, and in every frame of protocol 2 that needs nothing of it. */
export const FRAME_FORMAT_VERSION = 1;

/**
 * The version written in a frame that needs protocol 2 (cluster version 2, "membership"): an
 * append carrying a conf-change entry, or a snapshot carrying its configuration. A decoder of
 * cronraft 0.1.0 refuses it rather than misreading it; this release reads both versions.
 */
export const CONF_FRAME_FORMAT_VERSION = 2;

/** The most members (voters and learners) a snapshot's configuration on the wire may name. */
export const MAX_CONF_MEMBERS = 1_024;

/** The largest encoded frame (CBOR bytes, without its length prefix) a member sends or accepts. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** The most entries one append message may carry. The Raft layer should batch below this and below MAX_FRAME_BYTES. */
export const MAX_ENTRIES_PER_MESSAGE = 8192;

/** The most proposals one forwarded propose message (and pids in its response) may carry. */
export const MAX_PROPOSALS_PER_MESSAGE = 8192;

/**
 * The largest snapshot a member takes in, whole: well below the transport's bound on bytes
 * queued for one peer (64 MiB), so that a snapshot and the traffic beside it fit. What the
 * state machines keep is bounded part by part in what it takes in a snapshot, by shares of this
 * that sum to no more (src/snapshot-shares.ts, from cluster version 3), but for the cluster's
 * own part (members, versions, bindings), bounded by the members' number and their names' length.
 * Member.bounds reports every snapshot taken against it, and the example alert rules warn at
 * three quarters of it. The codec refuses a snapshot chunk whose offset or total passes it, and the
 * driver's assembler (src/runtime/snapshot-chunks.ts) keeps no more of one.
 */
export const MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024;

/** The longest member id (`host:port`; a DNS name is at most 253 characters). */
export const MAX_ID_LENGTH = 300;

/** The longest cluster id. */
export const MAX_CLUSTER_ID_LENGTH = 256;

/** The longest proposal id, `<member>#<sequence>`: a member id plus room for a sequence number. */
export const MAX_PID_LENGTH = MAX_ID_LENGTH + 32;

/**
 * Bound on every number of a heartbeat's clock stamp (times, offsets, round trips), in
 * milliseconds: ECMAScript's whole range of dates. The driver's clock synchronization applies
 * tighter bounds of its own (`src/runtime/clock-sync.ts`).
 */
export const MAX_CLOCK_STAMP_MS = 8.64e15;

/** Default bound of each peer's outbound queue, in messages. */
export const DEFAULT_MAX_QUEUED_MESSAGES = 4096;

/**
 * Default bound of each peer's outbound queue, in encoded bytes. Without it a queue of 4096 large
 * appends to a dead peer could hold gigabytes.
 */
export const DEFAULT_MAX_QUEUED_BYTES = 64 * 1024 * 1024;

/** Default first delay before re-dialling a peer whose stream broke or whose dial failed. */
export const DEFAULT_RECONNECT_MIN_MS = 20;

/** Default cap of the exponential re-dial back-off. */
export const DEFAULT_RECONNECT_MAX_MS = 1000;

/** Default bound of one dial, including the TCP connect, the Noise handshake and protocol negotiation. */
export const DEFAULT_DIAL_TIMEOUT_MS = 2000;

/** How long `stop()` waits for libp2p to close its connections before it resolves anyway. */
export const STOP_TIMEOUT_MS = 2000;

/** How long libp2p may take to close one connection gracefully before it is aborted. */
export const CONNECTION_CLOSE_TIMEOUT_MS = 500;

/**
 * Queued frames are copied into one buffer of at most this many bytes per stream write, so that a
 * burst of small messages costs one encryption and one syscall. A larger frame is written alone.
 */
export const MAX_WRITE_BATCH_BYTES = 256 * 1024;

/**
 * Default bound of the bytes held, across all inbound streams, for frames not yet complete. A
 * stream that pushes the total over it is reset, so peers that start many large frames and never
 * finish them cannot exhaust memory. Honest members need at most one MAX_FRAME_BYTES each.
 */
export const DEFAULT_MAX_INBOUND_BUFFERED_BYTES = 64 * 1024 * 1024;

/** How many streams of our protocol one connection may open at once. A member needs one; reconnects briefly need two. */
export const MAX_INBOUND_STREAMS_PER_CONNECTION = 16;

/**
 * How many connections per second one host may open before libp2p refuses more. libp2p's default
 * (5) is too low when several members share a host, as in tests and local clusters, and reconnect.
 */
export const INBOUND_CONNECTIONS_PER_SECOND_PER_HOST = 100;

/**
 * How many inbound connections one remote host (IP address) may hold at once, handshaking or
 * open; more are closed at once and counted (ConnectionGate). It is what keeps a flood of idle
 * sockets or of connections from one address from taking the slots below, which libp2p counts
 * for all hosts together: libp2p's own limits alone let ten idle sockets from anywhere keep a
 * restarted member out. A member needs one or two connections to each other member, so this
 * leaves room for dozens of members sharing a host, as in tests and local clusters.
 */
export const MAX_INBOUND_CONNECTIONS_PER_HOST = 64;

/**
 * How many inbound connections may be in their handshake at once, across all hosts (libp2p's
 * `maxIncomingPendingConnections`; its default is 10). Four times MAX_INBOUND_CONNECTIONS_PER_HOST,
 * so that filling it takes idle sockets from at least four hosts.
 */
export const MAX_INCOMING_PENDING_CONNECTIONS = 4 * MAX_INBOUND_CONNECTIONS_PER_HOST;

/**
 * How many connections a member holds at once before libp2p refuses inbound ones (its
 * `maxConnections`; its default, 300, was filled from one host). Sixteen times
 * MAX_INBOUND_CONNECTIONS_PER_HOST: far more than any cluster's members need.
 */
export const MAX_CONNECTIONS = 16 * MAX_INBOUND_CONNECTIONS_PER_HOST;

/** How many dials libp2p runs at once. A member dials each peer at most once at a time, so this bounds the cluster size it serves at once, not a peer's retries. */
export const MAX_PARALLEL_DIALS = 100;

/**
 * How long an inbound connection may take to complete its handshake (the secret's protection,
 * Noise and multiplexer negotiation) before it is closed, freeing its pending slot. An honest
 * dialer gives up after its dial timeout (DEFAULT_DIAL_TIMEOUT_MS); twice that leaves room for a
 * slow machine. libp2p's default is 10 s, which an idle socket could hold a slot for.
 */
export const INBOUND_UPGRADE_TIMEOUT_MS = 2 * DEFAULT_DIAL_TIMEOUT_MS;

/** The file, inside the data directory, that holds the member's libp2p private key. */
export const PEER_KEY_FILE = 'peer-key';
