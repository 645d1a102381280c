/**
 * Configurable job schedules (CATALOG_REFRESH_SCHEDULE): a pattern cron cannot read must not stop
 * the server; the job runs on its default pattern and the log says so.
 */
import { expect, test, afterAll } from "bun:test";
import { createTestDatabase } from "../helpers/db.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { jobsPlugin } from "../../jobs/index.ts";
import { catalogRefreshJob } from "../../jobs/catalog-refresh.ts";

const db = await createTestDatabase("pglite");
afterAll(() => db.drop());

async function scheduled(schedule: string) {
  const logs: Record<string, any>[] = [];
  const s = createServices(db.handle, loadConfig({ PUBLIC_URL: "http://localhost", CATALOG_REFRESH_SCHEDULE: schedule }, { catalogRefreshEnabled: false }), createLogger("info", (l) => logs.push(JSON.parse(l))));
  const plugin: any = await jobsPlugin(s);
  const crons = plugin.store.cron as Record<string, { getPattern(): string; stop(): void }>;
  const pattern = crons["catalog-refresh"]!.getPattern();
  for (const c of Object.values(crons)) c.stop();
  return { pattern, logs };
}

test("a valid CATALOG_REFRESH_SCHEDULE is the catalog-refresh job's pattern", async () => {
  const { pattern, logs } = await scheduled("0 5 2 * * *");
  expect(pattern).toBe("0 5 2 * * *");
  expect(logs.filter((l) => l.level === "error")).toHaveLength(0);
});

test("an invalid CATALOG_REFRESH_SCHEDULE falls back to the default pattern and is logged, without stopping the start", async () => {
  const { pattern, logs } = await scheduled("not a cron");
  expect(pattern).toBe(catalogRefreshJob.pattern);
  expect(logs).toContainEqual(expect.objectContaining({ level: "error", msg: "invalid job schedule; using the default", job: "catalog-refresh", schedule: "not a cron" }));
});
