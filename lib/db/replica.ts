/**
 * Read replicas (DATABASE_READ_URL): a second, read-only PostgreSQL handle for heavy reads
 * (allocation reports), and the rule that decides, read by read, whether the replica may answer.
 *
 * The rule (docs/OPERATIONS.md, "Read replicas"): a read goes to the replica only when the
 * replica has caught up with what matters for it. The caller names "what matters" as a small
 * *freshness token* query (for a report month: the state of its billing periods — closed,
 * frozen_at); `readConsistent` runs it on the primary and on the replica and picks the replica
 * only when both answers are equal, else (after waiting briefly for the replica) the primary.
 * A physical replica applies transactions in commit order and only moves forward, so once its
 * token equals the primary's it shows everything that was committed with that token (a freeze
 * writes the snapshot rows and frozen_at in one transaction): a report is never older than the
 * primary's frozen snapshot. An unreachable or slow replica means the primary, never an error.
 *
 * Nothing here knows about reports or a driver: only `DatabaseHandle.query`.
 */
import { Buffer } from "node:buffer";
import type { DatabaseHandle } from "./types.ts";
import { createLogger, parseLogLevel, type Logger } from "../log.ts";
import { openPostgres, type PostgresSettings } from "./postgres.ts";
import { pgErrorCode } from "./errors.ts";

/** Refused configuration of the read replica (a startup error with an actionable message). */
export class ReadReplicaConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReadReplicaConfigError";
  }
}

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/**
 * Checks DATABASE_READ_URL against DATABASE_URL before anything is opened: the read URL must be
 * postgres://…, and the primary must be PostgreSQL too (PGlite, in-process, has no replicas).
 */
export function checkReadReplicaUrls(primaryUrl: string | undefined, readUrl: string | undefined): void {
  if (!readUrl) return;
  if (!POSTGRES_URL.test(readUrl)) {
    throw new ReadReplicaConfigError("DATABASE_READ_URL must be a postgres://… (or postgresql://…) URL of a read replica of the DATABASE_URL server.");
  }
  if (!primaryUrl || !POSTGRES_URL.test(primaryUrl)) {
    throw new ReadReplicaConfigError(
      "DATABASE_READ_URL is set but DATABASE_URL is not a PostgreSQL server: the embedded database (PGlite) has no read replicas. Set DATABASE_URL=postgres://… (the primary) or unset DATABASE_READ_URL.",
    );
  }
}

/**
 * The URL with `default_transaction_read_only=on` as a session startup parameter (postgres.js
 * sends unknown query-string keys as startup parameters; the last occurrence wins, so a
 * `…=off` already in the URL cannot undo it).
 */
export function readOnlyUrl(url: string): string {
  const hash = url.indexOf("#");
  const base = hash >= 0 ? url.slice(0, hash) : url;
  return `${base}${base.includes("?") ? "&" : "?"}default_transaction_read_only=on`;
}

/** A logger whose lines say they are about the read replica. */
function replicaLogger(log: Logger): Logger {
  const f = (fields?: Record<string, unknown>) => ({ database: "read_replica", ...fields });
  return {
    debug: (m, x) => log.debug(m, f(x)),
    info: (m, x) => log.info(m, f(x)),
    warn: (m, x) => log.warn(m, f(x)),
    error: (m, x) => log.error(m, f(x)),
  };
}

interface ReplicaState {
  log: Logger;
  /** The replica failed (error or timeout): skipped until `retryAt`. */
  down: boolean;
  retryAt: number;
}
const states = new WeakMap<DatabaseHandle, ReplicaState>();

function stateOf(replica: DatabaseHandle, log?: Logger): ReplicaState {
  let s = states.get(replica);
  if (!s) {
    s = { log: log ?? replicaLogger(createLogger(parseLogLevel(process.env.LOG_LEVEL))), down: false, retryAt: 0 };
    states.set(replica, s);
  } else if (log) s.log = log;
  return s;
}

/**
 * Opens the read replica: a postgres.js pool watched by its own health check, no migrations
 * (the primary's arrive by replication), every session `default_transaction_read_only = on`
 * (a write sent to it fails with SQLSTATE 25006 even if the URL points at a writable server).
 * Opening does not connect: a replica that is down at start only means reads go to the primary.
 */
export async function openReadReplica(url: string, opts: { log?: Logger; settings?: Partial<PostgresSettings> } = {}): Promise<DatabaseHandle> {
  const log = replicaLogger(opts.log ?? createLogger(parseLogLevel(process.env.LOG_LEVEL)));
  const handle = await openPostgres(readOnlyUrl(url), { log, settings: opts.settings, readOnly: true });
  handle.description = `${handle.description} (read replica)`;
  stateOf(handle, log);
  return handle;
}

/** The handle report reads may use: the primary's read replica when it has one, else the primary. */
export function readerOf(primary: DatabaseHandle): DatabaseHandle {
  const r = (primary as { replica?: unknown }).replica;
  return r && typeof r === "object" && typeof (r as DatabaseHandle).query === "function" ? (r as DatabaseHandle) : primary;
}

export interface ReadConsistentOptions {
  /**
   * When the replica's token differs from the primary's, keep re-reading it for up to this long
   * (every `pollMs`) before giving up and reading from the primary (default 50 ms; 0: no wait).
   */
  catchUpMs?: number;
  /** Pause between two re-reads while waiting for the replica (default 10 ms). */
  pollMs?: number;
  /** A replica token query not answered within this counts as a failure (default 500 ms). */
  replicaTimeoutMs?: number;
  /** After a failure the replica is not asked again for this long: reads go straight to the primary (default 5000 ms). */
  retryAfterMs?: number;
  /** Where "replica unreachable" / "replica back" go (default: the logger the replica was opened with). */
  log?: Logger;
}

/** Rows as one comparable string (dates, bigints and buffers included). */
function canonical(rows: unknown[]): string {
  return JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString("base64") : v));
}

class ReplicaTimeout extends Error {
  readonly code = "REPLICA_TIMEOUT";
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  p.catch(() => {}); // an answer (or failure) arriving after the timeout is dropped
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ReplicaTimeout(`no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Which handle a read should use: `replica` when its answer to `tokenSql` (with `params`) equals
 * the primary's — now, or within `catchUpMs` — else `primary`. `replica === primary` (no replica
 * configured, PGlite) returns the primary without a query. The primary's token query runs on
 * the primary and its errors are the caller's (a primary outage is a 503 as usual); any replica
 * failure (unreachable, timeout, an error such as a missing table) falls back to the primary
 * with one warning per outage and an info line when the replica answers again.
 *
 * The token must be small and cheap (an indexed lookup of a few rows) and change whenever the
 * data the read must not miss changes (for reports: `closed`/`frozen_at` of the month's
 * billing periods). Data that does not move the token (late rows of an open month) may be read
 * a little behind from the replica.
 */
export async function readConsistent(primary: DatabaseHandle, replica: DatabaseHandle, tokenSql: string, params: unknown[] = [], opts: ReadConsistentOptions = {}): Promise<DatabaseHandle> {
  if (replica === primary) return primary;
  const catchUpMs = opts.catchUpMs ?? 50;
  const pollMs = Math.max(1, opts.pollMs ?? 10);
  const timeoutMs = opts.replicaTimeoutMs ?? 500;
  const retryAfterMs = opts.retryAfterMs ?? 5000;
  const state = stateOf(replica, opts.log);
  if (state.down && Date.now() < state.retryAt) return primary;
  const onReplica = () => withTimeout(replica.query(tokenSql, params), timeoutMs);
  const replicaAnswer = onReplica().then(
    (rows) => ({ rows }),
    (error: unknown) => ({ error }),
  );
  const expected = canonical(await primary.query(tokenSql, params));
  let answer: { rows?: unknown[]; error?: unknown } = await replicaAnswer;
  const deadline = performance.now() + catchUpMs;
  for (;;) {
    if (answer.error !== undefined) {
      if (!state.down) {
        const e = answer.error as { code?: unknown; message?: unknown };
        state.log.warn("read replica unavailable: reading from the primary", {
          replica: replica.description,
          code: pgErrorCode(e) ?? (typeof e?.code === "string" ? e.code : undefined),
          error: typeof e?.message === "string" ? e.message : String(e),
          retry_after_ms: retryAfterMs,
        });
      }
      state.down = true;
      state.retryAt = Date.now() + retryAfterMs;
      return primary;
    }
    if (state.down) {
      state.down = false;
      state.log.info("read replica reachable again", { replica: replica.description });
    }
    if (canonical(answer.rows!) === expected) return replica;
    if (performance.now() + pollMs > deadline) {
      state.log.debug("read replica behind the primary: reading from the primary");
      return primary;
    }
    await sleep(pollMs);
    answer = await onReplica().then(
      (rows) => ({ rows }),
      (error: unknown) => ({ error }),
    );
  }
}
