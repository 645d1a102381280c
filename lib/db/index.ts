import type { DatabaseHandle } from "./types.ts";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";
import { migrate } from "./migrate.ts";

export type { DatabaseHandle, Db, Tx, DbOrTx } from "./types.ts";
export { pgErrorCode, isDatabaseUnavailable } from "./errors.ts";

export interface OpenDbOptions {
  /** postgres://… selects the PostgreSQL server; otherwise PGlite. */
  url?: string;
  /** Where the embedded database lives; undefined with no url means in-memory. */
  dataDir?: string;
  /** Apply pending migrations (under an advisory lock) before returning. */
  migrate?: boolean;
}

export async function openDb(opts: OpenDbOptions = {}): Promise<DatabaseHandle> {
  const handle = opts.url && /^postgres(ql)?:\/\//.test(opts.url) ? await openPostgres(opts.url) : await openPglite(opts.dataDir);
  if (opts.migrate !== false) {
    try {
      await migrate(handle);
    } catch (e) {
      await handle.close().catch(() => {});
      throw e;
    }
  }
  return handle;
}
