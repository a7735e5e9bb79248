import { hkdfSync, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { InvalidArgumentError } from '../errors.js';
import { hasLoneSurrogate } from '../option-checks.js';

/**
 * The cluster secret: a string every member is given, from which the key of libp2p's private
 * network (`@libp2p/pnet`) is derived, so that a process without it fails at the first bytes of
 * every connection and never reaches the protocol.
 */

/**
 * The shortest secret accepted. Sixteen characters of a random alphabet are 80 bits or more;
 * `cronraft secret` prints 43 (256 bits). Anything shorter is likely a word or a placeholder.
 */
export const MIN_SECRET_LENGTH = 16;

/** The longest secret accepted. */
export const MAX_SECRET_LENGTH = 4096;

/** The largest `secretFile` read: MAX_SECRET_LENGTH characters of UTF-8 at 4 bytes each. */
export const MAX_SECRET_FILE_BYTES = 4 * MAX_SECRET_LENGTH;

/** The random bytes in a secret `cronraft secret` prints, as base64url. */
export const GENERATED_SECRET_BYTES = 32;

/**
 * HKDF-SHA-256's salt and info for the private network key. Changing either changes every
 * cluster's key, so they are part of the wire format (as PROTOCOL_ID is).
 */
const PSK_SALT = 'cronraft/cluster-secret';
const PSK_INFO = 'libp2p-pnet/1.0.0';

/** The key length `@libp2p/pnet` takes (XSalsa20), in bytes. */
const PSK_KEY_BYTES = 32;

/** A new random secret, as `npx cronraft secret` prints it: 32 bytes of base64url. */
export function generateSecret(): string {
  return randomBytes(GENERATED_SECRET_BYTES).toString('base64url');
}

/** Checks a secret given as an option (or read from `secretFile`), naming `option` when it is refused. */
export function checkSecret(value: unknown, option: string): string {
  // A lone surrogate is U+FFFD in the key's UTF-8: secrets that differ only there would be one.
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH || value.length > MAX_SECRET_LENGTH || value.trim() !== value || hasLoneSurrogate(value)) {
    throw new InvalidArgumentError(option, typeof value === 'string' ? `<${value.length} characters>` : value, `a secret of ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters without surrounding spaces or lone surrogates (npx cronraft secret prints one)`);
  }
  return value;
}

/**
 * The pre-shared key `@libp2p/pnet` takes, derived from the secret: HKDF-SHA-256 of the
 * secret's UTF-8 bytes (salt `cronraft/cluster-secret`, info `libp2p-pnet/1.0.0`) gives 32
 * bytes, written in the key format pnet's `generateKey` writes
 * (`/key/swarm/psk/1.0.0/\n/base16/\n<64 hex digits>`). The same secret gives the same key on
 * every member; the secret itself never leaves the process.
 */
export function pskFromSecret(secret: string): Uint8Array {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), PSK_SALT, PSK_INFO, PSK_KEY_BYTES));
  return new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${key.toString('hex')}`);
}

/**
 * Reads the secret from `path`: the file's text, without surrounding white space (a trailing
 * newline is common). On POSIX systems the file must give no permission to its group or to
 * others (mode 0600 or 0400, as ssh asks of a private key): a secret others can read is no secret.
 */
export async function readSecretFile(path: string): Promise<string> {
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a regular file');
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      throw new InvalidArgumentError('secretFile', path, `a file only its owner may read (mode 0600 or 0400; it is ${(info.mode & 0o777).toString(8)})`);
    }
    // UTF-8 takes at most 4 bytes a character; white space around the secret fits in the rest.
    if (info.size > MAX_SECRET_FILE_BYTES) throw new Error(`larger than ${MAX_SECRET_FILE_BYTES} bytes`);
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError('secretFile', path, `a readable file holding the cluster secret (${error instanceof Error ? error.message : String(error)})`);
  }
  return checkSecret(text.trim(), 'secretFile');
}

/**
 * Whether `host` (a parsed listen host: an IP address without brackets, or a lower-case DNS
 * name) is a loopback address, which no other machine can reach: 127.0.0.0/8, ::1 or localhost.
 * `0.0.0.0` and `::` listen on every interface, so they are not.
 */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIPv4(host) && host.startsWith('127.');
}

/** Where a member's secret comes from, once its options are checked: the option itself or a file read at start. */
export type SecretSource = { readonly value: string } | { readonly file: string };

/** The pre-shared key of the secret from `source`, reading `secretFile` now; null when the member has no secret. */
export async function loadPsk(source: SecretSource | null): Promise<Uint8Array | null> {
  if (source === null) return null;
  return pskFromSecret('file' in source ? await readSecretFile(source.file) : source.value);
}
