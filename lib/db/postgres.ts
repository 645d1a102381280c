import postgres from "postgres";
import { inSpan, SpanKind, statementKind, tracingEnabled } from "../tracing/index.ts";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "./schema/index.ts";
import type { DatabaseHandle, Db, QueryOptions, StreamOptions } from "./types.ts";
import net from "node:net";
import { randomUUID } from "node:crypto";
import { DatabaseHealth, type ProbeConnection, type WatchedOp } from "./health.ts";
import { currentRequestScope, type CommitWitness } from "./requestScope.ts";
import { isConnectionLost, isDatabaseUnavailable, QueryAbortedError, QueryTimeoutError, whenDatabaseAnswers } from "./errors.ts";
import { createLogger, parseLogLevel, type Logger } from "../log.ts";
import { nonNegativeInt, positiveInt } from "../config.ts";

/**
 * Timeouts and limits of the PostgreSQL pool (docs/OPERATIONS.md, "Database timeouts and
 * outages"). Read from the environment by `postgresSettings`; `openDb({ postgres })` overrides.
 */
export interface PostgresSettings {
  /** Connections per process (DATABASE_POOL_SIZE, 10). */
  poolSize: number;
  /** TCP connect + TLS + authentication of a new connection (DATABASE_CONNECT_TIMEOUT_MS, 1500). */
  connectTimeoutMs: number;
  /** Server-side statement_timeout of every session (DATABASE_STATEMENT_TIMEOUT_MS, 60000; 0: the server's own). */
  statementTimeoutMs: number;
  /** statement_timeout of a cursor stream (CSV download), which spans the whole stream (DATABASE_STREAM_TIMEOUT_MS, 1800000; 0: none). */
  streamTimeoutMs: number;
  /** Server-side idle_in_transaction_session_timeout (DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS, 60000; 0: the server's own). */
  idleInTransactionTimeoutMs: number;
  /** An operation waiting on the server this long with no progress → the health check probes it (DATABASE_STALL_TIMEOUT_MS, 500). */
  stallMs: number;
  /** A probe that heard not one byte from the server within this is a failure (DATABASE_PROBE_TIMEOUT_MS, 1000). */
  probeTimeoutMs: number;
  /** While the database is down: pause between probes (250). */
  probeIntervalMs: number;
  /** An unused connection is closed after this (30 s). */
  idleTimeoutS: number;
  /** TCP keepalive idle time of each connection (15 s). */
  keepAliveS: number;
}

export function postgresSettings(env: Record<string, string | undefined> = process.env, overrides: Partial<PostgresSettings> = {}): PostgresSettings {
  return {
    poolSize: positiveInt(env.DATABASE_POOL_SIZE, 10),
    connectTimeoutMs: positiveInt(env.DATABASE_CONNECT_TIMEOUT_MS, 1500),
    statementTimeoutMs: nonNegativeInt(env.DATABASE_STATEMENT_TIMEOUT_MS, 60_000),
    streamTimeoutMs: nonNegativeInt(env.DATABASE_STREAM_TIMEOUT_MS, 30 * 60_000),
    idleInTransactionTimeoutMs: nonNegativeInt(env.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS, 60_000),
    stallMs: positiveInt(env.DATABASE_STALL_TIMEOUT_MS, 500),
    probeTimeoutMs: positiveInt(env.DATABASE_PROBE_TIMEOUT_MS, 1000),
    probeIntervalMs: 250,
    idleTimeoutS: 30,
    keepAliveS: 15,
    ...overrides,
  };
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable url)";
  }
}

/**
 * Statements that may run twice: a plain read outside a transaction. Only those are retried, once,
 * when the connection they were sent on turns out to have died (see `isConnectionLost`).
 */
const RETRYABLE = /^\s*(?:select|show)\b/i;

/** postgres.js options of a `prepare: true` query (its `unsafe` prepares nothing by default). */
const PREPARED = { prepare: true } as const;

/** Lets the event loop take in pending socket events (other connections' closes) before a retry. */
const settle = () => new Promise<void>((r) => setTimeout(r, 1));

export interface OpenPostgresOptions {
  max?: number;
  log?: Logger;
  settings?: Partial<PostgresSettings>;
  /** A read replica: nothing is written there, not even a request's commit marker. */
  readOnly?: boolean;
}

/** How long a request whose COMMIT went unanswered waits for the database to learn the outcome. */
const COMMIT_OUTCOME_WAIT_MS = 120_000;

/** Past the server's statement timeout, a statement with no answer is given up after this too. */
const DEADLINE_GRACE_MS = 5000;

/** `SET LOCAL statement_timeout = N` inside a transaction: its statements' new limit. */
const COPY_FROM_STDIN = /^\s*copy\b[\s\S]*\bfrom\s+stdin\b/i;

const SET_LOCAL_TIMEOUT = /^\s*set\s+local\s+statement_timeout\s*(?:=|to)\s*'?(\d+)'?\s*;?\s*$/i;

/**
 * The statement_timeout every session starts with: the URL's own (a startup parameter in its
 * query string wins), else the setting. Null when it cannot be known (then no client deadline).
 */
export function sessionStatementTimeoutMs(url: string, settingMs: number): number | null {
  const qs = url.includes("?") ? url.slice(url.indexOf("?") + 1) : "";
  const v = new URLSearchParams(qs).get("statement_timeout");
  if (v === null) return settingMs;
  return /^\d+$/.test(v) ? Number(v) : null;
}

const deadlineOf = (timeoutMs: number | null) => (timeoutMs === null || timeoutMs <= 0 ? 0 : timeoutMs + DEADLINE_GRACE_MS);

/**
 * Opens a pooled postgres.js connection to a PostgreSQL server, watched by its health check
 * (lib/db/health.ts): every statement, transaction and stream our code starts is an operation the
 * health check can answer for (503 when the server is found unreachable), never a socket it
 * touches. The driver owns its connections; a pool found dead is replaced through its own API.
 */
export async function openPostgres(url: string, opts: OpenPostgresOptions = {}): Promise<DatabaseHandle> {
  const cfg = postgresSettings(process.env, { ...(opts.max ? { poolSize: opts.max } : {}), ...opts.settings });
  const log = opts.log ?? createLogger(parseLogLevel(process.env.LOG_LEVEL));
  // Startup parameters of every session (a parameter in the URL's query string wins).
  // No JIT: the report and cost queries are CTE joins whose row estimates explode, and
  // PostgreSQL then spends seconds compiling a query that runs in under one (measured: the
  // cloud_bill_by_resource month 14-19 s with JIT, 0.9 s without). Nothing here is the long
  // analytical scan JIT pays off on.
  const connection: Record<string, string> = { jit: "off" };
  if (cfg.statementTimeoutMs > 0) connection.statement_timeout = String(cfg.statementTimeoutMs);
  if (cfg.idleInTransactionTimeoutMs > 0) connection.idle_in_transaction_session_timeout = String(cfg.idleInTransactionTimeoutMs);
  const statementDeadlineMs = deadlineOf(sessionStatementTimeoutMs(url, cfg.statementTimeoutMs));
  const base = {
    onnotice: () => {},
    connect_timeout: cfg.connectTimeoutMs / 1000,
    // The health check fails fast while the server is down, so a reconnect need not wait.
    backoff: () => 0,
    keep_alive: cfg.keepAliveS,
    connection: connection as any,
  };

  /** A probe connection: its own one-connection client, whose socket tells when the server last sent a byte. */
  const openProbe = (): ProbeConnection => {
    let lastByte = 0;
    const socket = (options: { host: string[]; port: number[]; path?: string }) => {
      const s = options.path ? net.connect(options.path) : net.connect(options.port[0] ?? 5432, options.host[0]);
      s.on("data", () => {
        lastByte = performance.now();
      });
      return s;
    };
    const c = postgres(url, {
      ...base,
      max: 1,
      connect_timeout: cfg.probeTimeoutMs / 1000,
      idle_timeout: 0,
      max_lifetime: null,
      fetch_types: false,
      prepare: false,
      // The socket factory is a postgres.js option its type declarations omit.
      ...({ socket } as object),
    });
    return {
      query: (text) => c.unsafe(text),
      lastByteAt: () => lastByte,
      end: () => c.end({ timeout: 0 }),
    };
  };

  const first = postgres(url, { ...base, max: cfg.poolSize, idle_timeout: cfg.idleTimeoutS });
  let pool = first;
  /** A new pool for new work; the old one is ended by the driver (its operations were answered). */
  const replacePool = () => {
    const old = pool;
    const next = postgres(url, { ...base, max: cfg.poolSize, idle_timeout: cfg.idleTimeoutS });
    // drizzle set its type parsers on the first pool's options; every pool gets the same.
    Object.assign((next as any).options.parsers, (first as any).options.parsers);
    Object.assign((next as any).options.serializers, (first as any).options.serializers);
    pool = next;
    void old.end({ timeout: 0 }).catch(() => {});
  };
  const health = new DatabaseHealth(
    { stallMs: cfg.stallMs, probeTimeoutMs: cfg.probeTimeoutMs, probeIntervalMs: cfg.probeIntervalMs, deadlineMs: statementDeadlineMs },
    openProbe,
    log,
    replacePool,
  );

  const mayRetry = (e: unknown) => isConnectionLost(e) && health.state === "up";

  /** Runs a read (`make`), and once more (`again`) when its connection was found dead. */
  const withRetry = async (make: () => Promise<any>, again: () => Promise<any> = make): Promise<any> => {
    try {
      return await make();
    } catch (e) {
      if (!mayRetry(e)) throw e;
      log.debug("database statement retried on another connection (its connection was lost)", { code: (e as any)?.code });
      await settle();
      return await again();
    }
  };

  /**
   * `unsafe` of the pool or of a transaction: a lazy thenable (as postgres.js queries are) whose
   * statement runs under watch, with `deadline()`, cancelled through the driver when the health
   * check gives up on it. Awaiting it and using the query's other methods (writable, cursor…)
   * share one driver query; a read outside a transaction runs once more, as a new query, when its
   * connection was found dead.
   */
  const unsafeOf = (sql: () => any, deadline: () => number, retryable: boolean) => (text: string, params?: any[], options?: any): any => {
    let values = false;
    let promise: Promise<any> | null = null;
    let current: any = null;
    const query = () => (current ??= sql().unsafe(text, params, options));
    // A COPY … FROM STDIN waits on us (we feed it), not on the server.
    const feeding = COPY_FROM_STDIN.test(text);
    const make = () =>
      traced(text, () => {
        const p = health.watch((op) => {
          op.setDeadline(deadline());
          if (feeding) op.busy();
          const q = query();
          op.onDeadline(() => q.cancel());
          return values ? q.values() : q;
        });
        return retryable ? countStatement(p) : p;
      });
    const again = () => {
      current = null;
      return make();
    };
    // A write outside a transaction for a request that asked for exactly-once: a transaction
    // of its own, so that it carries the request's commit marker too.
    const witnessed = () =>
      beginWatched(undefined, async (_tx, _op, raw) => {
        const q = raw.unsafe(text, params, options);
        return values ? q.values() : q;
      });
    const run = () =>
      (promise ??= !retryable ? make() : RETRYABLE.test(text) ? withRetry(make, again) : !feeding && !opts.readOnly && currentRequestScope()?.witness ? witnessed() : make());
    const wrapper: any = {
      values() {
        values = true;
        return wrapper;
      },
      then: (f?: any, r?: any) => run().then(f, r),
      catch: (r?: any) => run().catch(r),
      finally: (f?: any) => run().finally(f),
    };
    return new Proxy(wrapper, {
      get(t, k) {
        if (k in t) return t[k];
        const q: any = query();
        const v = q[k];
        return typeof v === "function" ? v.bind(q) : v;
      },
    });
  };

  /**
   * A transaction's `sql` as drizzle sees it: its statements under watch with the transaction's
   * statement timeout (`SET LOCAL statement_timeout` changes it), savepoints likewise.
   */
  const watchedTx = (tx: any, state: { deadlineMs: number }): any => {
    const unsafe = unsafeOf(() => tx, () => state.deadlineMs, false);
    return new Proxy(tx, {
      get(t, k) {
        if (k === "unsafe") {
          return (text: string, params?: any[], options?: any) => {
            const m = SET_LOCAL_TIMEOUT.exec(text);
            if (m) state.deadlineMs = deadlineOf(Number(m[1]));
            return unsafe(text, params, options);
          };
        }
        if (k === "savepoint") {
          return (a: any, b?: any) => {
            const fn = b ?? a;
            const wrapped = (sp: any) => fn(watchedTx(sp, state));
            return b ? t.savepoint(a, wrapped) : t.savepoint(wrapped);
          };
        }
        return Reflect.get(t, k, t);
      },
    });
  };

  /**
   * `begin` under watch: waiting on the server for BEGIN and COMMIT, busy while the callback runs
   * (its statements are watched one by one). When the BEGIN itself fails because its connection
   * was found dead, nothing of the transaction has run yet, so it is started once more.
   */
  /**
   * What holds or waits for the pool's connections: a transaction waits until its body starts and
   * holds one until it ends; a statement outside a transaction is counted from sending to answer
   * (postgres.js queues it on a busy connection once every connection is taken).
   */
  const poolUse = { transactions: 0, transactionsWaiting: 0, statements: 0 };
  /** A statement's span (tracing on): its kind only, never its text's values or its parameters. */
  const traced = <T>(text: string, run: () => Promise<T>): Promise<T> => {
    if (!tracingEnabled()) return run();
    const kind = statementKind(text);
    return inSpan(`db ${kind}`, { "db.system.name": "postgresql", "db.operation.name": kind }, () => run(), SpanKind.CLIENT);
  };
  const countStatement = <T>(p: Promise<T>): Promise<T> => {
    poolUse.statements++;
    return p.finally(() => poolUse.statements--);
  };

  const beginWatched = async (mode: string | undefined, fn: (tx: any, op: WatchedOp, rawTx: any) => Promise<any>): Promise<any> => {
    // A request's exactly-once write: the transaction's last statement records a marker, so an
    // unanswered COMMIT can be told apart afterwards (lib/db/requestScope.ts).
    const scope = currentRequestScope();
    const witness = opts.readOnly || mode?.includes("read only") ? undefined : scope?.witness;
    const marker = witness ? randomUUID() : "";
    for (let attempt = 0; ; attempt++) {
      let started = false;
      let result: { value: any } | null = null;
      poolUse.transactionsWaiting++;
      try {
        return await health.watch((op) => {
          const state = { deadlineMs: statementDeadlineMs };
          const body = async (tx: any) => {
            if (!started) {
              poolUse.transactionsWaiting--;
              poolUse.transactions++;
            }
            started = true;
            op.busy();
            let value: any;
            try {
              value = await fn(watchedTx(tx, state), op, tx);
            } catch (e) {
              // Its connection is gone or silent: the ROLLBACK would wait on it too; the caller need not.
              if (isDatabaseUnavailable(e)) op.giveUp(e);
              throw e;
            } finally {
              // Waiting on the server again: the marker, then the COMMIT.
              op.setDeadline(state.deadlineMs);
              op.waiting();
            }
            if (witness) await witness.record((text, params) => tx.unsafe(text, params as any[]), marker);
            result = { value };
            return value;
          };
          return mode === undefined ? pool.begin(body) : pool.begin(mode, body);
        });
      } catch (e) {
        if (witness && result && isDatabaseUnavailable(e)) {
          // The COMMIT was sent; its answer never came. The client hears 503 now; the request
          // learns the outcome once the database answers, and ends as the write really went.
          scope?.answerNow?.();
          if (await commitOutcome(witness, marker)) return (result as { value: any }).value;
          throw e;
        }
        if (started || attempt > 0 || !mayRetry(e)) throw e;
        await settle();
      } finally {
        if (started) poolUse.transactions--;
        else poolUse.transactionsWaiting--;
      }
    }
  };

  /** Whether the transaction that carried `marker` committed: asked until the database answers (up to COMMIT_OUTCOME_WAIT_MS). */
  const commitOutcome = (witness: CommitWitness, marker: string): Promise<boolean> =>
    whenDatabaseAnswers(() => witness.committed(marker), { everyMs: cfg.probeIntervalMs, forMs: COMMIT_OUTCOME_WAIT_MS }).catch((e) => {
      log.warn("the outcome of a commit could not be learned; its request ended as failed", { error: (e as any)?.code });
      return false;
    });
  const begin = (a: any, b?: any): Promise<any> =>
    tracingEnabled()
      ? inSpan("db transaction", { "db.system.name": "postgresql" }, () => (b ? beginWatched(a, (tx) => b(tx)) : beginWatched(undefined, (tx) => a(tx))), SpanKind.CLIENT)
      : b
        ? beginWatched(a, (tx) => b(tx))
        : beginWatched(undefined, (tx) => a(tx));

  const poolUnsafe = unsafeOf(() => pool, () => statementDeadlineMs, true);
  const watchedPool = new Proxy(first, {
    get(_t, k) {
      if (k === "unsafe") return poolUnsafe;
      if (k === "begin") return begin;
      return Reflect.get(pool, k, pool);
    },
  });

  /**
   * A read-only transaction for a streamed read. Its statement_timeout runs from the first fetch
   * to the last, including the time the consumer takes between batches: the stream has its own,
   * longer limit, and the time to the first data (the query's own work) is bounded by cancelling
   * it from outside when `firstBatchTimeoutMs` passes first. The stream waits on the server only
   * while it fetches: a slow consumer is no stall.
   */
  const readStream = (opts: StreamOptions, read: (tx: any, watch: (query: { cancel(): unknown }) => () => void, op: WatchedOp) => Promise<void>) =>
    beginWatched("read only", async (_watched: any, op: WatchedOp, tx: any) => {
      await tx.unsafe(`SET LOCAL statement_timeout = ${Math.floor(cfg.streamTimeoutMs)}`);
      const limitMs = opts.firstBatchTimeoutMs ?? 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let timedOut = false;
      const signal = opts.signal;
      let aborted = false;
      let onAbort: (() => void) | undefined;
      /** Arms the limit on `query` (postgres.js cancels it on its own connection); returns what to call at the first data. */
      const watch = (query: { cancel(): unknown }) => {
        if (limitMs > 0) {
          timer = setTimeout(() => {
            timedOut = true;
            query.cancel();
          }, limitMs);
        }
        if (signal) {
          onAbort = () => {
            aborted = true;
            query.cancel();
          };
          if (signal.aborted) onAbort();
          else signal.addEventListener("abort", onAbort, { once: true });
        }
        return () => {
          clearTimeout(timer);
          if (timedOut) throw new QueryTimeoutError(limitMs);
        };
      };
      op.setDeadline(deadlineOf(cfg.streamTimeoutMs));
      try {
        await read(tx, watch, op);
      } catch (e) {
        if (timedOut) throw new QueryTimeoutError(limitMs);
        if (aborted) throw new QueryAbortedError();
        throw e;
      } finally {
        clearTimeout(timer);
        if (onAbort) signal!.removeEventListener("abort", onAbort);
      }
    });

  const db = drizzle(watchedPool, { schema }) as unknown as Db;
  return {
    db,
    driver: "postgres",
    poolSize: cfg.poolSize,
    description: redact(url),
    status() {
      const holding = poolUse.transactions + poolUse.statements;
      return {
        up: health.state === "up",
        pool: { inUse: Math.min(cfg.poolSize, holding), waiting: poolUse.transactionsWaiting + Math.max(0, holding - cfg.poolSize) },
      };
    },
    async query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      // `unsafe`'s watch and retry without its thenable wrapper (this runs on every request).
      const opts = options?.prepare ? PREPARED : undefined;
      const make = () =>
        traced(text, () =>
          countStatement(
            health.watch((op) => {
              op.setDeadline(statementDeadlineMs);
              const q = pool.unsafe(text, params as any[], opts);
              op.onDeadline(() => q.cancel());
              return q;
            }),
          ),
        );
      return (await (RETRYABLE.test(text) ? withRetry(make) : make())) as unknown as T[];
    },
    async stream<T>(text: string, params: unknown[], onBatch: (rows: T[]) => Promise<void> | void, batchSize = 5000, opts: StreamOptions = {}) {
      await readStream(opts, async (tx, watch, op) => {
        const query = tx.unsafe(text, params as any[]);
        const firstData = watch(query);
        op.onDeadline(() => query.cancel());
        op.waiting();
        for await (const rows of query.cursor(batchSize)) {
          op.busy();
          firstData();
          await onBatch(rows as unknown as T[]);
          op.waiting();
        }
      });
    },
    async copyOut(text: string, onChunk: (chunk: Uint8Array) => Promise<void> | void, opts: StreamOptions = {}) {
      await readStream(opts, async (tx, watch, op) => {
        // COPY takes no parameters: callers inline validated literals (quoted for this setting).
        await tx.unsafe(`SET LOCAL standard_conforming_strings = on`);
        const query = tx.unsafe(text);
        const firstData = watch(query);
        op.onDeadline(() => query.cancel());
        op.waiting();
        const done = Promise.resolve(query).then(
          () => null,
          (e: unknown) => e,
        );
        const rows = await query.readable();
        // postgres.js pauses its socket when the stream's buffer is full and resumes it only from
        // the stream's read(): when the last chunk filled the buffer, the socket stays paused after
        // the COPY and the transaction's COMMIT never returns (with Bun, also under for-await).
        // Hence 'data' events with explicit pause/resume, and a last read() once the COPY is over.
        const kick = () => (rows as any)._read?.();
        // The connection takes other statements (ROLLBACK, COMMIT) only once the COPY's data is over.
        const over = new Promise<void>((resolve) => {
          rows.once("end", resolve);
          rows.once("close", resolve);
          rows.once("error", () => resolve());
        });
        const failure = await new Promise<unknown>((resolve) => {
          let last: Promise<unknown> = Promise.resolve();
          let failed = false;
          const fail = (e: unknown) => {
            if (failed) return;
            failed = true;
            // Stop the server's side, then let the rest of the COPY (and its error) drain.
            query.cancel?.();
            rows.on("data", () => {});
            rows.resume();
            kick();
            resolve(e);
          };
          rows.on("data", (chunk: Uint8Array) => {
            if (failed) return;
            op.progress();
            try {
              firstData();
              const r = onChunk(chunk);
              if (r && typeof (r as Promise<void>).then === "function") {
                rows.pause();
                op.busy();
                last = (r as Promise<void>).then(() => {
                  if (failed) return;
                  op.waiting();
                  rows.resume();
                }, fail);
              }
            } catch (e) {
              fail(e);
            }
          });
          rows.once("error", fail);
          rows.once("end", () => last.then(() => resolve(null)));
        });
        kick();
        await over;
        kick();
        const queryError = await done;
        if (failure) throw failure;
        if (queryError) throw queryError;
      });
    },
    async close() {
      // Let the operations in flight finish (up to 5 s), then end every connection.
      const deadline = performance.now() + 5000;
      while (health.inFlight > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await health.close();
      await pool.end({ timeout: 0 });
    },
  };
}
