import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What the database layer may know of the request it works for (set by the HTTP app around a
 * request that asks for exactly-once writes: a POST with an `Idempotency-Key`).
 *
 * The case it exists for: a transaction's COMMIT is sent and the connection fails before the
 * answer — the write may or may not have committed. The request's own row in another table
 * (its idempotency claim) is marked as the transaction's last statement, so after the outage
 * one read tells which; the request then finishes as it really went (its answer stored for the
 * retry) while the client was answered 503 at once.
 */
export interface CommitWitness {
  /** Runs, as a transaction's last statement, the write that records `marker`. */
  record(run: (text: string, params: unknown[]) => PromiseLike<unknown>, marker: string): PromiseLike<unknown>;
  /** Whether `marker` was recorded: the transaction that carried it committed. */
  committed(marker: string): Promise<boolean>;
}

export interface RequestScope {
  /** Set once the request holds its idempotency claim; cleared for the claim's own statements. */
  witness?: CommitWitness;
  /** Answers the client 503 now, while the request waits for the outcome of its commit. */
  answerNow?: () => void;
}

const storage = new AsyncLocalStorage<RequestScope>();

export function runInRequestScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}

export function currentRequestScope(): RequestScope | undefined {
  return storage.getStore();
}

/** Runs `fn` (work a request starts but does not wait for) outside any request's scope. */
export function outsideRequestScope<T>(fn: () => T): T {
  return storage.exit(fn);
}
