import { createHash, timingSafeEqual } from 'node:crypto';
import { unauthorized, type HttpRequestError } from './errors.js';

/** The scheme is case-insensitive (RFC 9110, 11.1): `bearer` and `BEARER` are Bearer. */
const BEARER = /^Bearer ([\x21-\x7e]+)$/i;

/**
 * The check of an action's token (`Authorization: Bearer <token>`). Both tokens are hashed
 * before the comparison, so that it takes the same time whatever the given token's length or
 * its first differing character: the time of an answer tells nothing about the token.
 */
export class BearerAuth {
  readonly #digest: Buffer | null;

  /** `token`: the `http.token` option; null refuses every action. */
  constructor(token: string | null) {
    this.#digest = token === null ? null : digest(token);
  }

  /** Null when `header` carries the token; else the error to answer with. */
  check(header: string | undefined): HttpRequestError | null {
    if (this.#digest === null) return unauthorized('Actions are off on this member: it has no http.token');
    const given = header === undefined ? null : BEARER.exec(header)?.[1];
    if (given === null || given === undefined) return unauthorized('Actions need the token: Authorization: Bearer <token>');
    return timingSafeEqual(digest(given), this.#digest) ? null : unauthorized('The token is not this member\'s');
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
