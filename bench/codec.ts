/**
 * `npm run bench -- codec`, and a part of `npm run bench -- raft`: the hand-written CBOR paths
 * (src/bytes/cbor-heads.ts as entry-records.ts and runtime/commands.ts use it, and
 * src/transport/append-reader.ts) against cborg alone, on the messages of the commit path.
 * Each row does the same work both ways and checks both give the same bytes or value:
 *
 * - encoding a user's command, once per proposal;
 * - encoding an append as a leader does for one commit in a cluster of three: the entries'
 *   records for its own write, then the frame for each of its two followers (the production
 *   path encodes the records once for all three, through the member's EntryRecords; cborg alone encodes
 *   them three times, and checks the wire array with the decoder's rules as encodeFrame does);
 * - decoding an append, and a heartbeat with its clock stamp (which the append reader turns
 *   away to cborg), as a follower does, from a Buffer as frames arrive;
 * - fan-out's entries (src/runtime/fanout/entry-codec.ts): a consumer's done of 32 outcomes,
 *   written, and read as every member applies it; an emit of 50 items of 100 bytes, read.
 *
 * The two variants run in alternating windows of the same run, so that whatever else the machine
 * does falls on both alike; each figure is the median of its windows. Scavenges are counted per
 * window from the 'gc' performance entries that fall in it: a count of allocation, where the
 * times stretch with the machine's load.
 */
import { decode, encode } from 'cborg';
import { constants, PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';
import { concatBytes } from '../src/bytes/concat-bytes.js';
import { encodeEntryRecords, EntryRecords, entryRecord } from '../src/bytes/entry-records.js';
import { EntryType, type Entry } from '../src/raft/types.js';
import type { WireMessage } from '../src/transport/envelope.js';
import { decodeEntry, encodeCommand, KIND_FANOUT } from '../src/runtime/commands.js';
import { isFanoutCommand } from '../src/fanout/command-shape.js';
import type { FanoutCommand } from '../src/fanout/command.js';
import { FANOUT_VERSION, SUPPORTED } from '../src/version/versions.js';
import { DECODE_OPTIONS } from '../src/bytes/strict-cbor.js';
import { decodeFrame, encodeFrame, fromWire, toWire, type Frame } from '../src/transport/codec.js';
import { fmt, median } from './stats.js';

/** Windows per variant; they alternate, A B A B. */
const WINDOWS = 12;
/** A window runs for at least this long, and whole batches of operations. */
const WINDOW_MS = 40;
const BATCH = 200;
/** Warm-up of each variant before the windows, so that both are measured compiled. */
const WARMUP_MS = 200;

const CLUSTER_ID = 'bench-cluster';
const LEADER = '127.0.0.1:40001';
const FOLLOWERS = ['127.0.0.1:40002', '127.0.0.1:40003'] as const;
/** A proposal of bench/raft.ts's size (64 bytes), as its command. */
const DATA = encodeCommand({ kind: 'user', data: new Uint8Array(64).fill(0x61) });

export interface CodecRow {
  readonly name: string;
  /** Median ns per operation of each variant. */
  readonly handNs: number;
  readonly cborgNs: number;
  /** Scavenges per 10,000 operations of each variant. */
  readonly handScavenges: number;
  readonly cborgScavenges: number;
}

interface Variant {
  /** One operation; `i` lets it alternate inputs. Returns something to keep it from being optimised away. */
  readonly run: (i: number) => unknown;
}

interface Case {
  readonly name: string;
  readonly hand: Variant;
  readonly cborg: Variant;
  /** Throws if the two variants disagree. */
  readonly check: () => void;
}

function entries(count: number, firstIndex: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({ index: firstIndex + i, term: 3, type: EntryType.Normal, data: DATA, pid: `${LEADER}#${firstIndex + i}` }));
}

function appendFrame(to: string, run: readonly Entry[]): Frame {
  const first = run[0] as Entry;
  return { clusterId: CLUSTER_ID, message: { type: 'append', from: LEADER, to, term: 3, prevIndex: first.index - 1, prevTerm: 3, commit: first.index - 1, entries: run } };
}

/** encodeFrame's path without the hand-written writers: the wire array, checked, then cborg. */
function cborgEncodeFrame(frame: Frame): Uint8Array {
  const wire = toWire(frame);
  fromWire(wire);
  return encode(wire);
}

/** decodeFrame's path without the append reader. */
function cborgDecodeFrame(bytes: Uint8Array): Frame {
  return fromWire(decode(bytes, DECODE_OPTIONS));
}

function sameBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  if (Buffer.compare(a, b) !== 0) throw new Error(`bench codec: ${what}: the two variants gave different bytes`);
}

function sameFrame(a: Frame, b: Frame, what: string): void {
  // Entry data compared as bytes: the reader and cborg give different Uint8Array instances.
  const text = (f: Frame): string => JSON.stringify(f, (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v));
  if (text(a) !== text(b)) throw new Error(`bench codec: ${what}: the two variants decoded different frames`);
}

/**
 * A leader's encoding for one commit of `count` entries. Two runs alternate, so that each
 * operation encodes entries it has not encoded before (the member's EntryRecords, which its
 * storage and transport share, keeps the last run).
 */
function leaderAppendCase(count: number): Case {
  const member = new EntryRecords();
  const runs = [entries(count, 1000), entries(count, 1000 + count)];
  const frames = runs.map((run) => FOLLOWERS.map((to) => appendFrame(to, run)));
  const name = `leader encodes an append of ${count} (own write + 2 frames)`;
  return {
    name,
    hand: {
      run: (i) => {
        const k = i & 1;
        const records = member.encode(runs[k] as Entry[]);
        const [a, b] = frames[k] as Frame[];
        return records.length + encodeFrame(a as Frame, member).length + encodeFrame(b as Frame, member).length;
      },
    },
    cborg: {
      run: (i) => {
        const k = i & 1;
        const records = concatBytes((runs[k] as Entry[]).map((e) => encode(entryRecord(e))));
        const [a, b] = frames[k] as Frame[];
        return records.length + cborgEncodeFrame(a as Frame).length + cborgEncodeFrame(b as Frame).length;
      },
    },
    check: () => {
      for (let k = 0; k < 2; k++) {
        const run = runs[k] as Entry[];
        sameBytes(encodeEntryRecords(run), concatBytes(run.map((e) => encode(entryRecord(e)))), `${name}, records`);
        for (const f of frames[k] as Frame[]) sameBytes(encodeFrame(f), cborgEncodeFrame(f), name);
      }
    },
  };
}

function decodeCase(name: string, frame: Frame): Case {
  // Frames arrive as Buffers (see append-reader.ts).
  const bytes = Buffer.from(encodeFrame(frame));
  return {
    name,
    hand: { run: () => decodeFrame(bytes) },
    cborg: { run: () => cborgDecodeFrame(bytes) },
    check: () => sameFrame(decodeFrame(bytes), cborgDecodeFrame(bytes), name),
  };
}

function commandCase(): Case {
  const data = new Uint8Array(64).fill(0x61);
  const name = 'encode a user command of 64 bytes';
  return {
    name,
    hand: { run: () => encodeCommand({ kind: 'user', data }) },
    cborg: { run: () => encode([0, data]) },
    check: () => sameBytes(encodeCommand({ kind: 'user', data }), encode([0, data]), name),
  };
}

/** A fan-out entry as cborg alone writes it (runtime/commands.ts). */
const fanoutEntry = (command: FanoutCommand): Uint8Array => encode([KIND_FANOUT, command, FANOUT_VERSION]);

/** The cluster's time, as fan-out's commands carry it: fractional milliseconds. */
const AT_MS = 1_764_615_000_123.375;

function fanoutWriteCase(name: string, command: FanoutCommand): Case {
  return {
    name,
    hand: { run: () => encodeCommand({ kind: 'fanout', command }) },
    cborg: { run: () => fanoutEntry(command) },
    check: () => sameBytes(encodeCommand({ kind: 'fanout', command }), fanoutEntry(command), name),
  };
}

/** decodeEntry's path for a fan-out entry, and the same without the entry reader: cborg, then the command's check. */
function fanoutReadCase(name: string, command: FanoutCommand): Case {
  const bytes = fanoutEntry(command);
  const hand = (): unknown => decodeEntry(bytes, FANOUT_VERSION, SUPPORTED);
  const cborg = (): unknown => {
    const value = decode(bytes) as unknown[];
    return isFanoutCommand(value[1]) ? { kind: 'fanout', command: value[1] } : null;
  };
  const text = (v: unknown): string => JSON.stringify(v, (_, x: unknown) => (x instanceof Uint8Array ? Buffer.from(x).toString('hex') : x));
  return {
    name,
    hand: { run: hand },
    cborg: { run: cborg },
    check: () => {
      if (text(hand()) !== text(cborg())) throw new Error(`bench codec: ${name}: the two variants decoded different commands`);
    },
  };
}

function cases(): Case[] {
  const done: FanoutCommand = { type: 'done', member: LEADER, outcomes: Array.from({ length: 32 }, (_, i) => ({ id: 250_000 + i, token: 1_000_000 + i, error: null })), atMs: AT_MS };
  const emit: FanoutCommand = { type: 'emit', topic: 'thumbnails', items: Array.from({ length: 50 }, () => ({ data: new Uint8Array(100).fill(0x61), key: null })), origin: { job: 'nightly', slotMs: 1_764_615_000_000 }, atMs: AT_MS };
  const heartbeat: WireMessage = { type: 'heartbeat', from: LEADER, to: FOLLOWERS[0], term: 3, commit: 123_456, readCtx: 0, clock: { sentAt: 1_764_615_000_123.25, estimate: { offsetMs: 0.125, rttMs: 0.5, clusterOffsetMs: -0.25 } } };
  return [
    commandCase(),
    leaderAppendCase(1),
    leaderAppendCase(64),
    decodeCase('follower decodes an append of 1', appendFrame(FOLLOWERS[0], entries(1, 1000))),
    decodeCase('follower decodes an append of 64', appendFrame(FOLLOWERS[0], entries(64, 1000))),
    decodeCase('follower decodes a heartbeat (clock stamped)', { clusterId: CLUSTER_ID, message: heartbeat }),
    fanoutWriteCase('fan-out: write a done of 32 outcomes', done),
    fanoutReadCase('fan-out: read a done of 32 outcomes', done),
    fanoutReadCase('fan-out: read an emit of 50 items of 100 bytes', emit),
  ];
}

/** Runs `v` for at least `ms`, in batches; returns operations done and the time they took. */
function window(v: Variant, ms: number, sink: { value: unknown }): { ops: number; start: number; end: number } {
  const start = performance.now();
  let ops = 0;
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < BATCH; i++) sink.value = v.run(ops + i);
    ops += BATCH;
    now = performance.now();
  }
  return { ops, start, end: now };
}

export async function benchCodec(): Promise<CodecRow[]> {
  const gcs: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => gcs.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  const sink = { value: null as unknown };
  const rows: CodecRow[] = [];
  try {
    for (const c of cases()) {
      c.check();
      window(c.hand, WARMUP_MS, sink);
      window(c.cborg, WARMUP_MS, sink);
      const runs = { hand: [] as Array<ReturnType<typeof window>>, cborg: [] as Array<ReturnType<typeof window>> };
      for (let w = 0; w < WINDOWS; w++) {
        // Alternating which goes first, so neither always follows the other's garbage.
        const order = w % 2 === 0 ? (['hand', 'cborg'] as const) : (['cborg', 'hand'] as const);
        for (const k of order) runs[k].push(window(c[k], WINDOW_MS, sink));
      }
      // 'gc' entries are delivered after the fact: let them arrive before counting.
      await new Promise((r) => setTimeout(r, 20));
      const nsPerOp = (ws: ReadonlyArray<ReturnType<typeof window>>): number => median(ws.map((w) => ((w.end - w.start) * 1e6) / w.ops));
      const scavengesPer10k = (ws: ReadonlyArray<ReturnType<typeof window>>): number => {
        const ops = ws.reduce((a, w) => a + w.ops, 0);
        const n = gcs.filter((g) => isScavenge(g) && ws.some((w) => g.startTime >= w.start && g.startTime < w.end)).length;
        return (n / ops) * 10_000;
      };
      rows.push({ name: c.name, handNs: nsPerOp(runs.hand), cborgNs: nsPerOp(runs.cborg), handScavenges: scavengesPer10k(runs.hand), cborgScavenges: scavengesPer10k(runs.cborg) });
      gcs.length = 0;
    }
  } finally {
    observer.disconnect();
  }
  return rows;
}

/** A scavenge of the young generation. */
function isScavenge(entry: PerformanceEntry): boolean {
  return (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR;
}

export function codecRows(rows: readonly CodecRow[]): string[][] {
  return rows.map((r) => [
    r.name,
    `${fmt(r.handNs / 1000)} µs`,
    `${fmt(r.cborgNs / 1000)} µs`,
    `${fmt(r.cborgNs / r.handNs)}x`,
    `${fmt(r.handScavenges, 1)} / ${fmt(r.cborgScavenges, 1)}`,
  ]);
}

export const CODEC_HEADERS = ['per operation', 'hand-written', 'cborg alone', 'ratio (> 1: hand-written faster)', 'scavenges per 10k ops (hand / cborg)'];
