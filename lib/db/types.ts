import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as schema from "./schema/index.ts";

/** The drizzle database, whichever driver is behind it. Transactions have the same API. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Either the database or an open transaction: services accept both so callers can compose. */
export type DbOrTx = Db | Tx;

export interface StreamOptions {
  /**
   * Cancel the query (QueryTimeoutError) when its first batch has not arrived within this many
   * ms: the time to compute the result, not to deliver it. PostgreSQL only (PGlite runs on this
   * process's thread and cannot be interrupted).
   */
  firstBatchTimeoutMs?: number;
  /**
   * Cancel the query at the server when this aborts (the client of a download went away before
   * its first byte): QueryAbortedError. PostgreSQL only, as above.
   */
  signal?: AbortSignal;
}

export interface QueryOptions {
  /**
   * Parse and plan `text` once and reuse it (for a fixed statement run on every request, such as
   * the API-key lookup): PostgreSQL, a named prepared statement per pooled connection (without
   * it postgres.js spends a describe round trip on every call with parameters); PGlite, a
   * `PREPARE` in its one session, run with `EXECUTE`. Results are the same as without.
   */
  prepare?: boolean;
}

export interface DatabaseStatus {
  /** False while the handle knows the database down (failing fast until a probe succeeds). */
  up: boolean;
  /** PostgreSQL's pool (PGlite has one in-process connection and no pool). */
  pool?: {
    /** Connections holding a transaction or a statement. */
    inUse: number;
    /** Transactions waiting for a connection, and statements beyond the pool's size. */
    waiting: number;
  };
}

export interface DatabaseHandle {
  db: Db;
  driver: "pglite" | "postgres";
  /** Connections this handle can hold at once (the postgres.js pool size; 1 for PGlite). */
  poolSize: number;
  /** Raw text SQL with positional parameters ($1…), rows as plain objects. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: QueryOptions): Promise<T[]>;
  /**
   * Runs `text` through a server-side cursor and hands the rows to `onBatch` in batches, so
   * memory stays flat whatever the row count. PostgreSQL: inside a read-only transaction on one
   * pooled connection until the last batch (or `onBatch` throws: rolled back, released). PGlite:
   * a holdable cursor (materialized once, then one short FETCH per batch), so the single
   * connection serves other queries while `onBatch` waits.
   */
  stream<T = Record<string, unknown>>(
    text: string,
    params: unknown[],
    onBatch: (rows: T[]) => Promise<void> | void,
    batchSize?: number,
    opts?: StreamOptions,
  ): Promise<void>;
  /**
   * `COPY (…) TO STDOUT` in a read-only transaction, chunk by chunk with backpressure: PostgreSQL
   * only (absent on PGlite, whose COPY TO writes one blob). Unlike a cursor, the query may use
   * parallel workers. `text` is the whole COPY statement (no parameters).
   */
  copyOut?(text: string, onChunk: (chunk: Uint8Array) => Promise<void> | void, opts?: StreamOptions): Promise<void>;
  close(): Promise<void>;
  /**
   * Readiness (/readyz): resolves when the database can take statements. Without it, a
   * `SELECT 1`. PGlite: in-process, so busy running statements means up (a SELECT 1 would only
   * queue behind a background seed's transaction on its one connection).
   */
  ping?(): Promise<void>;
  /** Identifies the database in logs without credentials. */
  description: string;
  /** The handle's view of its database and pool now (metrics). */
  status?(): DatabaseStatus;
  /**
   * The read replica opened with this (primary) handle from DATABASE_READ_URL, read-only;
   * closed with it. Use it through `readConsistent` (lib/db/replica.ts), never for writes.
   */
  replica?: DatabaseHandle;
}
