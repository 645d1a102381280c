/**
 * The service's stop (docs/OPERATIONS.md, "Stopping and restarting"): one `Shutdown` per Services
 * (`s.shutdown`). The entry (scripts/server.ts) calls `requestStop()` on the first SIGTERM/SIGINT
 * and, once the grace (SHUTDOWN_GRACE_SECONDS) is over, `abandonWork()`; lib/ only looks:
 *
 * - Work loops (jobs, a sync started by a request, a purchase bought after an approval) ask
 *   `stopRequested()` before they claim their next item and take none once it is true; what they
 *   are doing goes on to its next safe point (a period's import commits, a send is recorded).
 * - A long piece of work that cannot reach a safe point in time reads its input through
 *   `abandonable()`: at the grace's end its next read throws `WorkAbandoned`, so its transaction
 *   rolls back instead of being cut by the pool's close.
 * - What a process holds in the database while it works (a claim, a lease) is registered with
 *   `holdUntilReleased()` together with the statement giving it back; whatever is still
 *   registered when the work is over or abandoned is released by `releaseHeld()`, so another
 *   replica takes it at once instead of after the lease.
 * - Background work started outside the jobs (a request's "sync now") is `trackWork()`ed, and
 *   `workSettled()` tells the entry when everything has finished.
 *
 * Per Services, not per process: a test stops one replica's Services while the others in the same
 * process go on.
 */

/** Thrown into work that was still running when the grace ended: its transaction rolls back. */
export class WorkAbandoned extends Error {
  constructor() {
    super("abandoned: the process is stopping and its grace period is over");
    this.name = "WorkAbandoned";
  }
}

export class Shutdown {
  readonly #stop = new AbortController();
  readonly #abandon = new AbortController();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #held = new Set<{ what: string; release: () => Promise<unknown> }>();

  /** Aborted on the first SIGTERM/SIGINT: take no new work. */
  get stopSignal(): AbortSignal {
    return this.#stop.signal;
  }

  /** True once the grace is over: what still runs is given up (its transaction rolled back). */
  get abandoned(): boolean {
    return this.#abandon.signal.aborted;
  }

  stopRequested(): boolean {
    return this.#stop.signal.aborted;
  }

  requestStop(): void {
    this.#stop.abort();
  }

  abandonWork(): void {
    this.#stop.abort();
    this.#abandon.abort(new WorkAbandoned());
  }

  /** Keeps `work` in the set the stopping process waits for (until the grace ends); returns it. */
  trackWork<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.#inFlight.add(settled);
    void settled.then(() => this.#inFlight.delete(settled));
    return work;
  }

  /** Resolves once every tracked piece of work has finished (including work tracked meanwhile). */
  async workSettled(): Promise<void> {
    while (this.#inFlight.size) await Promise.all([...this.#inFlight]);
  }

  /** Pieces of tracked work still running. */
  workInFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Registers something this process holds in the database and the statement giving it back
   * (guarded by this process's holder id: it must never release another replica's claim).
   * Returns the function to call once it was given back by the work itself (or must no longer
   * be given back: a purchase item whose provider call has started).
   */
  holdUntilReleased(what: string, release: () => Promise<unknown>): () => void {
    const entry = { what, release };
    this.#held.add(entry);
    return () => void this.#held.delete(entry);
  }

  /**
   * Gives back everything still registered, each within `timeoutMs` (the pool may be stuck on a
   * statement of abandoned work); returns what was released and what could not be.
   */
  async releaseHeld(timeoutMs: number): Promise<{ released: string[]; failed: string[] }> {
    const entries = [...this.#held];
    this.#held.clear();
    const out = { released: [] as string[], failed: [] as string[] };
    await Promise.all(
      entries.map(async (e) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("timed out")), timeoutMs)));
        try {
          await Promise.race([e.release(), late]);
          out.released.push(e.what);
        } catch {
          out.failed.push(e.what);
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return out;
  }

  /**
   * `source` read until the grace ends: a pending read is then interrupted (a stalled download
   * must not keep a transaction open until the pool is cut) and `WorkAbandoned` thrown.
   */
  abandonable<T>(source: AsyncIterable<T>): AsyncIterable<T> {
    const abandon = this.#abandon.signal;
    return {
      [Symbol.asyncIterator]() {
        const it = source[Symbol.asyncIterator]();
        const giveUp = () => void Promise.resolve(it.return?.()).catch(() => {});
        return {
          next() {
            if (abandon.aborted) {
              giveUp();
              return Promise.reject(new WorkAbandoned());
            }
            // A listener per read, removed when the read ends: nothing accumulates over a long import.
            return new Promise<IteratorResult<T>>((resolve, reject) => {
              const onAbandon = () => {
                giveUp();
                reject(new WorkAbandoned());
              };
              abandon.addEventListener("abort", onAbandon, { once: true });
              it.next().then(
                (r) => {
                  abandon.removeEventListener("abort", onAbandon);
                  resolve(r);
                },
                (e) => {
                  abandon.removeEventListener("abort", onAbandon);
                  reject(e);
                },
              );
            });
          },
          async return(value?: unknown) {
            await Promise.resolve(it.return?.(value as never)).catch(() => {});
            return { done: true, value: value as never };
          },
        };
      },
    };
  }
}
