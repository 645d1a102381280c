import { migrations } from "../../drizzle/migrations.gen.ts";
import type { DatabaseHandle } from "./types.ts";
import { pgErrorCode } from "./errors.ts";
import { DEFAULT_MIGRATION_LOCK_TIMEOUT_MS } from "../config.ts";

/** Arbitrary constant: the advisory lock every replica takes while migrating. */
const MIGRATION_LOCK_KEY = 727_001;

export interface Migration {
  tag: string;
  statements: string[];
}

export interface MigrateOptions {
  /**
   * How long one statement of a migration may wait for a table lock (the config's
   * `migrationLockTimeoutMs`, MIGRATION_LOCK_TIMEOUT_SECONDS; default 5 s). An ALTER queued behind a long report query would otherwise hold every later
   * statement on that table behind its own ACCESS EXCLUSIVE request: the replicas still serving
   * would stall. Past it the migration rolls back whole and is tried again.
   */
  lockTimeoutMs?: number;
  /** Tries before the start fails (default 4: after 1, 2 and 4 s of backoff). */
  attempts?: number;
  /** The migrations to apply (default: this build's, drizzle/migrations.gen.ts). */
  migrations?: Migration[];
}

/** A migration kept waiting for a table lock on every try: nothing of it was applied. */
export class MigrationLockTimeoutError extends Error {
  constructor(
    readonly tag: string,
    readonly lockTimeoutMs: number,
    readonly attempts: number,
  ) {
    super(
      `${tag ? `Migration ${tag}` : "The migrations table"} could not take a table lock within ${lockTimeoutMs / 1000} s on ${attempts} tries ` +
        `(a long query or an open transaction holds the table); nothing was applied. Start again once it ends, ` +
        `or raise MIGRATION_LOCK_TIMEOUT_SECONDS.`,
    );
    this.name = "MigrationLockTimeoutError";
  }
}

const LOCK_NOT_AVAILABLE = "55P03";

/**
 * Applies the pending migrations in one transaction under a transaction-scoped advisory lock,
 * so several replicas starting at once apply each migration exactly once. The SQL is embedded
 * (drizzle/migrations.gen.ts) so the compiled binary needs no migration folder on disk. Each
 * statement's wait for a table lock is bounded (`lockTimeoutMs`): a rolling upgrade never
 * stalls the replicas still serving behind a migration that waits (docs/OPERATIONS.md, Upgrades).
 */
export async function migrate(handle: DatabaseHandle, opts: MigrateOptions = {}): Promise<string[]> {
  const list = opts.migrations ?? migrations;
  if (await upToDate(handle, list)) return [];
  const lockTimeoutMs = opts.lockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
  const attempts = Math.max(1, opts.attempts ?? 4);
  for (let attempt = 1; ; attempt++) {
    let current = "";
    try {
      return await applyPending(handle, list, lockTimeoutMs, (tag) => (current = tag));
    } catch (e) {
      if (pgErrorCode(e) !== LOCK_NOT_AVAILABLE) throw e;
      if (attempt >= attempts) throw new MigrationLockTimeoutError(current, lockTimeoutMs, attempts);
      await new Promise((r) => setTimeout(r, 1000 * 2 ** (attempt - 1)));
    }
  }
}

async function applyPending(handle: DatabaseHandle, list: Migration[], lockTimeoutMs: number, applying: (tag: string) => void): Promise<string[]> {
  const applied: string[] = [];
  await handle.db.transaction(async (tx) => {
    const run = async (text: string) => (tx as any).execute(rawSql(text));
    // A migration (or the wait for another replica's) may outlast the sessions' statement_timeout.
    await run(`SET LOCAL statement_timeout = 0`);
    // Waiting for another replica's migration is not bounded: only the waits for table locks are.
    await run(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await run(`SET LOCAL lock_timeout = ${Math.max(0, Math.round(lockTimeoutMs))}`);
    await run(`CREATE TABLE IF NOT EXISTS commitops_migrations (tag text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const res: any = await run(`SELECT tag FROM commitops_migrations`);
    const done = new Set((Array.isArray(res) ? res : res.rows).map((r: any) => r.tag));
    for (const m of list) {
      if (done.has(m.tag)) continue;
      applying(m.tag);
      for (const stmt of m.statements) if (stmt.trim()) await run(stmt);
      await run(`INSERT INTO commitops_migrations (tag) VALUES ('${m.tag.replace(/'/g, "''")}')`);
      applied.push(m.tag);
    }
  });
  return applied;
}

/**
 * The migrations this version has that the database has not applied (all of them on a database
 * never migrated), and those the database has that this version does not know (a newer
 * version applied them: expected while a rolling upgrade runs).
 */
export async function migrationState(handle: DatabaseHandle): Promise<{ pending: string[]; unknown: string[] }> {
  const exists = await handle.query<{ t: string | null }>(`SELECT to_regclass('commitops_migrations')::text AS t`);
  const rows = exists[0]?.t ? await handle.query<{ tag: string }>(`SELECT tag FROM commitops_migrations`) : [];
  const done = new Set(rows.map((r) => r.tag));
  const known = new Set(migrations.map((m) => m.tag));
  return { pending: migrations.filter((m) => !done.has(m.tag)).map((m) => m.tag), unknown: [...done].filter((t) => !known.has(t)).sort() };
}

/**
 * The common case, a database already migrated, in one read without a transaction or the lock
 * (a round trip instead of six at every start). A migration another replica is applying is not
 * committed, so it reads as missing: the locked path then waits for it.
 */
async function upToDate(handle: DatabaseHandle, list: Migration[]): Promise<boolean> {
  let rows: { tag: string }[];
  try {
    rows = await handle.query<{ tag: string }>(`SELECT tag FROM commitops_migrations`);
  } catch {
    return false; // no table yet (a new database), or anything else: the locked path decides
  }
  const done = new Set(rows.map((r) => r.tag));
  return list.every((m) => done.has(m.tag));
}

import { sql } from "drizzle-orm";
function rawSql(text: string) {
  return sql.raw(text);
}
