/**
 * Prometheus metrics (lib/metrics): `/metrics` behind its own token or on a loopback port,
 * requests by route template (never the raw path), refusals, and the gauges read from the
 * database at scrape time. The outage test (the down gauge moving) is in tests/foundation/outage.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { listenMetrics } from "../../scripts/bun-server.ts";
import { measuredJobRun } from "../../lib/metrics/process.ts";
import { seriesValue } from "../helpers/prometheus.ts";

const NOW = new Date("2026-11-20T12:00:00Z");
const TOKEN = "scrape-token-0123456789";

describeEachDb("metrics", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { metricsToken: TOKEN, apiRateLimitPerMinute: 3 } });
  const scrape = async () => {
    const r = await t.request("GET", "/metrics", { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    return r.text();
  };

  test("/metrics answers only the scraper's token: none or another is 401 in the error body, an API key is not a metrics token", async () => {
    for (const authorization of [undefined, "Bearer wrong", `Bearer ${TOKEN}x`, `Basic ${btoa(`x:${TOKEN}`)}`, `Bearer ${t.org.key}`]) {
      const r = await t.request("GET", "/metrics", { key: null, headers: authorization ? { authorization } : {} });
      expect([authorization, r.status]).toEqual([authorization, 401]);
      const body = (await r.json()) as { code: number; message: string };
      expect(body.code).toBe(401);
      expect(body.message).toContain("metrics token");
    }
    const text = await scrape();
    // The runtime's defaults and ours.
    expect(seriesValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(text).toContain("# TYPE commitops_http_request_duration_seconds histogram");
  });

  test("requests are counted by route template, method and status; the raw path (an org id) is never a label", async () => {
    const before = seriesValue(await scrape(), "commitops_http_request_duration_seconds_count", { route: "/beta/v1/org/:org_id/commitments", method: "GET", status: "200" }) ?? 0;
    for (let i = 0; i < 2; i++) expect((await t.orgRequest("GET", "/commitments", { key: t.org.key })).status).toBe(200);
    expect((await t.request("GET", "/no/such/path", { key: null })).status).toBe(404);
    const text = await scrape();
    expect(seriesValue(text, "commitops_http_request_duration_seconds_count", { route: "/beta/v1/org/:org_id/commitments", method: "GET", status: "200" })).toBe(before + 2);
    expect(seriesValue(text, "commitops_http_request_duration_seconds_count", { route: "unmatched", method: "GET", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(t.org.id);
    expect(text).not.toContain("/no/such/path");
  });

  test("a 429 from the rate limit is counted, under the route it was refused on", async () => {
    const other = await t.newOrg("Rate-limited org");
    const before = seriesValue(await scrape(), "commitops_rate_limit_refusals_total") ?? 0;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await t.request("GET", `/beta/v1/org/${other.id}`, { key: other.key })).status);
    const refused = statuses.filter((s) => s === 429).length;
    expect(refused).toBeGreaterThan(0);
    const text = await scrape();
    expect(seriesValue(text, "commitops_rate_limit_refusals_total")).toBe(before + refused);
    expect(seriesValue(text, "commitops_http_request_duration_seconds_count", { route: "/beta/v1/org/:org_id", status: "429" })).toBeGreaterThanOrEqual(refused);
  });

  test("billing sync lag, connections by status, purchase items by state with the oldest under way, webhook backlog and price age are read from the database at each scrape", async () => {
    const org = await t.newOrg("Gauges org");
    const q = (text: string, params: unknown[] = []) => t.s.handle.query<any>(text, params);
    const [conn] = await q(`INSERT INTO billing_connections (org_id, name, kind, config, status) VALUES ($1, 'cur', 'aws_data_exports', '{}', 'ok') RETURNING id`, [org.id]);
    await q(`INSERT INTO billing_connection_periods (connection_id, month, fingerprint, imported_at) VALUES ($1, '2026-10-01', 'a', $2), ($1, '2026-11-01', 'b', $3)`, [
      conn.id,
      "2026-11-01T12:00:00Z",
      "2026-11-17T12:00:00Z",
    ]);
    const [failing] = await q(`INSERT INTO billing_connections (org_id, name, kind, config, status) VALUES ($1, 'bq', 'gcp_bigquery_focus', '{}', 'error') RETURNING id`, [org.id]);
    const [plan] = await q(`INSERT INTO commitment_plans (org_id, provider, status, lookback_days, total_upfront_cost, monthly_cost, monthly_net_savings) VALUES ($1, 'aws', 'generated', 30, '0', '0', '0') RETURNING id`, [org.id]);
    const [p] = await q(
      `INSERT INTO purchases (org_id, provider, plan_id, idempotency_key, purchaser, status, total_upfront_cost, monthly_net_savings, item_count) VALUES ($1, 'aws', $2, 'k', 'ledger', 'submitting', '0', '0', 2) RETURNING id`,
      [org.id, plan.id],
    );
    for (const [position, status, updated] of [[1, "submitting", "2026-11-20T11:40:00Z"], [2, "confirmed", "2026-11-01T00:00:00Z"]] as const)
      await q(
        `INSERT INTO purchase_items (org_id, purchase_id, position, provider, status, token, commitment_type, contract_term, payment_option, region, amount,
           planned_upfront, planned_hourly, monthly_net_savings, duration_seconds, updated_at)
         VALUES ($1, $2, $3, 'aws', $4, $5, 'compute_savings_plan', 'one_year', 'no_upfront', 'us-east-1', '1', '0', '1', '1', 31536000, $6)`,
        [org.id, p.id, position, status, crypto.randomUUID(), updated],
      );
    await q(`INSERT INTO catalog_feeds (feed, provider, checked_at) VALUES ('metrics-test-feed', 'azure', $1)`, ["2026-11-10T12:00:00Z"]);

    const text = await scrape();
    // Newest data 3 days before the service's clock; the connection without data has no lag.
    expect(seriesValue(text, "commitops_billing_sync_lag_seconds", { connection_id: conn.id, provider: "aws" })).toBe(3 * 86400);
    expect(seriesValue(text, "commitops_billing_sync_lag_seconds", { connection_id: failing.id })).toBeUndefined();
    expect(seriesValue(text, "commitops_billing_connections", { status: "error" })).toBeGreaterThanOrEqual(1);
    expect(seriesValue(text, "commitops_purchase_items", { state: "submitting" })).toBeGreaterThanOrEqual(1);
    expect(seriesValue(text, "commitops_purchase_items_oldest_age_seconds", { state: "submitting" })).toBeGreaterThanOrEqual(20 * 60);
    // Terminal states have counts, not ages.
    expect(seriesValue(text, "commitops_purchase_items_oldest_age_seconds", { state: "confirmed" })).toBeUndefined();
    expect(seriesValue(text, "commitops_catalog_price_age_seconds", { provider: "azure" })).toBeGreaterThanOrEqual(10 * 86400);
    expect(seriesValue(text, "commitops_db_up")).toBe(1);
    expect(seriesValue(text, "commitops_webhook_deliveries", { state: "pending" })).toBe(0);
    if (driver === "postgres") {
      expect(seriesValue(text, "commitops_db_pool_max_connections")).toBe(t.s.handle.poolSize);
      expect(seriesValue(text, "commitops_db_pool_waiting")).toBe(0);
    }

    // Gone from the database, gone from the next scrape (not a stale value).
    await q(`UPDATE billing_connections SET enabled = false WHERE id = $1`, [conn.id]);
    await q(`DELETE FROM catalog_feeds WHERE feed = 'metrics-test-feed'`);
    const after = await scrape();
    expect(seriesValue(after, "commitops_billing_sync_lag_seconds", { connection_id: conn.id })).toBeUndefined();
    expect(seriesValue(after, "commitops_catalog_price_age_seconds", { provider: "azure" })).toBeUndefined();
  });

  test("a job's runs are counted by outcome, with its duration and the time of its last success", async () => {
    const job = `metrics-test-${driver}`;
    await measuredJobRun(job, async () => {});
    await expect(measuredJobRun(job, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    const text = await scrape();
    expect(seriesValue(text, "commitops_job_runs_total", { job_name: job, outcome: "success" })).toBe(1);
    expect(seriesValue(text, "commitops_job_runs_total", { job_name: job, outcome: "failure" })).toBe(1);
    expect(seriesValue(text, "commitops_job_duration_seconds_count", { job_name: job })).toBe(2);
    expect(Math.abs(seriesValue(text, "commitops_job_last_success_timestamp_seconds", { job_name: job })! - Date.now() / 1000)).toBeLessThan(60);
  });
});

describeEachDb("metrics without a token", (driver) => {
  const t = useTestApp(driver);
  let server: ReturnType<typeof listenMetrics> | undefined;
  afterAll(() => server?.stop(true));

  test("no METRICS_TOKEN: /metrics is not served on the service's port; METRICS_PORT serves it on loopback without a token, and nothing else", async () => {
    expect((await t.request("GET", "/metrics", { key: null })).status).toBe(404);
    expect((await t.request("GET", "/metrics", { key: t.org.key })).status).toBe(404);
    server = listenMetrics(t.s, 0);
    const base = `http://127.0.0.1:${server.port}`;
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(seriesValue(await r.text(), "commitops_db_up")).toBe(1);
    expect((await fetch(`${base}/beta/v1/org/${t.org.id}`, { headers: { authorization: `Bearer ${t.org.key}` } })).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: "POST" })).status).toBe(404);
  });
});
