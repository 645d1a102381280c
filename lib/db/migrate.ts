import { migrations } from "../../drizzle/migrations.gen.ts";
import type { DatabaseHandle } from "./types.ts";

/** Arbitrary constant: the advisory lock every replica takes while migrating. */
const MIGRATION_LOCK_KEY = 727_001;

/**
 * Applies the pending migrations in one transaction under a transaction-scoped advisory lock,
 * so several replicas starting at once apply each migration exactly once. The SQL is embedded
 * (drizzle/migrations.gen.ts) so the compiled binary needs no migration folder on disk.
 */
export async function migrate(handle: DatabaseHandle): Promise<string[]> {
  if (await upToDate(handle)) return [];
  const applied: string[] = [];
  await handle.db.transaction(async (tx) => {
    const run = async (text: string) => (tx as any).execute(rawSql(text));
    // A migration (or the wait for another replica's) may outlast the sessions' statement_timeout.
    await run(`SET LOCAL statement_timeout = 0`);
    await run(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await run(`CREATE TABLE IF NOT EXISTS commitops_migrations (tag text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const res: any = await run(`SELECT tag FROM commitops_migrations`);
    const done = new Set((Array.isArray(res) ? res : res.rows).map((r: any) => r.tag));
    for (const m of migrations) {
      if (done.has(m.tag)) continue;
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
async function upToDate(handle: DatabaseHandle): Promise<boolean> {
  let rows: { tag: string }[];
  try {
    rows = await handle.query<{ tag: string }>(`SELECT tag FROM commitops_migrations`);
  } catch {
    return false; // no table yet (a new database), or anything else: the locked path decides
  }
  const done = new Set(rows.map((r) => r.tag));
  return migrations.every((m) => done.has(m.tag));
}

import { sql } from "drizzle-orm";
function rawSql(text: string) {
  return sql.raw(text);
}
