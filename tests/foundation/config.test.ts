// Limits and timeouts read from the environment: a value that is no whole number in range falls
// back to the documented default instead of becoming NaN (which would disable the limit).
import { expect, test } from "bun:test";
import { loadConfig } from "../../lib/config.ts";
import { postgresSettings } from "../../lib/db/postgres.ts";
import { downloadLimits } from "../../lib/reports/downloads.ts";

test("unset or unusable limits take their defaults; usable ones are taken as given", () => {
  for (const bad of [undefined, "", "abc", "-1", "1.5", "1e400"]) {
    const c = loadConfig({ MAX_BODY_BYTES: bad, DOWNLOAD_IDLE_TIMEOUT_SECONDS: bad, DOWNLOAD_QUEUE_TIMEOUT_SECONDS: bad, DOWNLOAD_CONCURRENCY: bad, LOG_LEVEL: bad, SHUTDOWN_GRACE_SECONDS: bad });
    expect({ bad, max: c.maxBodyBytes, idle: c.downloadIdleTimeoutSeconds, queue: c.downloadQueueTimeoutSeconds, slots: c.downloadConcurrency, level: c.logLevel, grace: c.shutdownGraceSeconds }).toEqual({
      bad,
      max: 1024 * 1024,
      idle: 30,
      queue: 10,
      slots: undefined,
      level: "info",
      grace: 25,
    });
    expect(postgresSettings({ DATABASE_POOL_SIZE: bad, DATABASE_CONNECT_TIMEOUT_MS: bad, DATABASE_STATEMENT_TIMEOUT_MS: bad })).toMatchObject({
      poolSize: 10,
      connectTimeoutMs: 1500,
      statementTimeoutMs: 60_000,
    });
  }
  const c = loadConfig({ MAX_BODY_BYTES: "2048", DOWNLOAD_IDLE_TIMEOUT_SECONDS: "0", DOWNLOAD_QUEUE_TIMEOUT_SECONDS: "3", DOWNLOAD_CONCURRENCY: "4", LOG_LEVEL: "WARN", SHUTDOWN_GRACE_SECONDS: "2" });
  expect([c.maxBodyBytes, c.downloadIdleTimeoutSeconds, c.downloadQueueTimeoutSeconds, c.downloadConcurrency, c.logLevel, c.shutdownGraceSeconds]).toEqual([2048, 0, 3, 4, "warn", 2]);
  // 0 cuts in-flight work at once; more than an hour (beyond what a timer holds safely) is out of range.
  expect([loadConfig({ SHUTDOWN_GRACE_SECONDS: "0" }).shutdownGraceSeconds, loadConfig({ SHUTDOWN_GRACE_SECONDS: "3600" }).shutdownGraceSeconds, loadConfig({ SHUTDOWN_GRACE_SECONDS: "3601" }).shutdownGraceSeconds]).toEqual([0, 3600, 25]);
  expect(postgresSettings({ DATABASE_POOL_SIZE: "0", DATABASE_STATEMENT_TIMEOUT_MS: "0" })).toMatchObject({ poolSize: 10, statementTimeoutMs: 0 });
});

test("download slots default to the pool size − 2 (at least 1); a configured number wins", () => {
  const c = loadConfig({});
  expect(downloadLimits(c, { poolSize: 10 })).toEqual({ idleTimeoutMs: 30_000, concurrency: 8, queueTimeoutMs: 10_000 });
  expect(downloadLimits(c, { poolSize: 1 }).concurrency).toBe(1);
  expect(downloadLimits(loadConfig({ DOWNLOAD_CONCURRENCY: "3" }), { poolSize: 10 }).concurrency).toBe(3);
});
