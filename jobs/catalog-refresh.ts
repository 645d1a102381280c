import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Services } from "../lib/services.ts";
import { refreshCatalog } from "../lib/catalog/refresh/index.ts";
import { priceSourcesOf, refreshScopeOf } from "../lib/catalog/refresh/scope.ts";
import { emitCatalogRefreshFailed } from "../lib/events/catalogRefresh.ts";
import { releaseRefreshLease } from "../lib/catalog/refresh/lease.ts";
import type { Job } from "./index.ts";

/**
 * Keeps the public catalog current from the providers' price APIs, once a day. Every replica
 * wakes on the schedule (hourly by default); the first to take the refresh lease on a UTC day
 * refreshes and marks the day done, the others find it busy or done. A refresh that could not
 * start or died is retried at the next wake.
 */
export const catalogRefreshJob: Job = {
  name: "catalog-refresh",
  pattern: "0 17 * * * *",
  schedule: (config) => config.catalogRefreshSchedule,
  async run(s: Services) {
    if (!s.config.catalogRefreshEnabled) return;
    // Unique per run: the lease must tell two runs apart even within one process.
    const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const day = s.now().toISOString().slice(0, 10);
    // A stopping process aborts the refresh (a feed not yet applied is read again by the next
    // refresher) and gives its lease back, so another replica refreshes the day at once.
    const held = s.shutdown.holdUntilReleased("catalog refresh lease", () => releaseRefreshLease(s.db, holder));
    let report;
    try {
      report = await refreshCatalog(s.db, { sources: priceSourcesOf(s.config), scope: refreshScopeOf(s.config), holder, log: s.log, daily: day, signal: s.shutdown.stopSignal });
    } finally {
      held();
    }
    // Feeds that failed keep their old prices: the orgs pricing from them are told (once a day).
    await emitCatalogRefreshFailed(s.db, report, day, s.now());
  },
};
