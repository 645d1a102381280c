import type { PGlite } from "@electric-sql/pglite";

export interface YieldingClient {
  /** The PGlite client whose statements let the event loop take turns (drop-in for PGlite). */
  client: PGlite;
  /** Statements or transactions started through `client` and not finished yet. */
  inFlight(): number;
}

/**
 * PGlite runs every statement synchronously on this thread and resolves its promise at once, so
 * a chain of statements (a demo seeder, a catalog import, a job) is one long run of microtasks:
 * the event loop never polls its sockets meanwhile, and the HTTP server neither accepts nor
 * answers anything (a fresh start's /readyz waited for the whole demo seed). The wrapped client
 * lets the event loop take a turn before a statement once statements have run back to back for
 * `sliceMs` without one. A short request never pays for it: the clock restarts at every turn the
 * event loop takes by itself (seen by one setImmediate per turn).
 */
export function yieldingClient(client: PGlite, sliceMs = 10): YieldingClient {
  let runStart = performance.now();
  let probing = false;
  let inFlight = 0;
  const turnSeen = () => {
    probing = false;
    runStart = performance.now();
  };
  const beforeStatement = async () => {
    if (!probing) {
      probing = true;
      setImmediate(turnSeen);
    }
    if (performance.now() - runStart >= sliceMs) {
      // setImmediate: the event loop polls its sockets first (≈ 0.05 ms; setTimeout(0) costs ≈ 1 ms).
      await new Promise<void>((resolve) => setImmediate(resolve));
      runStart = performance.now();
    }
  };
  const wrap = <T extends object>(target: T, top: boolean): T => {
    const cache = new Map<PropertyKey, unknown>();
    const track = async <R>(run: () => Promise<R>): Promise<R> => {
      if (!top) return run();
      inFlight++;
      try {
        return await run();
      } finally {
        inFlight--;
      }
    };
    return new Proxy(target, {
      get(t, prop) {
        const cached = cache.get(prop);
        if (cached) return cached;
        const v = Reflect.get(t, prop, t) as unknown;
        if (typeof v !== "function" || prop === "constructor") return v;
        let f: unknown;
        if (prop === "query" || prop === "exec" || prop === "sql") {
          f = (...args: unknown[]) =>
            track(async () => {
              await beforeStatement();
              return (v as (...a: unknown[]) => Promise<unknown>).apply(t, args);
            });
        } else if (prop === "transaction") {
          f = (fn: (tx: object) => unknown) =>
            track(async () => {
              await beforeStatement();
              return (v as (f: (tx: object) => unknown) => Promise<unknown>).call(t, (tx: object) => fn(wrap(tx, false)));
            });
        } else f = (v as (...a: unknown[]) => unknown).bind(t);
        cache.set(prop, f);
        return f;
      },
    });
  };
  return { client: wrap(client, true), inFlight: () => inFlight };
}
