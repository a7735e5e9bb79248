import type { Stream, StreamCloseEvent } from '@libp2p/interface';
import type { PeerAddress } from './address.js';
import { dialFailureOf, type DialFailure } from './dial-failure.js';
import { MAX_WRITE_BATCH_BYTES } from './constants.js';
import type { TransportEvent } from './events.js';
import { prefixLength, writePrefix } from './framing.js';
import { SendQueue } from './send-queue.js';

/** The counters a link updates; owned by the transport, which reports them in stats(). */
export interface LinkCounters {
  sent: number;
  /** The bytes written to the Raft protocol's streams: frames with their length prefixes. */
  sentBytes: number;
  droppedQueueFull: number;
}

export interface LinkSettings {
  readonly maxQueuedMessages: number;
  readonly maxQueuedBytes: number;
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  readonly dialTimeoutMs: number;
}

export interface LinkContext {
  /** Opens a stream of the Raft protocol to `address`; rejects when the peer cannot be reached. */
  readonly dial: (address: PeerAddress, signal: AbortSignal) => Promise<Stream>;
  readonly counters: LinkCounters;
  readonly emit: (event: TransportEvent) => void;
  readonly settings: LinkSettings;
}

type LinkState = 'idle' | 'dialing' | 'open' | 'backoff' | 'closed';

/**
 * The outbound half of the connection to one peer: a bounded queue of encoded frames, one
 * long-lived stream, and a writer. Frames queued in the same turn of the event loop are written
 * together in one `stream.send`, once the turn's I/O callbacks have run (setImmediate), so a
 * burst costs one encryption and one syscall; `flushNow` writes what is queued at once instead
 * (Transport.flush), as the leader does with its appends.
 * The writer never awaits per frame; when the stream's buffer is full it waits for `drain`
 * while the queue (and only this peer's queue) absorbs or drops new frames.
 * When the stream breaks, the link re-dials with capped exponential back-off and jitter.
 */
export class PeerLink {
  #address: PeerAddress;
  readonly #ctx: LinkContext;
  #queue: SendQueue;
  #state: LinkState = 'idle';
  #stream: Stream | null = null;
  #openedAt = 0;
  /** Failed dials, or streams that broke soon after opening, since the last stable stream. */
  #failures = 0;
  /** Why the last dial failed, until a dial succeeds. */
  #dialFailure: DialFailure | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #dialAbort: AbortController | null = null;
  #flushScheduled = false;
  #waitingForDrain = false;
  /** Whether heardFrom() cut the current back-off short already: once per outage (see there). */
  #redialedEarly = false;

  /** `queue` carries over the frames of a previous link to the same member, e.g. when its address changes. */
  constructor(address: PeerAddress, ctx: LinkContext, queue?: SendQueue) {
    this.#address = address;
    this.#ctx = ctx;
    this.#queue = queue ?? this.#newQueue();
  }

  /** True while the outbound stream is open. */
  get connected(): boolean {
    return this.#state === 'open';
  }

  /** Why the last dial to the peer failed, or null once one succeeded (or none failed). */
  get dialFailure(): DialFailure | null {
    return this.#dialFailure;
  }

  /** Starts dialling; called once the transport listens. */
  start(): void {
    if (this.#state === 'idle') this.#dial();
  }

  /** Queues an encoded frame (without prefix). Never throws, never blocks. */
  enqueue(frame: Uint8Array): void {
    if (this.#state === 'closed') {
      this.#drop('unreachable', 1, 'the transport is stopped');
      return;
    }
    const dropped = this.#queue.push(frame);
    if (dropped > 0) this.#drop('queue-full', dropped, `queue bound of ${this.#ctx.settings.maxQueuedMessages} messages or ${this.#ctx.settings.maxQueuedBytes} bytes reached`);
    if (this.#state === 'open') this.#scheduleFlush();
  }

  /**
   * A message came in from the peer, so it is up: a link waiting out its back-off dials now.
   * Without this, a member that restarts after being down for a while is sent nothing for up to
   * reconnectMaxMs, though it talks to us: in the raft bench, a follower's votes for a member
   * that had just restarted waited in the queue of such a link, and the failover they were for
   * took several times as long. Once per outage, so that a peer that reaches
   * us but that we cannot reach costs one extra dial, not one per message it sends.
   */
  heardFrom(): void {
    if (this.#state !== 'backoff' || this.#redialedEarly) return;
    this.#redialedEarly = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#dial();
  }

  /** Writes queued frames now rather than at the end of the turn (see Transport.flush). */
  flushNow(): void {
    if (this.#state === 'open' && this.#queue.size > 0) this.#flush();
  }

  /** Where the link dials its peer, with the peer id the peer must prove, if any. */
  get address(): PeerAddress {
    return this.#address;
  }

  /**
   * The peer, dialled at this same address without a peer id so far, is bound to `peerId` (the
   * configuration's binding): every dial from now on must reach that key. The stream open now
   * is kept, so that a binding costs no reconnection, nor the moment without a connection in
   * which the leader would hand the peer's work to others; frames that come back from the peer
   * arrive on its own connections, which the transport checks against the binding.
   */
  bind(peerId: string): void {
    this.#address = { ...this.#address, peerId };
  }

  /** Closes the link and hands its unsent frames over, for a link that replaces it. */
  detachQueue(): SendQueue {
    const queue = this.#queue;
    this.#queue = this.#newQueue();
    this.close();
    return queue;
  }

  /** Stops for good: cancels any dial or timer, resets the stream and discards queued frames. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#dialAbort?.abort();
    this.#dialAbort = null;
    const stream = this.#stream;
    this.#stream = null;
    // Aborting rather than closing gracefully keeps stop() prompt; Raft does not need the tail.
    stream?.abort(new Error('cronraft transport stopped'));
    this.#queue.clear();
  }

  #newQueue(): SendQueue {
    return new SendQueue(this.#ctx.settings.maxQueuedMessages, this.#ctx.settings.maxQueuedBytes);
  }

  #dial(): void {
    this.#state = 'dialing';
    const controller = new AbortController();
    this.#dialAbort = controller;
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(this.#ctx.settings.dialTimeoutMs)]);
    this.#ctx.dial(this.#address, signal).then(
      (stream) => this.#onOpen(stream, controller),
      (error: unknown) => this.#onDialFailed(error, controller),
    );
  }

  #onOpen(stream: Stream, controller: AbortController): void {
    if (this.#dialAbort !== controller || this.#state !== 'dialing') {
      // Closed while dialling: the stream is not wanted any more.
      stream.abort(new Error('cronraft transport stopped'));
      return;
    }
    if (stream.status !== 'open' || stream.writeStatus !== 'writable') {
      stream.abort(new Error('stream closed right after opening'));
      this.#onDialFailed(new Error(`stream ${stream.status} right after opening`), controller);
      return;
    }
    this.#dialAbort = null;
    this.#state = 'open';
    this.#dialFailure = null;
    this.#redialedEarly = false;
    this.#stream = stream;
    this.#openedAt = performance.now();
    this.#waitingForDrain = false;
    stream.addEventListener('drain', () => this.#onDrain(stream));
    stream.addEventListener('close', (event) => this.#onClose(stream, event), { once: true });
    this.#ctx.emit({ type: 'connected', peer: this.#address.id });
    if (this.#queue.size > 0) this.#scheduleFlush();
  }

  #onDialFailed(error: unknown, controller: AbortController): void {
    if (this.#dialAbort !== controller) return;
    this.#dialAbort = null;
    if (this.#state === 'closed') return;
    this.#failures++;
    this.#dialFailure = dialFailureOf(error);
    this.#ctx.emit({ type: 'dial-failed', peer: this.#address.id, error: asError(error), attempt: this.#failures });
    this.#backOff();
  }

  #onClose(stream: Stream, event: StreamCloseEvent): void {
    if (this.#stream !== stream) return;
    this.#stream = null;
    this.#waitingForDrain = false;
    if (this.#state === 'closed') return;
    // A stream that broke soon after opening counts as a failure, so a peer that accepts and then
    // drops us is re-dialled with growing delays instead of in a tight loop. Measured on the
    // monotonic clock: a step of the wall clock must not reset or keep the count.
    this.#failures = performance.now() - this.#openedAt >= this.#ctx.settings.reconnectMaxMs ? 0 : this.#failures + 1;
    this.#ctx.emit({ type: 'disconnected', peer: this.#address.id, error: event.error ?? null });
    this.#backOff();
  }

  #backOff(): void {
    this.#state = 'backoff';
    const { reconnectMinMs, reconnectMaxMs } = this.#ctx.settings;
    const exponent = Math.min(Math.max(this.#failures - 1, 0), 30);
    const ceiling = Math.min(reconnectMaxMs, reconnectMinMs * 2 ** exponent);
    // Jitter between half and all of the delay keeps members that lost a peer together from
    // re-dialling in lock-step.
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#state === 'backoff') this.#dial();
    }, delay);
    this.#timer.unref?.();
  }

  #onDrain(stream: Stream): void {
    if (this.#stream !== stream) return;
    this.#waitingForDrain = false;
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#waitingForDrain) return;
    this.#flushScheduled = true;
    // Not a microtask: the driver's turns, a member's answers to several messages read at once,
    // each end in a microtask of their own, and flushing after each wrote once per turn of the
    // driver. Under load that was several writes per peer per turn of the event loop, each a
    // syscall that on loopback also runs the receiver's TCP processing. An idle member loses
    // nothing: its loop goes from the I/O callback that queued the frames to setImmediate's.
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const stream = this.#stream;
    while (stream !== null && this.#stream === stream && !this.#waitingForDrain && this.#queue.size > 0) {
      const { chunks, frames } = this.#nextBatch();
      let writable = true;
      try {
        for (const chunk of chunks) writable = stream.send(chunk) && writable;
      } catch (error) {
        // The stream is closed for writing: keep the frames for the next stream and reset this one,
        // which fires 'close' and leads to a re-dial.
        stream.abort(asError(error));
        return;
      }
      for (let i = 0; i < frames; i++) this.#queue.shift();
      this.#ctx.counters.sent += frames;
      for (const chunk of chunks) this.#ctx.counters.sentBytes += chunk.byteLength;
      if (!writable) this.#waitingForDrain = true;
    }
  };

  /**
   * The next write: as many queued frames as fit in MAX_WRITE_BATCH_BYTES, each with its length
   * prefix, copied into one buffer. A frame too large for a batch goes alone, as its prefix and
   * the frame itself, to avoid copying megabytes.
   */
  #nextBatch(): { chunks: Uint8Array[]; frames: number } {
    const first = this.#queue.peek() as Uint8Array;
    const firstSize = prefixLength(first.length) + first.length;
    if (firstSize > MAX_WRITE_BATCH_BYTES) {
      const prefix = new Uint8Array(prefixLength(first.length));
      writePrefix(prefix, 0, first.length);
      return { chunks: [prefix, first], frames: 1 };
    }
    let total = firstSize;
    let frames = 1;
    for (let next = this.#queue.peek(frames); next !== undefined; next = this.#queue.peek(frames)) {
      const size = prefixLength(next.length) + next.length;
      if (total + size > MAX_WRITE_BATCH_BYTES) break;
      total += size;
      frames++;
    }
    const batch = new Uint8Array(total);
    let offset = 0;
    for (let i = 0; i < frames; i++) {
      const frame = this.#queue.peek(i) as Uint8Array;
      offset = writePrefix(batch, offset, frame.length);
      batch.set(frame, offset);
      offset += frame.length;
    }
    return { chunks: [batch], frames };
  }

  #drop(reason: 'queue-full' | 'unreachable', count: number, detail: string): void {
    this.#ctx.counters.droppedQueueFull += count;
    this.#ctx.emit({ type: 'dropped', reason, peer: this.#address.id, detail: count === 1 ? detail : `${count} messages: ${detail}` });
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
