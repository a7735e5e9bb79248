/**
 * The pieces, in order, in one new buffer of its own: not a view into Node's pool of small
 * buffers (as Buffer.concat may give), since the callers' results are kept long (snapshots).
 */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}
