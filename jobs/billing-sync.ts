import type { Services } from "../lib/services.ts";
import { runDueSyncs } from "../lib/connections/sync.ts";
import type { Job } from "./index.ts";

/**
 * Pulls the providers' exports of every due billing connection (BILLING_SYNC_INTERVAL_MINUTES
 * after its last sync, sooner when asked for or retrying). Safe on any number of replicas: each
 * connection is claimed with a lease in its row, and a period is replaced in one transaction.
 */
/** Services with a sync loop running in this process: a long import must not stack up a new loop every minute. */
const running = new WeakSet<Services>();

export const billingSyncJob: Job = {
  name: "billing-sync",
  pattern: "0 * * * * *",
  async run(s: Services) {
    if (running.has(s)) return;
    running.add(s);
    try {
      await runDueSyncs(s);
    } finally {
      running.delete(s);
    }
  },
};
