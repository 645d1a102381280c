/**
 * One replica's webhook delivery job, alone in a process (the crash tests start two or three of
 * these against one PostgreSQL database): the registered job, started every 250 ms without
 * waiting for the previous run, as the cron plugin does every second. Its environment is the
 * server's (DATABASE_URL, COMMITOPS_SECRET_KEY, …) plus the job's test hooks
 * (COMMITOPS_TEST_WEBHOOK_CRASH, COMMITOPS_TEST_WEBHOOK_LEASE_MS).
 */
import { loadConfig } from "../../lib/config.ts";
import { openDb } from "../../lib/db/index.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { webhookDeliveryJob } from "../../jobs/webhook-delivery.ts";

const config = loadConfig();
const handle = await openDb({ url: config.databaseUrl, migrate: false });
const s = createServices(handle, config, createLogger("silent"));
process.stderr.write(`worker-ready ${process.pid}\n`);
const timer = setInterval(() => {
  webhookDeliveryJob.run(s).catch((e) => process.stderr.write(`worker-error ${e instanceof Error ? e.message : String(e)}\n`));
}, 250);
process.on("SIGTERM", () => {
  clearInterval(timer);
  void handle.close().finally(() => process.exit(0));
});
