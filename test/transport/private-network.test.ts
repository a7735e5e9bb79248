/**
 * The private network's cipher (private-network.ts): the keystream pnet's `xsalsa20` gives, over
 * any chunking, so that members of releases that used pnet itself talk to these (the transport's
 * secret tests connect pnet's own protector to a member); with no state shared between
 * connections, which is what let a process without the secret crash a member with a few thousand
 * connections, and members crash each other with large frames.
 */
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { keyOfPsk, NONCE_BYTES, XSalsa20Stream } from '../../src/transport/private-network.js';
import { SeededRandom } from '../../src/time/random.js';

/** The `xsalsa20` package as @libp2p/pnet uses it: `update(bytes)` on one instance per direction. */
const pnetCipher = createRequire(import.meta.url)('xsalsa20') as (nonce: Uint8Array, key: Uint8Array) => { update(data: Uint8Array): Uint8Array; finalize(): void };

describe('the private network', () => {
  it('gives the keystream pnet does, over any chunking of the bytes', () => {
    const random = new SeededRandom(7);
    for (let round = 0; round < 20; round++) {
      const key = randomBytes(32);
      const nonce = randomBytes(NONCE_BYTES);
      const ours = new XSalsa20Stream(key, nonce);
      const theirs = pnetCipher(nonce, key);
      for (let chunk = 0; chunk < 50; chunk++) {
        const data = randomBytes(random.int(0, 300) === 0 ? 70_000 : random.int(0, 200));
        expect(Buffer.from(ours.update(data) as Uint8Array).equals(Buffer.from(theirs.update(data)))).toBe(true);
      }
      theirs.finalize();
    }
  });

  it('reads the key from the format pnet takes, which pskFromSecret writes, and refuses anything else', () => {
    expect(keyOfPsk(pskFromSecret('correct horse battery staple'))).toHaveLength(32);
    expect(() => keyOfPsk(new TextEncoder().encode('/key/swarm/psk/1.0.0/\n/base16/\nabc'))).toThrow(/pnet format/);
    expect(() => keyOfPsk(new TextEncoder().encode(`/key/swarm/psk/2.0.0/\n/base16/\n${'ab'.repeat(32)}`))).toThrow(/pnet format/);
  });

  it('keeps each stream to itself: twenty thousand streams, then a megabyte on the first, all decrypt', () => {
    const key = randomBytes(32);
    const pairs = Array.from({ length: 20_000 }, () => {
      const nonce = randomBytes(NONCE_BYTES);
      return [new XSalsa20Stream(key, nonce), new XSalsa20Stream(key, nonce)] as const;
    });
    const big = randomBytes(1 << 20);
    const [sender, receiver] = pairs[0] as readonly [XSalsa20Stream, XSalsa20Stream];
    for (const [a, b] of pairs.slice(1, 200)) expect(b.update(a.update(Buffer.from('hello')) as Uint8Array)).toEqual(new Uint8Array(Buffer.from('hello')));
    expect(Buffer.from(receiver.update(sender.update(big) as Uint8Array) as Uint8Array).equals(big)).toBe(true);
  });

  it('refuses to go past the blocks a stream may carry, rather than reuse its keystream', () => {
    const stream = new XSalsa20Stream(randomBytes(32), randomBytes(NONCE_BYTES), 2);
    expect(stream.update(new Uint8Array(100))).toHaveLength(100);
    expect(stream.update(new Uint8Array(28))).toHaveLength(28);
    expect(stream.update(new Uint8Array(1))).toBeNull();
  });
});
