import postgres from "postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "./schema/index.ts";
import type { DatabaseHandle, Db, QueryOptions, StreamOptions } from "./types.ts";
import { ConnectionGuard, type ProbeClient } from "./guard.ts";
import { isConnectionLost, QueryTimeoutError } from "./errors.ts";
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
  /** A reply due with no byte received this long → the guard probes the server (DATABASE_STALL_TIMEOUT_MS, 500). */
  stallMs: number;
  /** A probe not answered within this is a failure (DATABASE_PROBE_TIMEOUT_MS, 1000). */
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
 * The TLS the URL (or PGSSL) asks for, read as postgres.js reads it: sslmode (or ssl) in the
 * query string, sslrootcert=system → verify-full; sslnegotiation=direct. Null: plaintext.
 */
export function tlsOf(url: string, env: Record<string, string | undefined> = process.env): { mode: string; direct: boolean } | null {
  const qs = url.includes("?") ? url.slice(url.indexOf("?") + 1) : "";
  const q = new URLSearchParams(qs);
  let mode = q.get("sslmode") ?? q.get("ssl") ?? null;
  if (q.get("sslrootcert") === "system") mode = "verify-full";
  mode ??= env.PGSSL || null;
  if (!mode || mode === "disable" || mode === "false") return null;
  return { mode, direct: (q.get("sslnegotiation") ?? env.PGSSLNEGOTIATION) === "direct" };
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
}

/** Opens a pooled postgres.js connection to a PostgreSQL server, behind the connection guard. */
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
  // TLS is negotiated by the guard, which must see the plaintext protocol (lib/db/guard.ts).
  const tls = tlsOf(url);
  const base = {
    ...(tls ? { ssl: false as const } : {}),
    onnotice: () => {},
    connect_timeout: cfg.connectTimeoutMs / 1000,
    // The guard fails fast while the server is down, so a reconnect need not wait.
    backoff: () => 0,
    keep_alive: cfg.keepAliveS,
    connection: connection as any,
  };
  const makeProbeClient = (socket: (o: any) => any): ProbeClient => {
    const c = postgres(url, {
      ...base,
      max: 1,
      connect_timeout: cfg.probeTimeoutMs / 1000,
      idle_timeout: 60,
      max_lifetime: null,
      fetch_types: false,
      prepare: false,
      // The socket factory is a postgres.js option its type declarations omit.
      ...({ socket } as object),
    });
    return {
      query: async (text) => (await c.unsafe(text)) as unknown as Record<string, unknown>[],
      destroy: () => c.end({ timeout: 0 }),
    };
  };
  const guard = new ConnectionGuard(
    { stallMs: cfg.stallMs, probeTimeoutMs: cfg.probeTimeoutMs, probeIntervalMs: cfg.probeIntervalMs, connectTimeoutMs: cfg.connectTimeoutMs, tls },
    makeProbeClient,
    log,
  );
  const client = postgres(url, {
    ...base,
    max: cfg.poolSize,
    idle_timeout: cfg.idleTimeoutS,
    ...({ socket: guard.poolSocket } as object),
  });

  const mayRetry = (e: unknown) => isConnectionLost(e) && guard.state === "up";

  /** Runs a read (`make`), and once more when its connection was found dead. */
  const withRetry = async (make: () => Promise<any>): Promise<any> => {
    try {
      return await make();
    } catch (e) {
      if (!mayRetry(e)) throw e;
      log.debug("database statement retried on another connection (its connection was lost)", { code: (e as any)?.code });
      await settle();
      return await make();
    }
  };

  /**
   * `client.unsafe` for a read outside a transaction: a lazy thenable (as postgres.js queries
   * are) that runs the statement and, when its connection was found dead, runs it once more.
   */
  const unsafe = (text: string, params?: any[], options?: any): any => {
    if (!RETRYABLE.test(text)) return client.unsafe(text, params, options);
    let values = false;
    let promise: Promise<any> | null = null;
    const make = () => {
      const q = client.unsafe(text, params, options);
      return values ? q.values() : q;
    };
    const run = () => (promise ??= withRetry(make));
    const wrapper: any = {
      values() {
        values = true;
        return wrapper;
      },
      then: (f?: any, r?: any) => run().then(f, r),
      catch: (r?: any) => run().catch(r),
      finally: (f?: any) => run().finally(f),
    };
    // Anything else (cursor, forEach, raw…) goes to a plain query, without the retry.
    return new Proxy(wrapper, {
      get(t, k) {
        if (k in t) return t[k];
        const q: any = client.unsafe(text, params, options);
        const v = q[k];
        return typeof v === "function" ? v.bind(q) : v;
      },
    });
  };

  /**
   * `client.begin`: when the BEGIN itself fails because its connection was found dead, nothing of
   * the transaction has run yet (its callback was not called), so it is started once more.
   */
  const begin = async (a: any, b?: any): Promise<any> => {
    const fn = b ?? a;
    const mode = b ? a : undefined;
    for (let attempt = 0; ; attempt++) {
      let started = false;
      const body = (tx: any) => {
        started = true;
        return fn(tx);
      };
      try {
        return await (mode === undefined ? client.begin(body) : client.begin(mode, body));
      } catch (e) {
        if (started || attempt > 0 || !mayRetry(e)) throw e;
        await settle();
      }
    }
  };

  const guarded = new Proxy(client, {
    get(t, k) {
      if (k === "unsafe") return unsafe;
      if (k === "begin") return begin;
      return Reflect.get(t, k, t);
    },
  });

  /**
   * A read-only transaction for a streamed read. Its statement_timeout runs from the first fetch
   * to the last, including the time the consumer takes between batches: the stream has its own,
   * longer limit, and the time to the first data (the query's own work) is bounded by cancelling
   * it from outside when `firstBatchTimeoutMs` passes first.
   */
  const readStream = (opts: StreamOptions, read: (tx: any, watch: (query: { cancel(): unknown }) => () => void) => Promise<void>) =>
    begin("read only", async (tx: any) => {
      await tx.unsafe(`SET LOCAL statement_timeout = ${Math.floor(cfg.streamTimeoutMs)}`);
      const limitMs = opts.firstBatchTimeoutMs ?? 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let timedOut = false;
      /** Arms the limit on `query` (postgres.js cancels it on its own connection); returns what to call at the first data. */
      const watch = (query: { cancel(): unknown }) => {
        if (limitMs > 0) {
          timer = setTimeout(() => {
            timedOut = true;
            query.cancel();
          }, limitMs);
        }
        return () => {
          clearTimeout(timer);
          if (timedOut) throw new QueryTimeoutError(limitMs);
        };
      };
      try {
        await read(tx, watch);
      } catch (e) {
        if (timedOut) throw new QueryTimeoutError(limitMs);
        throw e;
      } finally {
        clearTimeout(timer);
      }
    });

  const db = drizzle(guarded, { schema }) as unknown as Db;
  return {
    db,
    driver: "postgres",
    poolSize: cfg.poolSize,
    description: redact(url),
    async query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      // `unsafe`'s retry without its thenable wrapper (this runs on every request).
      const opts = options?.prepare ? PREPARED : undefined;
      const make = () => client.unsafe(text, params as any[], opts);
      return (await (RETRYABLE.test(text) ? withRetry(make) : make())) as unknown as T[];
    },
    async stream<T>(text: string, params: unknown[], onBatch: (rows: T[]) => Promise<void> | void, batchSize = 5000, opts: StreamOptions = {}) {
      await readStream(opts, async (tx, watch) => {
        const query = tx.unsafe(text, params as any[]);
        const firstData = watch(query);
        for await (const rows of query.cursor(batchSize)) {
          firstData();
          await onBatch(rows as unknown as T[]);
        }
      });
    },
    async copyOut(text: string, onChunk: (chunk: Uint8Array) => Promise<void> | void, opts: StreamOptions = {}) {
      await readStream(opts, async (tx, watch) => {
        // COPY takes no parameters: callers inline validated literals (quoted for this setting).
        await tx.unsafe(`SET LOCAL standard_conforming_strings = on`);
        const query = tx.unsafe(text);
        const firstData = watch(query);
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
            try {
              firstData();
              const r = onChunk(chunk);
              if (r && typeof (r as Promise<void>).then === "function") {
                rows.pause();
                last = (r as Promise<void>).then(() => failed || rows.resume(), fail);
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
      await guard.close();
      // Let the statements in flight finish (up to 5 s), then end every connection. Not
      // `end({ timeout: 5 })` alone: a connection whose socket failed under a statement keeps
      // that statement as its current one until it reconnects, and postgres.js's end() waits
      // for it — the full timeout, at every shutdown after an outage.
      const deadline = performance.now() + 5000;
      while (guard.busy() !== "idle" && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await client.end({ timeout: guard.busy() === "unknown" ? 5 : 0 });
    },
  };
}
