import type { Services } from "../lib/services.ts";
import { runScan } from "../lib/events/scans.ts";
import { expiringCommitmentsScan } from "../lib/events/commitments.ts";
import { staleConnectionsScan } from "../lib/events/billingSync.ts";
import { anomalyScan } from "../lib/events/anomalies.ts";
import type { Job } from "./index.ts";

/**
 * The events that time, not a change, brings about. Every replica wakes on the schedule; each
 * org is claimed per period in `event_scans` (lib/events/scans.ts), so it is scanned once per
 * UTC day (hour for staleness) whatever the number of replicas, and the events' dedupe keys make
 * a repeated scan write nothing twice.
 */

/** commitment.expiring: 90/30/7 days before a commitment's end (woken hourly, each org scanned once a UTC day). */
export const commitmentExpiryJob: Job = {
  name: "commitment-expiry",
  pattern: "0 23 * * * *",
  run: async (s: Services) => void (await runScan(s, expiringCommitmentsScan)),
};

/** billing_sync.stale: an enabled connection without new data for BILLING_STALE_DAYS (hourly). */
export const billingStaleJob: Job = {
  name: "billing-stale",
  pattern: "0 27 * * * *",
  run: async (s: Services) => void (await runScan(s, staleConnectionsScan)),
};

/** anomaly.detected: the daily scan of recent days (imports by a sync are scanned right after it; woken hourly, each org once a UTC day). */
export const anomalyScanJob: Job = {
  name: "anomaly-scan",
  pattern: "0 41 * * * *",
  run: async (s: Services) => void (await runScan(s, anomalyScan)),
};
