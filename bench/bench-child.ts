/**
 * A process the bench forks and asks things over IPC, as test/fixtures/process-cluster.ts asks
 * members: a request is `{ id, cmd, … }`, answered `{ id, ok, result | error }`; anything the
 * child sends with an `event` field is kept in `events`. BullMQ's workers (bullmq-worker.ts) and
 * the scraper (scraper-child.ts) are such processes; `answerRequests` is their side.
 */
import { fork, type ChildProcess } from 'node:child_process';

interface Reply {
  readonly id?: number;
  readonly ok?: boolean;
  readonly result?: unknown;
  readonly error?: { readonly message: string };
  readonly event?: string;
  readonly [key: string]: unknown;
}

/** A request as the parent makes it: the child's request type without its id, which the parent adds. */
export type Ask<R> = R extends unknown ? Omit<R, 'id'> : never;

export class BenchChild<R extends { readonly id: number; readonly cmd: string }> {
  readonly child: ChildProcess;
  readonly events: Reply[] = [];
  readonly #name: string;
  readonly #timeoutMs: number;
  readonly #waiting = new Map<number, (reply: Reply) => void>();
  #nextId = 0;

  /** Forks `script` with `args`; `name` says whose request failed; each request is bounded by `timeoutMs`. */
  constructor(script: string, args: readonly string[], name: string, timeoutMs: number) {
    this.#name = name;
    this.#timeoutMs = timeoutMs;
    this.child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (raw) => {
      const msg = raw as Reply;
      if (msg.event !== undefined) this.events.push(msg);
      else if (msg.id !== undefined) this.#waiting.get(msg.id)?.(msg);
    });
    // A child that died answers nothing more: what waits on it fails now, not at its timeout. A
    // send that fails once the channel closed is the same news (and must not crash the bench).
    const gone = (why: string): void => {
      for (const settle of [...this.#waiting.values()]) settle({ ok: false, error: { message: why } });
    };
    this.child.on('exit', (code, signal) => gone(`the process exited (${signal ?? code})`));
    this.child.on('error', (error) => gone(error.message));
  }

  request<T>(req: Ask<R>): Promise<T> {
    const id = ++this.#nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(new Error(`${this.#name}: ${req.cmd} timed out`));
      }, this.#timeoutMs);
      const settle = (reply: Reply): void => {
        clearTimeout(timer);
        this.#waiting.delete(id);
        if (reply.ok === true) resolve(reply.result as T);
        else reject(new Error(`${this.#name}: ${req.cmd}: ${reply.error?.message ?? 'failed'}`));
      };
      this.#waiting.set(id, settle);
      if (!this.child.connected) settle({ ok: false, error: { message: 'the process is gone' } });
      else this.child.send({ id, ...req }, (error) => (error === null ? undefined : settle({ ok: false, error: { message: error.message } })));
    });
  }

  /** Resolves once the child sent its `ready` event; rejects if it exits first, or after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void> {
    if (this.events.some((e) => e.event === 'ready')) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (error?: Error): void => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onMessage = (raw: unknown): void => {
        if ((raw as Reply).event === 'ready') done();
      };
      const onExit = (code: number | null, signal: string | null): void => done(new Error(`${this.#name}: the process exited before it was ready (${signal ?? code})`));
      const timer = setTimeout(() => done(new Error(`${this.#name}: not ready within ${timeoutMs} ms`)), timeoutMs);
      this.child.on('message', onMessage);
      this.child.on('exit', onExit);
    });
  }

  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGKILL');
    await exited;
  }
}

/** Sends `msg` to the parent (an event, or an answer). */
export function sendToParent(msg: unknown): void {
  process.send?.(msg);
}

/** The child's side: answers each request with what `handle` resolves to, or the error it rejects with. */
export function answerRequests<R extends { readonly id: number }>(handle: (req: R) => Promise<unknown>): void {
  process.on('message', (raw) => {
    const req = raw as R;
    handle(req).then(
      (result) => sendToParent({ id: req.id, ok: true, result }),
      (error: unknown) => sendToParent({ id: req.id, ok: false, error: { message: error instanceof Error ? error.message : String(error) } }),
    );
  });
}
