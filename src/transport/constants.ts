/**
 * Every bound and default of the transport, named in one place so that the Raft layer can size
 * its batches below them and reviewers can see the limits a hostile peer runs into.
 */

/** The libp2p protocol id of cronraft's Raft stream. Bump the major version on an incompatible change. */
export const PROTOCOL_ID = '/cronraft/raft/1.0.0';

/** The version written in every frame; a decoder rejects any other version. */
export const FRAME_FORMAT_VERSION = 1;

/** The largest encoded frame (CBOR bytes, without its length prefix) a member sends or accepts. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** The most entries one append message may carry. The Raft layer should batch below this and below MAX_FRAME_BYTES. */
export const MAX_ENTRIES_PER_MESSAGE = 8192;

/** The most proposals one forwarded propose message (and pids in its response) may carry. */
export const MAX_PROPOSALS_PER_MESSAGE = 8192;

/**
 * The largest snapshot a member takes in, whole: well below the transport's bound on bytes
 * queued for one peer (64 MiB), so that a snapshot and the traffic beside it fit. The
 * scheduler's state at its bounds (10,000 jobs, 10,000 kept claims with their outcomes) stays
 * well below it. The codec refuses a snapshot chunk whose offset or total passes it, and the
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

/** The file, inside the data directory, that holds the member's libp2p private key. */
export const PEER_KEY_FILE = 'peer-key';
