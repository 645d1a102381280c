import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as schema from "./schema/index.ts";

/** The drizzle database, whichever driver is behind it. Transactions have the same API. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Either the database or an open transaction: services accept both so callers can compose. */
export type DbOrTx = Db | Tx;

export interface DatabaseHandle {
  db: Db;
  driver: "pglite" | "postgres";
  /** Connections this handle can hold at once (the postgres.js pool size; 1 for PGlite). */
  poolSize: number;
  /** Raw text SQL with positional parameters ($1…), rows as plain objects. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
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
  ): Promise<void>;
  close(): Promise<void>;
  /** Identifies the database in logs without credentials. */
  description: string;
}
