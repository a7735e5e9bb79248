import type { ClusterState } from '../api/state.js';

/** The content type of every JSON answer. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

type Job = ClusterState['jobs'][number];
type Jobs = ClusterState['jobs'];

/**
 * Jobs to a block of a list's bytes: a change of one job writes its block again, not the list.
 * Small enough that a block is quick to write, large enough that a list of the most jobs a
 * cluster holds is a few dozen blocks for the socket to take at once.
 */
export const STATE_JSON_BLOCK_JOBS = 128;

/** A block of a list: the views it was written from (the list's, in order) and their JSON, encoded. */
interface Block {
  readonly views: readonly Job[];
  readonly bytes: Uint8Array;
}

const encoder = new TextEncoder();
const OPEN = encoder.encode('[');
const CLOSE = encoder.encode(']');

/**
 * `state()` and its jobs as JSON, in pieces of bytes that an answer hands to the socket as they
 * are: with thousands of jobs, the jobs are nearly all of the text, and writing it anew, or
 * encoding it, for each answer held the event loop. `state()` hands out a job's frozen view again
 * until the job changes (api/job-states.ts), and the list itself again while nothing changed,
 * so each job's text is kept beside its view (weakly: a view no longer handed out takes its text
 * with it), and the list's bytes in blocks of STATE_JSON_BLOCK_JOBS jobs, each kept while its
 * views are the same ones. What is kept is the last list's, bounded by the jobs a cluster holds.
 */
export class StateJson {
  readonly #jobs = new WeakMap<Job, string>();
  /** The last list written, and its bytes: the list again costs nothing, a list changed its blocks changed. */
  #list: Jobs | null = null;
  #blocks: Block[] = [];
  #pieces: readonly Uint8Array[] = [OPEN, CLOSE];

  /** The state as JSON: as JSON.stringify writes it, its jobs last. */
  state(state: ClusterState): readonly Uint8Array[] {
    const { jobs, ...rest } = state;
    const head = JSON.stringify(rest);
    return [encoder.encode(`${head.slice(0, -1)},"jobs":`), ...this.jobs(jobs), CLOSE_OBJECT];
  }

  /** A list of jobs as a JSON array. */
  jobs(list: Jobs): readonly Uint8Array[] {
    if (list === this.#list) return this.#pieces;
    const blocks: Block[] = [];
    for (let i = 0, n = blockCount(list); i < n; i++) blocks.push(this.#blockAt(list, i));
    this.#list = list;
    this.#blocks = blocks;
    this.#pieces = [OPEN, ...blocks.map((b) => b.bytes), CLOSE];
    return this.#pieces;
  }

  /**
   * Writes the blocks of `list` from block `from` on that are not kept already, at most `count`
   * of them, so that `jobs(list)` finds them written (state-warmer.ts writes a list's blocks a
   * few at a time, between other work, rather than have an answer write them all at once).
   * Gives the bytes of the blocks it wrote, and the block to go on from (null past the last).
   */
  warm(list: Jobs, from: number, count: number): { readonly written: readonly Uint8Array[]; readonly next: number | null } {
    const blocks = blockCount(list);
    const written: Uint8Array[] = [];
    let i = from;
    for (; i < blocks && written.length < count; i++) {
      const kept = this.#blocks[i];
      const block = this.#blockAt(list, i);
      if (block === kept) continue;
      // In order from 0 (the warmer's way), or in place of a block kept: the list has no holes.
      if (i <= this.#blocks.length) this.#blocks[i] = block;
      written.push(block.bytes);
    }
    return { written, next: i < blocks ? i : null };
  }

  /** One job's view as JSON. */
  job(job: Job): string {
    let text = this.#jobs.get(job);
    if (text === undefined) {
      text = JSON.stringify(job);
      this.#jobs.set(job, text);
    }
    return text;
  }

  /** Block `i` of `list`: the one kept there while it holds the same views, else one written anew (not kept). */
  #blockAt(list: Jobs, i: number): Block {
    const from = i * STATE_JSON_BLOCK_JOBS;
    const kept = this.#blocks[i];
    if (kept !== undefined && sameViews(kept.views, list, from)) return kept;
    const views = list.slice(from, from + STATE_JSON_BLOCK_JOBS);
    return { views, bytes: this.#block(views, i === 0) };
  }

  /** The jobs' texts, a comma between them, and before them unless `first`. */
  #block(views: readonly Job[], first: boolean): Uint8Array {
    const text = views.map((view) => this.job(view)).join(',');
    return encoder.encode(first ? text : `,${text}`);
  }
}

const CLOSE_OBJECT = encoder.encode('}');

/** How many blocks `list` is written in. */
function blockCount(list: Jobs): number {
  return Math.ceil(list.length / STATE_JSON_BLOCK_JOBS);
}

/** Whether `views` are the views of `list` from `from` on, the same ones, and as many as the block there has. */
function sameViews(views: readonly Job[], list: Jobs, from: number): boolean {
  if (views.length !== Math.min(STATE_JSON_BLOCK_JOBS, list.length - from)) return false;
  for (let i = 0; i < views.length; i++) if (views[i] !== list[from + i]) return false;
  return true;
}

/** The pieces' bytes in all, as an answer's content-length. */
export function byteLength(pieces: readonly Uint8Array[]): number {
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  return length;
}
