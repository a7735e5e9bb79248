/**
 * The CRC-32 (gzip's, reflected polynomial 0xedb88320) of two byte strings one after the other,
 * from the CRC-32 of each and the second's length: zlib's crc32_combine, which Node does not
 * expose. It lets an answer made of pieces kept between answers keep each piece's CRC with it,
 * rather than read every byte again for each answer (gzip-pieces.ts).
 *
 * As in zlib (crc32.c): a CRC is a polynomial over GF(2), and appending n zero bytes multiplies
 * it by x^(8n) modulo the CRC's polynomial, so crc(A·B) = crc(A)·x^(8·len(B)) + crc(B). The
 * powers x^(2^k) are kept in a table, and x^(8n) is their product over n's set bits.
 */

const POLY = 0xedb88320;

/** a(x)·b(x) modulo the polynomial, both reflected (x^0 in the top bit). */
function multiplyModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, for k from 0 to 31 (the powers repeat beyond). */
const X2N: readonly number[] = (() => {
  const table = [0x40000000]; // x^1
  for (let k = 1; k < 32; k++) table.push(multiplyModP(table[k - 1] as number, table[k - 1] as number));
  return table;
})();

/** x^(8n) modulo the polynomial. */
function x8nModP(n: number): number {
  let p = 0x80000000; // x^0
  let k = 3;
  // n may exceed 2^32 (a length in bytes): halve it by division, not by shifting.
  while (n > 0) {
    if (n % 2 === 1) p = multiplyModP(X2N[k & 31] as number, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A then B, given `crcA`, `crcB` and B's length in bytes. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multiplyModP(x8nModP(lengthB), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}
