/** @chainsafe/libp2p-yamux's StreamState.Established. */
const YAMUX_ESTABLISHED = 3;

interface YamuxStreamShape {
  sendWindowUpdate?: unknown;
  recvWindow?: unknown;
  recvWindowCapacity?: unknown;
  state?: unknown;
}

/**
 * @chainsafe/libp2p-yamux answers every data frame it receives with a window update, so each
 * Raft message costs a second frame back, a second write and a second wake-up of the sender.
 * The Go yamux it follows sends one only once half the receive window is used. This makes an
 * inbound stream do the same: the sender's window (256 KiB by default) never runs dry, since an
 * update still goes out before half of it is used. It touches only a stream with yamux's
 * fields; anything else is left as it is, so a library change costs the speed-up, not safety.
 */
export function relaxWindowUpdates(stream: unknown): void {
  const s = stream as YamuxStreamShape;
  const original = s.sendWindowUpdate;
  if (typeof original !== 'function' || typeof s.recvWindow !== 'number' || typeof s.recvWindowCapacity !== 'number') return;
  s.sendWindowUpdate = (): void => {
    if (s.state === YAMUX_ESTABLISHED && (s.recvWindowCapacity as number) > (s.recvWindow as number) / 2) return;
    (original as () => void).call(stream);
  };
}
