/**
 * The service's metrics for Prometheus (`/metrics`, docs/OPERATIONS.md "Metrics"): requests by
 * route template, the database and its pool, report download slots, refusals, and gauges read
 * from the database at scrape time (billing sync lag, purchase items, webhook deliveries, price
 * catalog age). One registry per Services; the process's own (runtime, jobs, imports) is added
 * to every scrape.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Services } from "../services.ts";
import { queryRows } from "../billing/sql.ts";
import { KIND_PROVIDER } from "../connections/kinds.ts";
import { downloadLimits, downloadSlots } from "../reports/downloads.ts";
import { processRegistry } from "./process.ts";

export interface ServiceMetrics {
  httpDuration: Histogram<"method" | "route" | "status">;
  statementTimeouts: Counter;
  rateLimitRefusals: Counter;
  /** The exposition text of every metric, the database's gauges read now. */
  scrape(): Promise<string>;
  contentType: string;
}

const byServices = new WeakMap<Services, ServiceMetrics>();

/** The metrics of one Services (created at its first use). */
export function serviceMetrics(s: Services): ServiceMetrics {
  let m = byServices.get(s);
  if (!m) byServices.set(s, (m = createServiceMetrics(s)));
  return m;
}

/** Purchase item states that are still under way (their oldest item's age is what an operator watches). */
const OPEN_PURCHASE_STATES = ["pending_approval", "approved", "submitting"];

function createServiceMetrics(s: Services): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];
  const httpDuration = new Histogram({
    name: "commitops_http_request_duration_seconds",
    help: "HTTP requests by route template, method and status: time to the response's head.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const statementTimeouts = new Counter({
    name: "commitops_db_statement_timeouts_total",
    help: "Requests whose database statement ran past its time limit and was cancelled.",
    registers,
  });
  const rateLimitRefusals = new Counter({
    name: "commitops_rate_limit_refusals_total",
    help: "Requests refused with 429 by the per-credential rate limit.",
    registers,
  });
  const dbUp = new Gauge({ name: "commitops_db_up", help: "1 while the database answers, 0 while the service knows it down.", registers });
  const poolMax = new Gauge({ name: "commitops_db_pool_max_connections", help: "The PostgreSQL pool's size (DATABASE_POOL_SIZE).", registers });
  const poolInUse = new Gauge({ name: "commitops_db_pool_connections_in_use", help: "Pool connections holding a transaction or a statement.", registers });
  const poolWaiting = new Gauge({ name: "commitops_db_pool_waiting", help: "Transactions waiting for a pool connection, and statements beyond the pool's size.", registers });
  const slotsInUse = new Gauge({ name: "commitops_report_download_slots_in_use", help: "Report downloads holding a download slot.", registers });
  const slotsQueued = new Gauge({ name: "commitops_report_download_slots_queued", help: "Report downloads waiting for a slot.", registers });
  const slotsMax = new Gauge({ name: "commitops_report_download_slots_max", help: "Download slots (DOWNLOAD_CONCURRENCY).", registers });
  const syncLag = new Gauge({
    name: "commitops_billing_sync_lag_seconds",
    help: "Seconds since an enabled billing connection last brought new data (connections that never did: absent).",
    labelNames: ["connection_id", "provider"] as const,
    registers,
  });
  const connections = new Gauge({ name: "commitops_billing_connections", help: "Enabled billing connections by status (ok, error, pending).", labelNames: ["status"] as const, registers });
  const purchaseItems = new Gauge({ name: "commitops_purchase_items", help: "Purchase items by state.", labelNames: ["state"] as const, registers });
  const purchaseOldest = new Gauge({
    name: "commitops_purchase_items_oldest_age_seconds",
    help: "Age of the oldest purchase item still in a state under way (pending_approval, approved, submitting), since its last change.",
    labelNames: ["state"] as const,
    registers,
  });
  // Labelled (state="pending") so that, like the others read from the database, they are left out of a scrape that could not read them.
  const deliveries = new Gauge({ name: "commitops_webhook_deliveries", help: "Webhook deliveries by state (pending: not yet delivered or given up).", labelNames: ["state"] as const, registers });
  const deliveryOldest = new Gauge({
    name: "commitops_webhook_deliveries_oldest_age_seconds",
    help: "Age of the oldest webhook delivery in the state (0 when none).",
    labelNames: ["state"] as const,
    registers,
  });
  const priceAge = new Gauge({
    name: "commitops_catalog_price_age_seconds",
    help: "Seconds since a refresh last confirmed a provider's live prices current.",
    labelNames: ["provider"] as const,
    registers,
  });
  const collectionFailures = new Counter({ name: "commitops_metrics_db_collection_failures_total", help: "Scrapes whose database gauges could not be read (left out of that scrape).", registers });
  const dbGauges = [syncLag, connections, purchaseItems, purchaseOldest, deliveries, deliveryOldest, priceAge];

  const readDatabaseGauges = async () => {
    const now = s.now().toISOString();
    const [lags, conns, items, pending, prices] = await Promise.all([
      queryRows<{ id: string; kind: string; lag: number }>(
        s.db,
        `SELECT c.id::text AS id, c.kind, EXTRACT(EPOCH FROM ($1::timestamptz - max(p.imported_at)))::float8 AS lag
         FROM billing_connections c JOIN billing_connection_periods p ON p.connection_id = c.id
         WHERE c.enabled GROUP BY c.id, c.kind`,
        [now],
      ),
      queryRows<{ status: string; n: number }>(s.db, `SELECT status, count(*)::int AS n FROM billing_connections WHERE enabled GROUP BY status`),
      queryRows<{ status: string; n: number; oldest: number }>(
        s.db,
        `SELECT status, count(*)::int AS n, EXTRACT(EPOCH FROM ($1::timestamptz - min(updated_at)))::float8 AS oldest FROM purchase_items GROUP BY status`,
        [now],
      ),
      queryRows<{ n: number; oldest: number | null }>(
        s.db,
        `SELECT count(*)::int AS n, EXTRACT(EPOCH FROM ($1::timestamptz - min(created_at)))::float8 AS oldest FROM webhook_deliveries WHERE status = 'pending'`,
        [now],
      ),
      queryRows<{ provider: string; age: number }>(
        s.db,
        `SELECT provider, EXTRACT(EPOCH FROM ($1::timestamptz - max(checked_at)))::float8 AS age FROM catalog_feeds WHERE checked_at IS NOT NULL GROUP BY provider`,
        [now],
      ),
    ]);
    for (const g of dbGauges) g.reset();
    for (const r of lags) syncLag.set({ connection_id: r.id, provider: KIND_PROVIDER[r.kind as keyof typeof KIND_PROVIDER] ?? r.kind }, Math.max(0, Number(r.lag)));
    for (const r of conns) connections.set({ status: r.status }, Number(r.n));
    for (const r of items) {
      purchaseItems.set({ state: r.status }, Number(r.n));
      if (OPEN_PURCHASE_STATES.includes(r.status)) purchaseOldest.set({ state: r.status }, Math.max(0, Number(r.oldest)));
    }
    deliveries.set({ state: "pending" }, Number(pending[0]?.n ?? 0));
    deliveryOldest.set({ state: "pending" }, Math.max(0, Number(pending[0]?.oldest ?? 0)));
    for (const r of prices) priceAge.set({ provider: r.provider }, Math.max(0, Number(r.age)));
  };

  return {
    httpDuration,
    statementTimeouts,
    rateLimitRefusals,
    contentType: registry.contentType,
    async scrape() {
      const status = s.handle.status?.() ?? { up: true };
      dbUp.set(status.up ? 1 : 0);
      if (status.pool) {
        poolMax.set(s.handle.poolSize);
        poolInUse.set(status.pool.inUse);
        poolWaiting.set(status.pool.waiting);
      }
      const slots = downloadSlots(s.handle);
      slotsInUse.set(slots.inUse);
      slotsQueued.set(slots.queued);
      slotsMax.set(downloadLimits(s.config, s.handle).concurrency);
      // While the database is down the scrape still answers: its gauges are left out, not stale.
      try {
        if (!status.up) throw new Error("the database is down");
        await readDatabaseGauges();
      } catch {
        for (const g of dbGauges) g.reset();
        collectionFailures.inc();
      }
      return (await processRegistry.metrics()) + (await registry.metrics());
    },
  };
}

/** The exposition text of every metric, as Prometheus reads it. */
export async function metricsResponse(metrics: ServiceMetrics): Promise<Response> {
  return new Response(await metrics.scrape(), { headers: { "content-type": metrics.contentType, "cache-control": "no-store" } });
}
