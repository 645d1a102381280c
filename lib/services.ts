import type { Config } from "./config.ts";
import type { DatabaseHandle, Db } from "./db/index.ts";
import type { Logger } from "./log.ts";

/**
 * What the HTTP routes, the jobs, the CLI and the MCP tools share: one per process (tests make
 * one per database). Features add optional collaborators here (e.g. a purchaser adapter).
 */
export interface Services {
  handle: DatabaseHandle;
  db: Db;
  config: Config;
  log: Logger;
  /** The service's clock; tests pass a fixed one. */
  now(): Date;
  /** Feature-specific collaborators, keyed by feature (set by createServices callers or tests). */
  extras: Record<string, unknown>;
}

export function createServices(handle: DatabaseHandle, config: Config, log: Logger, opts: { now?: () => Date; extras?: Record<string, unknown> } = {}): Services {
  return { handle, db: handle.db, config, log, now: opts.now ?? (() => new Date()), extras: opts.extras ?? {} };
}
