import { describe, expect, it } from 'vitest';
import { dialFailureOf } from '../../src/transport/dial-failure.js';

/** An error as libp2p throws it: its class's name, and a socket's code where it has one. */
function libp2pError(name: string, message: string, code?: string): Error {
  const error = new Error(message);
  error.name = name;
  return code === undefined ? error : Object.assign(error, { code });
}

describe('why a dial failed (dialFailureOf)', () => {
  it('calls a failure on a connection the address took a handshake failure: what a member of another secret, or none, gives', () => {
    // As seen dialling members of another secret, and one with none (transport-secret.test.ts).
    expect(dialFailureOf(libp2pError('EncryptionFailedError', 'Message length too long - 8379 > 1024'))).toBe('handshake');
    expect(dialFailureOf(libp2pError('EncryptionFailedError', 'Missing newline'))).toBe('handshake');
    expect(dialFailureOf(libp2pError('Error', 'read ECONNRESET'))).toBe('handshake');
    expect(dialFailureOf(libp2pError('Error', 'socket hang up', 'ECONNRESET'))).toBe('handshake');
    expect(dialFailureOf(libp2pError('UnexpectedPeerError', 'Unexpected peer'))).toBe('handshake');
  });

  it('calls anything else a failure to connect: refused, unreachable, timed out, or not an error at all', () => {
    expect(dialFailureOf(libp2pError('Error', 'connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED'))).toBe('connection');
    expect(dialFailureOf(libp2pError('TimeoutError', 'The operation was aborted due to timeout'))).toBe('connection');
    expect(dialFailureOf(libp2pError('Error', 'connect EHOSTUNREACH 10.0.0.9:7001', 'EHOSTUNREACH'))).toBe('connection');
    expect(dialFailureOf('a string')).toBe('connection');
  });
});
