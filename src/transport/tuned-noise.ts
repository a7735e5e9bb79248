import { noise } from '@chainsafe/libp2p-noise';
import { corkWrites } from './corked-writes.js';
import { throwPrebuiltRangeError } from './noise-length-prefix.js';

/**
 * Noise, with the TCP writes beneath it corked per frame (corked-writes.ts) and the length
 * prefixes of what it reads decoded without building an error per read (noise-length-prefix.ts).
 */
export function tunedNoise(): ReturnType<typeof noise> {
  const factory = noise();
  return (components) => {
    const inner = factory(components);
    // A prototype link keeps every other member of the encrypter (protocol id, extensions) as is.
    const wrapped: typeof inner = Object.create(inner) as typeof inner;
    wrapped.secureInbound = (connection, options) => tuneSecured(inner.secureInbound(corkWrites(connection), options));
    wrapped.secureOutbound = (connection, options) => tuneSecured(inner.secureOutbound(corkWrites(connection), options));
    return wrapped;
  };
}

async function tuneSecured<T extends { readonly connection: unknown }>(securing: Promise<T>): Promise<T> {
  const secured = await securing;
  throwPrebuiltRangeError(secured.connection);
  return secured;
}
