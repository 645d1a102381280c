import { sql } from "drizzle-orm";
import type { Db } from "../../db/index.ts";
import { rowsOf } from "../../billing/sql.ts";

const REFRESH = "refresh";
const DAILY = "daily";

/**
 * Takes the refresh lease (one refresh at a time across replicas and CLI runs) unless a lease is
 * still running (holders are unique per run). A holder that dies mid-refresh loses it when it lapses.
 */
export async function takeRefreshLease(db: Db, holder: string, seconds: number): Promise<boolean> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`
      INSERT INTO catalog_refresh_lease (name, holder, lease_until, started_at) VALUES (${REFRESH}, ${holder}, now() + make_interval(secs => ${seconds}), now())
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until, started_at = excluded.started_at, finished_at = NULL
        WHERE catalog_refresh_lease.lease_until IS NULL OR catalog_refresh_lease.lease_until < now()
      RETURNING name`),
  );
  return rows.length === 1;
}

/** Extends a held lease; false when it was lost (lapsed and taken by another holder). */
export async function renewRefreshLease(db: Db, holder: string, seconds: number): Promise<boolean> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`UPDATE catalog_refresh_lease SET lease_until = now() + make_interval(secs => ${seconds}) WHERE name = ${REFRESH} AND holder = ${holder} RETURNING name`),
  );
  return rows.length === 1;
}

export async function releaseRefreshLease(db: Db, holder: string): Promise<void> {
  await db.execute(sql`UPDATE catalog_refresh_lease SET lease_until = NULL, finished_at = now() WHERE name = ${REFRESH} AND holder = ${holder}`);
}

/** Who holds the lease now, if anyone. */
export async function refreshLeaseHolder(db: Db): Promise<{ holder: string; started_at: string } | null> {
  const [row] = rowsOf<{ holder: string; started_at: string }>(
    await db.execute(sql`SELECT holder, started_at::text AS started_at FROM catalog_refresh_lease WHERE name = ${REFRESH} AND lease_until > now()`),
  );
  return row ?? null;
}

/** Whether the daily refresh of `day` (YYYY-MM-DD, UTC) has run; ask under the refresh lease. */
export async function dailyRefreshDone(db: Db, day: string): Promise<boolean> {
  const [row] = rowsOf<{ run_date: string | null }>(await db.execute(sql`SELECT run_date FROM catalog_refresh_lease WHERE name = ${DAILY}`));
  return !!row?.run_date && row.run_date >= day;
}

/** Marks the daily refresh of `day` done (after it ran, under the refresh lease). */
export async function markDailyRefresh(db: Db, day: string, holder: string): Promise<void> {
  await db.execute(sql`
    INSERT INTO catalog_refresh_lease (name, holder, run_date, started_at, finished_at) VALUES (${DAILY}, ${holder}, ${day}, now(), now())
    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, run_date = excluded.run_date, finished_at = now()
      WHERE catalog_refresh_lease.run_date IS NULL OR catalog_refresh_lease.run_date < excluded.run_date`);
}
