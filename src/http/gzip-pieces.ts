import * as zlib from 'node:zlib';
import { crc32Combine } from '../bytes/crc32-combine.js';

/**
 * Answers in pieces (state-json.ts) gzipped for a client that asks for it, each piece compressed
 * once and kept beside it for as long as the piece lives, rather than the whole answer compressed
 * anew for each request: with thousands of jobs the state's JSON is megabytes, and moving them
 * over a socket, on both sides, took longer than anything else in the answer, while compressing
 * them whole took longer still.
 *
 * A piece is compressed on its own as raw DEFLATE ended by a sync flush: byte-aligned, without the
 * final bit, and referring to nothing before it, so pieces compressed apart follow one another as
 * one DEFLATE stream (RFC 1951), the way pigz compresses in parallel. The answer is a gzip member
 * (RFC 1952) around them: its header, the pieces, an empty final block, and the CRC-32 and length
 * of the uncompressed bytes. Each piece's CRC-32 is kept with its DEFLATE bytes and the answer's
 * combined from them (crc32-combine.ts): reading megabytes for it on each answer cost more than
 * all the rest of the answer.
 */

/** zlib.crc32 came with Node 20.15 and 22.2; on an older Node, answers go as they are. */
const crc32: ((data: Uint8Array, value?: number) => number) | undefined = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** Answers shorter than this go as they are: compressing them saves less than it costs. */
export const GZIP_MIN_BYTES = 1024;

/** Fast: pieces are compressed once each, but a piece that changes often is compressed often. */
const LEVEL = 1;

/** The gzip header: magic, DEFLATE, no flags, no time, no extra flags, an unknown OS. */
const HEADER = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]);
/** An empty fixed-Huffman block with the final bit set: the stream's end. */
const FINAL_BLOCK = new Uint8Array([0x03, 0x00]);

/** A piece's DEFLATE bytes, and the CRC-32 of the piece itself. */
interface Deflated {
  readonly bytes: Uint8Array;
  readonly crc: number;
}

/** Each piece's, kept weakly: a piece no longer answered takes them with it. */
const compressed = new WeakMap<Uint8Array, Deflated>();

function deflated(piece: Uint8Array, crc32: (data: Uint8Array) => number): Deflated {
  let kept = compressed.get(piece);
  if (kept === undefined) {
    kept = { bytes: zlib.deflateRawSync(piece, { level: LEVEL, finishFlush: zlib.constants.Z_SYNC_FLUSH }), crc: crc32(piece) };
    compressed.set(piece, kept);
  }
  return kept;
}

/**
 * Pieces shorter than this go as stored (uncompressed) DEFLATE blocks: the state's head, new
 * for each answer, is a few KiB, and a zlib stream made for it cost more than its bytes on a
 * socket. At most 65,535 bytes, a stored block's most.
 */
export const GZIP_STORED_BELOW = 8 * 1024;

/** `piece` as a stored block, not final (RFC 1951, 3.2.4): a byte of header bits, LEN and its complement, the bytes. */
function stored(piece: Uint8Array): Uint8Array {
  const block = new Uint8Array(5 + piece.byteLength);
  block[0] = 0x00;
  block[1] = piece.byteLength & 0xff;
  block[2] = piece.byteLength >>> 8;
  block[3] = ~piece.byteLength & 0xff;
  block[4] = (~piece.byteLength >>> 8) & 0xff;
  block.set(piece, 5);
  return block;
}

/** Compresses `piece` now, if this Node can gzip answers, so that an answer that holds it later finds it done. */
export function prepareGzip(piece: Uint8Array): void {
  if (crc32 !== undefined && piece.byteLength >= GZIP_STORED_BELOW) deflated(piece, crc32);
}

/**
 * `pieces` as one gzip member, in pieces; null when they are better sent as they are (too
 * short, or no CRC-32 on this Node).
 */
export function gzipPieces(pieces: readonly Uint8Array[]): Uint8Array[] | null {
  if (crc32 === undefined) return null;
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  if (length < GZIP_MIN_BYTES) return null;
  const out: Uint8Array[] = [HEADER];
  let crc = 0;
  for (const piece of pieces) {
    if (piece.byteLength === 0) continue;
    if (piece.byteLength < GZIP_STORED_BELOW) {
      out.push(stored(piece));
      crc = crc32(piece, crc);
      continue;
    }
    const { bytes, crc: own } = deflated(piece, crc32);
    out.push(bytes);
    crc = crc32Combine(crc, own, piece.byteLength);
  }
  out.push(FINAL_BLOCK, trailer(crc, length));
  return out;
}

/** The CRC-32 and the length modulo 2^32 of the uncompressed bytes, little-endian. */
function trailer(crc: number, length: number): Uint8Array {
  const bytes = new Uint8Array(8);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, crc >>> 0, true);
  view.setUint32(4, length >>> 0, true);
  return bytes;
}

/**
 * Whether an Accept-Encoding header asks for gzip: named (or `*`) without `q=0`. A header is the
 * client's to send badly: anything not understood is read as not asking.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let gzip: boolean | null = null;
  let star = false;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const refused = params.some((p) => /^q=0(\.0{0,3})?$/.test(p));
    if (name === 'gzip' || name === 'x-gzip') gzip = !refused;
    else if (name === '*') star = !refused;
  }
  return gzip ?? star;
}
