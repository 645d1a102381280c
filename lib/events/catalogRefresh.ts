/**
 * catalog.refresh_failed. The price catalog is one for all orgs, so its failure is told to the
 * orgs it matters to, cheaply (one query, one transaction, once a day):
 * - orgs that buy on their own from it: a purchasing connection, or a commitment plan template
 *   with auto-purchase on (plans and orders are priced from the catalog), and
 * - orgs that asked for it: an enabled webhook endpoint of theirs subscribed to this type (or `*`).
 * Other orgs see stale prices flagged on their estimates (`stale` on a Pricing) and need no event.
 * The daily job retries a failed refresh every hour: the dedupe key (the UTC day) tells each org
 * once a day whatever the number of attempts or replicas.
 */
import type { Db } from "../db/index.ts";
import { queryRows } from "../billing/sql.ts";
import type { RefreshReport } from "../catalog/refresh/index.ts";
import type { Provider } from "../providers.ts";
import type { CatalogRefreshFailedData } from "./data/billing.ts";
import { emitEvent } from "./emit.ts";
import { catalogLinks } from "./links.ts";

/** Failures listed in one event at most. */
const MAX_FAILURES = 20;

/** The orgs told of a failed refresh (see the module's comment). */
export async function catalogFailureRecipients(db: Db): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    db,
    `SELECT o.id::text AS id FROM organizations o
     WHERE EXISTS (SELECT 1 FROM purchasing_connections p WHERE p.org_id = o.id)
        OR EXISTS (SELECT 1 FROM commitment_plan_templates t WHERE t.org_id = o.id AND t.auto_purchase_enabled AND t.schedule IS NOT NULL)
        OR EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.org_id = o.id AND w.enabled AND ('catalog.refresh_failed' = ANY(w.event_types) OR '*' = ANY(w.event_types)))
     ORDER BY o.id`,
  );
  return rows.map((r) => r.id);
}

/** Writes catalog.refresh_failed to every recipient when the refresh of `day` (YYYY-MM-DD) failed in part or whole; returns how many were written. */
export async function emitCatalogRefreshFailed(db: Db, report: RefreshReport, day: string, now: Date): Promise<number> {
  if (report.status !== "partial" && report.status !== "failed") return 0;
  const failures: CatalogRefreshFailedData["failures"] = [
    ...report.providers.filter((p) => p.error).map((p) => ({ provider: p.provider, feed: null, error: p.error! })),
    ...report.feeds.filter((f) => f.status === "failed").map((f) => ({ provider: f.provider, feed: f.feed, error: f.error ?? "failed" })),
  ];
  const data: CatalogRefreshFailedData = {
    day,
    status: report.status,
    feeds_failed: report.feeds.filter((f) => f.status === "failed").length,
    feeds_refreshed: report.feeds.filter((f) => f.status !== "failed").length,
    failures: failures.slice(0, MAX_FAILURES),
    prices_kept: true,
  };
  const provider: Provider = failures[0]?.provider ?? "aws";
  const orgs = await catalogFailureRecipients(db);
  if (!orgs.length) return 0;
  return db.transaction(async (tx) => {
    let n = 0;
    for (const orgId of orgs) {
      const e = await emitEvent(tx, { orgId, type: "catalog.refresh_failed", occurredAt: now, data, ...catalogLinks(orgId, provider), dedupeKey: `catalog_refresh_failed:${day}` });
      if (e) n++;
    }
    return n;
  });
}
