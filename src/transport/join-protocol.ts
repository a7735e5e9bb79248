import { encode } from 'cborg';
import { decode } from '../bytes/cbor-decode.js';
import type { Stream, StreamMessageEvent } from '@libp2p/interface';
import type { NodeId } from '../raft/types.js';
import { DECODE_OPTIONS } from '../bytes/strict-cbor.js';
import { MAX_CONF_MEMBERS, MAX_ID_LENGTH } from './constants.js';
import { FrameReader, withPrefix } from './framing.js';
import { MAX_VERSION } from '../version/versions.js';
import { MAX_INDEX } from '../raft/bounds.js';
import { MAX_TIMER_DELAY_MS } from '../time/clock.js';

/**
 * The join protocol (issue 18, README "Forming the cluster"): a new member asks a member it was
 * given as a seed whether a cluster runs and to be added to it. One request and one answer on a
 * short libp2p stream, behind the cluster secret like the Raft stream, each a length-prefixed
 * CBOR array, both bounded in size and time.
 */

/** The libp2p protocol id of the join stream. Bump the major version on an incompatible change. */
export const JOIN_PROTOCOL_ID = '/cronraft/join/1.0.0';

/** The largest join request: an id, a cluster id and five small numbers. */
export const MAX_JOIN_REQUEST_BYTES = 1024;

/** The largest join answer: the founding voters and the members, each at most MAX_CONF_MEMBERS ids of MAX_ID_LENGTH. */
export const MAX_JOIN_ANSWER_BYTES = 2 * MAX_CONF_MEMBERS * (MAX_ID_LENGTH + 3) + 1024;

/**
 * How long a member serving a join waits for the request to arrive, and a joiner for the answer
 * when its own deadline is later: long enough for a leader to commit the add-learner change.
 */
export const JOIN_STREAM_TIMEOUT_MS = 5000;

/** Join streams a member serves at once per connection; more are refused by libp2p. */
export const MAX_INBOUND_JOIN_STREAMS = 2;

/** The longest reason of a refusal or detail of a retry (an answer longer is unreadable, to this release and earlier ones). */
const MAX_REASON_LENGTH = 200;

/** The version of the request and answer layouts. */
const JOIN_FORMAT = 1;

/** A range of versions a joiner reads (VersionSupport's ranges). */
export interface ReadRange {
  readonly min: number;
  readonly max: number;
}

/**
 * What a joiner asks: to be added under `id`, its advertised `host:port`, reading these versions.
 * A member with data asks with `member` instead, never to be added: whether it is still a member
 * of the cluster `clusterId`, with the log committed up to `committed` as one (removal-probe.ts).
 */
export interface JoinRequest {
  readonly id: NodeId;
  readonly protocol: ReadRange;
  readonly stateMachine: ReadRange;
  readonly member?: { readonly clusterId: string; readonly committed: number };
}

/**
 * What a member answers:
 * - `accepted`: the joiner is a member (added as a learner, or in the configuration already):
 *   the cluster id, the founding voters its node is built with, and the members now (to reach
 *   the leader before it has replayed the log);
 * - `redirect`: a follower names the leader to ask;
 * - `retry`: a cluster runs, but cannot add a member now (no leader known, another change pending);
 * - `forming`: the member has no data and looks for a cluster itself, with the founding voters it was given;
 * - `refused`: never, for `reason`; a refusal for versions says the cluster version the joiner
 *   `needs` to read and the one `active` (0 for the other reasons);
 * - `removed`: to a member asking whether it still is one, from a member that applied the log up
 *   to `index`, at or past what the asker knows committed, and holds a configuration without it.
 */
export type JoinAnswer =
  | {
      readonly type: 'accepted';
      readonly clusterId: string;
      readonly foundingVoters: readonly NodeId[];
      readonly members: readonly NodeId[];
      /** Set by the asker, never on the wire: the peer id the connection the answer came over proved (requestJoin). */
      readonly peerId?: string;
    }
  | { readonly type: 'redirect'; readonly leader: NodeId }
  | { readonly type: 'retry'; readonly detail: string }
  | { readonly type: 'forming'; readonly voters: readonly NodeId[] }
  | { readonly type: 'refused'; readonly reason: string; readonly needs: number; readonly active: number }
  | { readonly type: 'removed'; readonly index: number };

/** A join request or answer that does not match the layout: refused, never half-used. */
export class JoinFormatError extends Error {
  override readonly name = 'JoinFormatError';
}

export function encodeJoinRequest(r: JoinRequest): Uint8Array {
  const fields = [JOIN_FORMAT, r.id, r.protocol.min, r.protocol.max, r.stateMachine.min, r.stateMachine.max];
  return withPrefix(encode(r.member === undefined ? fields : [...fields, r.member.clusterId, r.member.committed]));
}

export function decodeJoinRequest(bytes: Uint8Array): JoinRequest {
  const v = decodeArray(bytes, MAX_JOIN_REQUEST_BYTES);
  if ((v.length !== 6 && v.length !== 8) || v[0] !== JOIN_FORMAT) throw new JoinFormatError(`expected a join request of format ${JOIN_FORMAT}`);
  const [, id, pMin, pMax, sMin, sMax, clusterId, committed] = v;
  const request = { id: checkId(id), protocol: checkRange(pMin, pMax), stateMachine: checkRange(sMin, sMax) };
  return v.length === 6 ? request : { ...request, member: { clusterId: checkText(clusterId, 'cluster id', MAX_ID_LENGTH), committed: checkIndex(committed) } };
}

export function encodeJoinAnswer(a: JoinAnswer): Uint8Array {
  switch (a.type) {
    case 'accepted':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.clusterId, a.foundingVoters, a.members]));
    case 'redirect':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.leader]));
    case 'retry':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.detail]));
    case 'forming':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.voters]));
    case 'refused':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.reason, a.needs, a.active]));
    case 'removed':
      return withPrefix(encode([JOIN_FORMAT, a.type, a.index]));
  }
}

export function decodeJoinAnswer(bytes: Uint8Array): JoinAnswer {
  const v = decodeArray(bytes, MAX_JOIN_ANSWER_BYTES);
  if (v[0] !== JOIN_FORMAT) throw new JoinFormatError(`expected a join answer of format ${JOIN_FORMAT}`);
  const type = v[1];
  if (type === 'accepted' && v.length === 5) {
    const clusterId = checkText(v[2], 'cluster id', MAX_ID_LENGTH);
    const foundingVoters = checkIds(v[3], 1);
    return { type, clusterId, foundingVoters, members: checkIds(v[4], 0) };
  }
  if (type === 'redirect' && v.length === 3) return { type, leader: checkId(v[2]) };
  if (type === 'retry' && v.length === 3) return { type, detail: checkText(v[2], 'detail', MAX_REASON_LENGTH) };
  if (type === 'forming' && v.length === 3) return { type, voters: checkIds(v[2], 1) };
  if (type === 'refused' && v.length === 5) return { type, reason: checkText(v[2], 'reason', MAX_REASON_LENGTH), needs: checkVersion(v[3]), active: checkVersion(v[4]) };
  if (type === 'removed' && v.length === 3) return { type, index: checkIndex(v[2]) };
  throw new JoinFormatError('expected a join answer: accepted, redirect, retry, forming, refused or removed');
}

/**
 * Reads one length-prefixed frame from `stream`, at most `maxBytes`, within `timeoutMs`: resolves
 * with it, or rejects (a frame too large, the stream closed first, the time out) after aborting
 * the stream. The transport runs on real time (as libp2p does), so does this timeout.
 */
export function readOneFrame(stream: Stream, maxBytes: number, timeoutMs: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const reader = new FrameReader(maxBytes);
    let done = false;
    const finish = (error: Error | null, frame?: Uint8Array): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stream.removeEventListener('message', onData);
      stream.removeEventListener('close', onClose);
      if (error === null && frame !== undefined) {
        resolve(frame);
        return;
      }
      stream.abort(error ?? new Error('no frame'));
      reject(error);
    };
    const onData = (event: StreamMessageEvent): void => {
      try {
        const chunks = event.data instanceof Uint8Array ? [event.data] : [...event.data];
        for (const chunk of chunks) reader.push(chunk, (frame) => finish(null, frame.slice()));
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const onClose = (): void => finish(new Error('the stream closed before a whole frame arrived'));
    // Node runs a longer delay after 1 ms (MAX_TIMER_DELAY_MS).
    const timer = setTimeout(() => finish(new Error(`no frame within ${timeoutMs} ms`)), Math.min(timeoutMs, MAX_TIMER_DELAY_MS));
    stream.addEventListener('message', onData);
    stream.addEventListener('close', onClose);
  });
}

function decodeArray(bytes: Uint8Array, maxBytes: number): unknown[] {
  if (bytes.length > maxBytes) throw new JoinFormatError(`${bytes.length} bytes exceed ${maxBytes}`);
  let value: unknown;
  try {
    value = decode(bytes, DECODE_OPTIONS);
  } catch (error) {
    throw new JoinFormatError(`not valid CBOR (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!Array.isArray(value)) throw new JoinFormatError('expected an array');
  return value;
}

function checkText(value: unknown, what: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) throw new JoinFormatError(`expected a ${what} of 1 to ${maxLength} characters`);
  return value;
}

function checkId(value: unknown): NodeId {
  return checkText(value, 'member id', MAX_ID_LENGTH);
}

function checkIds(value: unknown, min: number): NodeId[] {
  if (!Array.isArray(value) || value.length < min || value.length > MAX_CONF_MEMBERS) throw new JoinFormatError(`expected ${min} to ${MAX_CONF_MEMBERS} member ids`);
  return value.map(checkId);
}

function checkVersion(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_VERSION) throw new JoinFormatError(`expected a version from 0 to ${MAX_VERSION}`);
  return value as number;
}

function checkIndex(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_INDEX) throw new JoinFormatError(`expected a log index from 0 to ${MAX_INDEX}`);
  return value as number;
}

function checkRange(min: unknown, max: unknown): ReadRange {
  const range = { min: checkVersion(min), max: checkVersion(max) };
  if (range.max < range.min) throw new JoinFormatError('expected a version range');
  return range;
}

/**
 * Serves one join stream: reads the request (bounded, within JOIN_STREAM_TIMEOUT_MS), asks
 * `answer` (given the connection's authenticated remote peer id), writes the answer and closes.
 * A request that cannot be read is reported to `onUnreadable` and the stream reset.
 */
export async function serveJoinStream(
  stream: Stream,
  remotePeer: string,
  answer: (request: JoinRequest, remotePeer: string) => Promise<JoinAnswer>,
  onUnreadable: (error: Error) => void,
): Promise<void> {
  let request: JoinRequest;
  try {
    request = decodeJoinRequest(await readOneFrame(stream, MAX_JOIN_REQUEST_BYTES, JOIN_STREAM_TIMEOUT_MS));
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    stream.abort(e);
    onUnreadable(e);
    return;
  }
  try {
    const reply = await answer(request, remotePeer);
    stream.send(encodeJoinAnswer(reply));
    await stream.close({ signal: AbortSignal.timeout(JOIN_STREAM_TIMEOUT_MS) });
  } catch (error) {
    stream.abort(error instanceof Error ? error : new Error(String(error)));
  }
}

/** A stream opened to a peer, and the peer id its connection proved (Noise). */
export interface OpenedStream {
  readonly stream: Stream;
  readonly remotePeer: string;
}

/**
 * Asks one member: opens a join stream with `open`, sends `request` and reads the answer, all
 * within `timeoutMs`. Rejects when the member cannot be reached, does not speak the join
 * protocol, or answers something unreadable. An `accepted` answer says which peer id gave it.
 */
export async function requestJoin(open: (signal: AbortSignal) => Promise<OpenedStream>, request: JoinRequest, timeoutMs: number): Promise<JoinAnswer> {
  const { stream, remotePeer } = await open(AbortSignal.timeout(timeoutMs));
  try {
    stream.send(encodeJoinRequest(request));
    const answer = decodeJoinAnswer(await readOneFrame(stream, MAX_JOIN_ANSWER_BYTES, timeoutMs));
    await stream.close({ signal: AbortSignal.timeout(timeoutMs) }).catch(() => undefined);
    return answer.type === 'accepted' ? { ...answer, peerId: remotePeer } : answer;
  } catch (error) {
    stream.abort(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
}
