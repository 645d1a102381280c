import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import type { Provider } from "../pricing/index.ts";
import { rowsOf } from "../billing/sql.ts";

/**
 * `catalog_feeds`: per feed, what its last successful refresh saw (the cursor for conditional
 * requests) and when its prices were last confirmed current (the freshness shown in pricing).
 * Written by the refresh (lib/catalog/refresh) and by `catalog import` into the public catalog.
 */

export interface FeedCursor {
  version: string | null;
  etag: string | null;
}

/** The cursor of the feed's last successful refresh (null: never refreshed). */
export async function feedCursor(db: DbOrTx, feed: string): Promise<FeedCursor | null> {
  const [row] = rowsOf<{ version: string | null; etag: string | null; checked_at: string | null }>(
    await db.execute(sql`SELECT version, etag, checked_at FROM catalog_feeds WHERE feed = ${feed}`),
  );
  return row && row.checked_at ? { version: row.version, etag: row.etag } : null;
}

/**
 * The feed's prices were confirmed current now (and changed, if `changed`); with a cursor, it is
 * the one to compare the next refresh with. Clears the last failure.
 */
export async function recordFeedChecked(db: DbOrTx, f: { feed: string; provider: Provider; changed: boolean; cursor?: FeedCursor }): Promise<void> {
  const keepCursor = f.cursor === undefined;
  await db.execute(sql`
    INSERT INTO catalog_feeds (feed, provider, version, etag, checked_at, changed_at)
    VALUES (${f.feed}, ${f.provider}, ${f.cursor?.version ?? null}, ${f.cursor?.etag ?? null}, now(), ${f.changed ? sql`now()` : null})
    ON CONFLICT (feed) DO UPDATE SET
      version = CASE WHEN ${keepCursor} THEN catalog_feeds.version ELSE excluded.version END,
      etag = CASE WHEN ${keepCursor} THEN catalog_feeds.etag ELSE excluded.etag END,
      checked_at = now(), changed_at = coalesce(excluded.changed_at, catalog_feeds.changed_at), last_error = NULL, last_error_at = NULL`);
}

/** The feed could not be refreshed: its cause (never a body or a secret); its prices and cursor stay. */
export async function recordFeedFailure(db: DbOrTx, f: { feed: string; provider: Provider; error: string }): Promise<void> {
  await db.execute(sql`
    INSERT INTO catalog_feeds (feed, provider, last_error, last_error_at) VALUES (${f.feed}, ${f.provider}, ${f.error}, now())
    ON CONFLICT (feed) DO UPDATE SET last_error = excluded.last_error, last_error_at = now()`);
}
