import { describe, expect, it } from 'vitest';
import {
  BackpressureError,
  InvalidArgumentError,
  MembershipChangeRefusedError,
  NotLeaderError,
  NotRunningError,
  OutcomeUnknownError,
  TimeoutError,
  UnknownJobError,
  VersionNotActiveError,
} from '../../src/errors.js';
import { errorAnswer } from '../../src/http/errors.js';

/** The status of each error code as the README's "Operating a cluster" lists it. */
const README_STATUS: ReadonlyArray<readonly [Error, number]> = [
  [new InvalidArgumentError('limit', 0, 'an integer from 1 to 1000'), 400],
  [new UnknownJobError('nightly'), 404],
  [new MembershipChangeRefusedError('not-member', 'no such member'), 409],
  [new VersionNotActiveError('job operations', 3, 2), 409],
  [new BackpressureError('too much is waiting'), 429],
  [new NotLeaderError(null), 503],
  [new NotRunningError('stopped'), 503],
  [new TimeoutError('the proposal', 5000), 504],
  [new OutcomeUnknownError(), 504],
];

describe('errors answered over HTTP (errorAnswer)', () => {
  it.each(README_STATUS.map(([error, status]) => ({ code: (error as InvalidArgumentError).code, error, status })))('answers $code with $status, its code and message', ({ error, status, code }) => {
    expect(errorAnswer(error)).toEqual({ status, body: { error: { code, message: error.message } } });
  });

  it('answers anything else 500 CRONRAFT_INTERNAL, without its message', () => {
    const answer = errorAnswer(new Error('secret detail at /home/app'));
    expect(answer.status).toBe(500);
    expect(answer.body.error.code).toBe('CRONRAFT_INTERNAL');
    expect(answer.body.error.message).not.toContain('secret');
  });
});
