import type { DatabaseHandle } from "./types.ts";
import type { Logger } from "../log.ts";
import { openMigratedMemoryPglite, openPglite } from "./pglite.ts";
import { openPostgres, type PostgresSettings } from "./postgres.ts";
import { migrate } from "./migrate.ts";
import { checkReadReplicaUrls, openReadReplica } from "./replica.ts";

export type { DatabaseHandle, Db, Tx, DbOrTx, QueryOptions, StreamOptions } from "./types.ts";
export { pgErrorCode, pgConstraintName, isDatabaseUnavailable, whenDatabaseAnswers, QueryAbortedError, QueryTimeoutError } from "./errors.ts";
export { postgresSettings, type PostgresSettings } from "./postgres.ts";
export { readConsistent, readerOf, ReadReplicaConfigError, type ReadConsistentOptions } from "./replica.ts";

export interface OpenDbOptions {
  /** postgres://… selects the PostgreSQL server; otherwise PGlite. */
  url?: string;
  /** Where the embedded database lives; undefined with no url means in-memory. */
  dataDir?: string;
  /** Apply pending migrations (under an advisory lock) before returning. */
  migrate?: boolean;
  /** Where the PostgreSQL health check logs outages (default: JSON lines at LOG_LEVEL). */
  log?: Logger;
  /** PostgreSQL pool timeouts and limits, over those of the environment (`postgresSettings`). */
  postgres?: Partial<PostgresSettings>;
  /**
   * postgres://… of a read replica of `url` (DATABASE_READ_URL): opened read-only, without
   * migrations, as `handle.replica` (closed with the handle). Refused with PGlite.
   */
  readUrl?: string;
  /** How long a migration's statement waits for a table lock (the config's `migrationLockTimeoutMs`; default 5 s). */
  migrationLockTimeoutMs?: number;
}

export async function openDb(opts: OpenDbOptions = {}): Promise<DatabaseHandle> {
  checkReadReplicaUrls(opts.url, opts.readUrl);
  const handle =
    opts.url && /^postgres(ql)?:\/\//.test(opts.url)
      ? await openPostgres(opts.url, { log: opts.log, settings: opts.postgres })
      : opts.dataDir === undefined && opts.migrate !== false
        ? await openMigratedMemoryPglite()
        : await openPglite(opts.dataDir);
  if (opts.migrate !== false) {
    try {
      await migrate(handle, { lockTimeoutMs: opts.migrationLockTimeoutMs });
    } catch (e) {
      await handle.close().catch(() => {});
      throw e;
    }
  }
  if (opts.readUrl) {
    const replica = await openReadReplica(opts.readUrl, { log: opts.log, settings: opts.postgres });
    const closePrimary = handle.close.bind(handle);
    handle.replica = replica;
    handle.close = async () => {
      await replica.close().catch(() => {});
      await closePrimary();
    };
  }
  return handle;
}
