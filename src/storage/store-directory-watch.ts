import { stat } from 'node:fs/promises';

/**
 * How often an open store looks whether its directory is still the one it opened, besides the
 * look beside each synced write (LevelLogStorage.writeBatch). LevelDB writes on through the
 * files it holds open after their directory was removed (an operator's `rm -rf`, a volume
 * unmounted), and syncs them: without the look, a member acknowledged writes that no disk would
 * give back, for as long as no new file was needed (thousands of entries).
 */
export const STORE_DIRECTORY_CHECK_MS = 1000;

/**
 * A synced write stands on a look at the directory begun at most this long before it (or in
 * flight as it starts): a look costs a round trip through libuv's pool, several times a synced
 * write's own main-thread cost when taken for every one of thousands a second. Whatever a member
 * wrote before its directory was removed is lost with it, acknowledged or not; what the look
 * bounds is how long after that the member goes on acknowledging, which this keeps short.
 */
export const STORE_DIRECTORY_LOOK_FRESH_MS = 20;

/**
 * Looks every STORE_DIRECTORY_CHECK_MS whether a store's directory is still there, the same one
 * (device and inode) as when it was opened; `gone` then says why not, and stays so. Its timer
 * keeps no process alive.
 */
export class StoreDirectoryWatch {
  readonly #path: string;
  readonly #dev: number;
  readonly #ino: number;
  #timer: NodeJS.Timeout | null = null;
  #gone: string | null = null;
  /** The latest look, and when (performance.now()) it began. */
  #lastLook: Promise<void> | null = null;
  #lastLookAtMs = Number.NEGATIVE_INFINITY;

  private constructor(path: string, dev: number, ino: number) {
    this.#path = path;
    this.#dev = dev;
    this.#ino = ino;
  }

  /** Watches `path`, as it is now. */
  static async start(path: string, everyMs = STORE_DIRECTORY_CHECK_MS): Promise<StoreDirectoryWatch> {
    const s = await stat(path);
    const watch = new StoreDirectoryWatch(path, s.dev, s.ino);
    watch.#timer = setInterval(() => void watch.look(), everyMs).unref();
    return watch;
  }

  /** Why the directory is no longer the one opened, or null while it is. */
  get gone(): string | null {
    return this.#gone;
  }

  /**
   * A look begun at most STORE_DIRECTORY_LOOK_FRESH_MS ago, in flight or done, or a new one: what
   * a synced write waits for beside it.
   */
  lookFresh(): Promise<void> {
    const nowMs = performance.now();
    if (this.#lastLook !== null && nowMs - this.#lastLookAtMs <= STORE_DIRECTORY_LOOK_FRESH_MS) return this.#lastLook;
    this.#lastLookAtMs = nowMs;
    this.#lastLook = this.look();
    return this.#lastLook;
  }

  /** Looks once (the timer's look, which a test may call). */
  async look(): Promise<void> {
    if (this.#gone !== null) return;
    try {
      const s = await stat(this.#path);
      if (s.dev !== this.#dev || s.ino !== this.#ino) this.#gone = 'the store directory was replaced by another while the member ran';
    } catch (error) {
      this.#gone = `the store directory was removed while the member ran (${error instanceof Error ? error.message : String(error)})`;
    }
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
