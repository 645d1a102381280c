import type { Config } from "./config.ts";
import type { DatabaseHandle, Db } from "./db/index.ts";
import type { Logger } from "./log.ts";
import { readerOf } from "./db/replica.ts";
import { Shutdown } from "./shutdown/index.ts";

/**
 * What the HTTP routes, the jobs, the CLI and the MCP tools share: one per process (tests make
 * one per database). Features add optional collaborators here (e.g. a purchaser adapter).
 */
export interface Services {
  /** The primary: every write, claim and transaction goes here. */
  handle: DatabaseHandle;
  db: Db;
  /**
   * Where report reads may go: the read replica (DATABASE_READ_URL, `handle.replica`) or, without
   * one, `handle` itself. Read-only; choose per read with `readConsistent(handle, reportReader, …)`.
   */
  reportReader: DatabaseHandle;
  config: Config;
  log: Logger;
  /** The service's clock; tests pass a fixed one. */
  now(): Date;
  /** Feature-specific collaborators, keyed by feature (set by createServices callers or tests). */
  extras: Record<string, unknown>;
  /** This service's stop: work loops take no new item once it is requested (lib/shutdown). */
  shutdown: Shutdown;
}

export function createServices(
  handle: DatabaseHandle,
  config: Config,
  log: Logger,
  opts: { now?: () => Date; extras?: Record<string, unknown>; reportReader?: DatabaseHandle } = {},
): Services {
  const reportReader = opts.reportReader ?? readerOf(handle);
  return { handle, db: handle.db, reportReader, config, log, now: opts.now ?? (() => new Date()), extras: opts.extras ?? {}, shutdown: new Shutdown() };
}
