/**
 * The process's stop (docs/OPERATIONS.md, "Stopping and restarting"). The entry
 * (scripts/server.ts) calls `requestStop()` on the first SIGTERM/SIGINT and, once the grace
 * (SHUTDOWN_GRACE_SECONDS) is over, `abandonWork()`; lib/ only looks:
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
 * One state per process: a signal stops the process, whatever services it built.
 */

/** Thrown into work that was still running when the grace ended: its transaction rolls back. */
export class WorkAbandoned extends Error {
  constructor() {
    super("abandoned: the process is stopping and its grace period is over");
    this.name = "WorkAbandoned";
  }
}

const stop = new AbortController();
const abandon = new AbortController();
const inFlight = new Set<Promise<unknown>>();
const held = new Set<{ what: string; release: () => Promise<unknown> }>();

/** Aborted on the first SIGTERM/SIGINT: take no new work. */
export const stopSignal: AbortSignal = stop.signal;
/** Aborted when the grace is over: what still runs is given up (its transaction rolled back). */
export const abandonSignal: AbortSignal = abandon.signal;

export function stopRequested(): boolean {
  return stop.signal.aborted;
}

export function requestStop(): void {
  stop.abort();
}

export function abandonWork(): void {
  stop.abort();
  abandon.abort(new WorkAbandoned());
}

/** Keeps `work` in the set the stopping process waits for (until the grace ends); returns it. */
export function trackWork<T>(work: Promise<T>): Promise<T> {
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  inFlight.add(settled);
  void settled.then(() => inFlight.delete(settled));
  return work;
}

/** Resolves once every tracked piece of work has finished (including work tracked meanwhile). */
export async function workSettled(): Promise<void> {
  while (inFlight.size) await Promise.all([...inFlight]);
}

/** Pieces of tracked work still running. */
export function workInFlight(): number {
  return inFlight.size;
}

/**
 * Registers something this process holds in the database and the statement giving it back
 * (guarded by this process's holder id: it must never release another replica's claim).
 * Returns the function to call once it was given back by the work itself (or must no longer
 * be given back: a purchase item whose provider call has started).
 */
export function holdUntilReleased(what: string, release: () => Promise<unknown>): () => void {
  const entry = { what, release };
  held.add(entry);
  return () => void held.delete(entry);
}

/**
 * Gives back everything still registered, each within `timeoutMs` (the pool may be stuck on a
 * statement of abandoned work); returns what was released and what could not be.
 */
export async function releaseHeld(timeoutMs: number): Promise<{ released: string[]; failed: string[] }> {
  const entries = [...held];
  held.clear();
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
export function abandonable<T>(source: AsyncIterable<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]();
      const giveUp = () => void Promise.resolve(it.return?.()).catch(() => {});
      return {
        next() {
          if (abandon.signal.aborted) {
            giveUp();
            return Promise.reject(new WorkAbandoned());
          }
          // A listener per read, removed when the read ends: nothing accumulates over a long import.
          return new Promise<IteratorResult<T>>((resolve, reject) => {
            const onAbandon = () => {
              giveUp();
              reject(new WorkAbandoned());
            };
            abandon.signal.addEventListener("abort", onAbandon, { once: true });
            it.next().then(
              (r) => {
                abandon.signal.removeEventListener("abort", onAbandon);
                resolve(r);
              },
              (e) => {
                abandon.signal.removeEventListener("abort", onAbandon);
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
