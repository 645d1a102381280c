/** Walks an error and its causes (drizzle wraps driver errors) looking for a property. */
function causes(err: unknown): any[] {
  const out: any[] = [];
  let cur: any = err;
  for (let i = 0; cur && i < 6; i++) {
    out.push(cur);
    cur = cur.cause;
  }
  return out;
}

/** SQLSTATE of a PostgreSQL error (e.g. `23505` unique violation), or undefined. */
export function pgErrorCode(err: unknown): string | undefined {
  for (const e of causes(err)) if (typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  return undefined;
}

/** The constraint a PostgreSQL error names (postgres.js `constraint_name`, PGlite `constraint`), or undefined. */
export function pgConstraintName(err: unknown): string | undefined {
  for (const e of causes(err)) {
    const name = e?.constraint_name ?? e?.constraint;
    if (typeof name === "string") return name;
  }
  return undefined;
}

/** A streamed query produced no first batch within its time limit; it was cancelled at the server. */
export class QueryTimeoutError extends Error {
  readonly code = "QUERY_TIMEOUT";
  constructor(readonly timeoutMs: number) {
    super(`the query produced no rows within ${timeoutMs} ms and was cancelled`);
    this.name = "QueryTimeoutError";
  }
}

/** A streamed query whose reader went away (StreamOptions.signal) was cancelled at the server. */
export class QueryAbortedError extends Error {
  constructor() {
    super("the reader went away; the query was cancelled");
    this.name = "QueryAbortedError";
  }
}

/**
 * The database is known unreachable (lib/db/health.ts): an operation in flight when that was
 * found, or a new one while it lasts, fails at once instead of waiting for a timeout (503).
 */
export class DatabaseUnreachableError extends Error {
  readonly code = "DATABASE_UNREACHABLE";
  constructor(reason = "the database server is unreachable") {
    super(reason);
    this.name = "DatabaseUnreachableError";
  }
}

/**
 * The connection an operation was waiting on is dead while the server answers new connections
 * (a failover that moved the address, a middlebox that lost its state): a read is retried once.
 */
export class ConnectionLostError extends Error {
  readonly code = "CONNECTION_LOST";
  constructor(reason = "the database connection was lost") {
    super(reason);
    this.name = "ConnectionLostError";
  }
}

/**
 * A statement with no answer long after the server's statement_timeout would have ended it: the
 * caller is answered (503) and the statement cancelled through the driver.
 */
export class StatementDeadlineError extends Error {
  readonly code = "STATEMENT_DEADLINE";
  constructor(readonly deadlineMs: number) {
    super(`the database did not answer within ${deadlineMs} ms`);
    this.name = "StatementDeadlineError";
  }
}

const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN",
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT",
  "DATABASE_UNREACHABLE", "CONNECTION_LOST", "STATEMENT_DEADLINE",
  "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006",
]);

/** True when the error means the database cannot be reached (answer 503, not 500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (const e of causes(err)) {
    if (typeof e?.code === "string" && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e?.errno === "string" && UNAVAILABLE_CODES.has(e.errno)) return true;
    const msg = typeof e?.message === "string" ? e.message : "";
    if (/PGlite is closed|database is closed|Connection terminated|connect ECONNREFUSED|write CONNECTION_CLOSED/i.test(msg)) return true;
  }
  return false;
}

/**
 * The connection a statement was sent on died under it (closed, reset, its session terminated
 * by the server) — as opposed to the server being unreachable for new connections. Only such a
 * failure is worth one retry on another connection, and only for a statement that is safe to
 * run twice (see lib/db/postgres.ts).
 */
const LOST_CODES = new Set(["CONNECTION_CLOSED", "ECONNRESET", "EPIPE", "CONNECTION_LOST", "57P01", "57P02"]);
export function isConnectionLost(err: unknown): boolean {
  for (const e of causes(err)) {
    if (typeof e?.code === "string" && LOST_CODES.has(e.code)) return true;
    if (typeof e?.errno === "string" && LOST_CODES.has(e.errno)) return true;
  }
  return false;
}

/**
 * Runs `run` until the database answers it: again every `everyMs` while it fails as unavailable
 * (an outage), for up to `forMs`; any other failure, or the last one, is thrown. For work that
 * must happen once the database is back (a request's commit outcome, a key's release), not for
 * a request waiting on its answer.
 */
export async function whenDatabaseAnswers<T>(run: () => Promise<T>, opts: { everyMs: number; forMs: number }): Promise<T> {
  const until = performance.now() + opts.forMs;
  for (;;) {
    try {
      return await run();
    } catch (e) {
      if (!isDatabaseUnavailable(e) || performance.now() + opts.everyMs > until) throw e;
      await new Promise((r) => (setTimeout(r, opts.everyMs) as any).unref?.());
    }
  }
}
