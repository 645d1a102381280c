import { Elysia } from "elysia";
import { measuredJobRun } from "../lib/metrics/process.ts";
import type { Services } from "../lib/services.ts";
import { errorForLog } from "../lib/log.ts";
import { autoPurchaseJob } from "./auto-purchase.ts";
import { freezePeriodsJob } from "./freeze-periods.ts";
import { oauthCleanupJob } from "./oauth-cleanup.ts";
import { idempotencyCleanupJob } from "./idempotency-cleanup.ts";
import { billingSyncJob } from "./billing-sync.ts";
import { purchasingInventoryJob } from "./purchasing.ts";
import { webhookDeliveryJob } from "./webhook-delivery.ts";
import { catalogRefreshJob } from "./catalog-refresh.ts";
import { anomalyScanJob, billingStaleJob, commitmentExpiryJob } from "./event-scans.ts";
import { budgetsJob } from "./budgets.ts";
import { emailDeliveryJob } from "./email-delivery.ts";

/** A scheduled job. `run` must claim its work in the database so replicas never double-run. */
export interface Job {
  name: string;
  /** Cron pattern (seconds optional), UTC. */
  pattern: string;
  /** The pattern from the configuration, when it is configurable. */
  schedule?(config: Services["config"]): string;
  run(s: Services): Promise<void>;
}

/** Registered jobs; features append theirs. */
export const jobs: Job[] = [autoPurchaseJob, freezePeriodsJob, oauthCleanupJob, idempotencyCleanupJob, billingSyncJob, purchasingInventoryJob, catalogRefreshJob, webhookDeliveryJob, budgetsJob, commitmentExpiryJob, billingStaleJob, anomalyScanJob, emailDeliveryJob];

/**
 * The cron plugin with every job. `@elysiajs/cron` starts jobs on `.use()`, and an async job
 * that throws would kill the process, so each run is wrapped in a catch that logs. A stopping
 * process starts no run, and the runs in flight are tracked so it waits for them (lib/shutdown).
 */
export async function jobsPlugin(s: Services) {
  const { cron } = await import("@elysiajs/cron");
  let plugin = new Elysia({ name: "jobs" });
  for (const job of jobs) {
    const options = (pattern: string) => ({
      name: job.name,
      pattern,
      timezone: "UTC",
      protect: true,
      run: () => {
        if (s.shutdown.stopRequested()) return;
        s.shutdown.trackWork(measuredJobRun(job.name, () => job.run(s))).catch((e) => s.log.error("job failed", { job: job.name, error: errorForLog(e) }));
      },
    });
    const configured = job.schedule?.(s.config) ?? job.pattern;
    let withJob;
    try {
      withJob = plugin.use(cron(options(configured)));
    } catch {
      // A configured pattern cron cannot read must not stop the server: the default runs instead.
      s.log.error("invalid job schedule; using the default", { job: job.name, schedule: configured, default: job.pattern });
      withJob = plugin.use(cron(options(job.pattern)));
    }
    plugin = withJob as any;
  }
  return plugin;
}

/** Stops the schedules of the jobs plugin (`app.store.cron` once used): no run starts after this. */
export function stopJobSchedules(app: { store: unknown }): number {
  const crons = (app.store as { cron?: Record<string, { stop(): void }> }).cron ?? {};
  for (const c of Object.values(crons)) c.stop();
  return Object.keys(crons).length;
}
