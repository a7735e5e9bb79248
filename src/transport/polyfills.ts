/**
 * libp2p 3 and @chainsafe/libp2p-noise 17 call `Promise.withResolvers`, which Node adds in 22.
 * Without it every dial on Node 20 fails with a bare ECONNRESET, so this module must be imported
 * before anything that loads libp2p. core-js installs the standard method only where it is missing.
 */
import 'core-js/actual/promise/with-resolvers.js';
