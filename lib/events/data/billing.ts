import { t, type Static, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";
import { CONNECTION_KINDS, FAILURE_CAUSES } from "../../connections/source.ts";
import { PROVIDERS } from "../../providers.ts";

/**
 * The data documents of billing_sync.*, period.finalized, commitment.expiring, anomaly.detected
 * and catalog.refresh_failed (version 1), fixed when the event was written. Money is in the
 * document's `currency`, rounded as the API shows it (cents; hourly rates to 6 decimals).
 */

const Str = (description?: string) => t.Union([t.String(), t.Null()], description ? { description } : {});
const Instant = (description: string) => t.Union([t.String({ format: "date-time" }), t.Null()], { description });
const Provider = t.Union(PROVIDERS.map((p) => t.Literal(p)), { description: "aws, azure or gcp" });
const Month = (description: string) => t.String({ pattern: "^\\d{4}-\\d{2}$", description });

/** The billing connection an event is about (GET /billing-connections/{id} shows it now). */
const ConnectionRef = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  kind: t.Union(CONNECTION_KINDS.map((k) => t.Literal(k))),
  provider: Provider,
});

/** Why a sync failed: its cause, and words fit for anyone who may read events (no bucket, table or account names: those are on the run, for connections:read). */
export const SYNC_ERROR_CAUSES = [...FAILURE_CAUSES, "internal"] as const;

export const BillingSyncSucceededData = t.Object({
  connection: ConnectionRef,
  run_id: t.String({ format: "uuid", description: "The run (GET /billing-connections/{id}/runs)" }),
  trigger: t.Union([t.Literal("manual"), t.Literal("schedule")]),
  started_at: Instant("When the run started"),
  finished_at: t.String({ format: "date-time" }),
  periods_seen: t.Integer({ description: "Billing periods the export holds" }),
  periods_imported: t.Integer({ description: "Periods whose new version was imported (each replaced in one transaction)" }),
  periods_unchanged: t.Integer({ description: "Periods already imported in this version" }),
  rows_imported: t.Integer(),
  months_imported: t.Array(Month("YYYY-MM"), { description: "The billing periods imported, oldest first" }),
  recovered: t.Boolean({ description: "The sync succeeded after failed ones (the connection is `ok` again)" }),
});
export type BillingSyncSucceededData = Static<typeof BillingSyncSucceededData>;

export const BillingSyncFailedData = t.Object({
  connection: ConnectionRef,
  run_id: t.String({ format: "uuid" }),
  trigger: t.Union([t.Literal("manual"), t.Literal("schedule")]),
  started_at: Instant("When the run started"),
  finished_at: t.String({ format: "date-time" }),
  error: t.Object({
    cause: t.Union(SYNC_ERROR_CAUSES.map((c) => t.Literal(c)), {
      description: "credentials, not_found, permission, no_export, not_focus, format, unreachable (the provider's side), internal (ours; retried)",
    }),
    message: t.String({ description: "What the cause means and what to do; the run's own message (GET …/runs, connections:read) names the bucket or table" }),
  }),
  consecutive_failures: t.Integer({ description: "Failed runs in a row, this one included" }),
  connection_status: t.Union([t.Literal("pending"), t.Literal("ok"), t.Literal("error")], { description: "`error` once 3 runs in a row failed" }),
  next_attempt_at: t.String({ format: "date-time", description: "When the sync is retried (with backoff)" }),
  periods_imported: t.Integer({ description: "Periods imported before the failure (they are kept)" }),
});
export type BillingSyncFailedData = Static<typeof BillingSyncFailedData>;

export const BillingSyncStaleData = t.Object({
  connection: ConnectionRef,
  last_new_data_at: Instant("When the connection last imported a new version of a billing period; null: never"),
  newest_month: t.Union([Month("YYYY-MM"), t.Null()], { description: "The newest billing period imported from it" }),
  days_without_new_data: t.Integer({ description: "Whole days since last_new_data_at (or since the connection was created)" }),
  stale_after_days: t.Integer({ description: "The threshold (BILLING_STALE_DAYS)" }),
  last_synced_at: Instant("Its last successful sync (which found nothing new)"),
  connection_status: t.Union([t.Literal("pending"), t.Literal("ok"), t.Literal("error")]),
  last_error_cause: Str("The cause of its last failure (as in billing_sync.failed), if it is failing"),
});
export type BillingSyncStaleData = Static<typeof BillingSyncStaleData>;

export const PeriodFinalizedData = t.Object({
  provider: Provider,
  period: Month("The billing period (invoice month), YYYY-MM"),
  year: t.Integer(),
  month: t.Integer({ minimum: 1, maximum: 12 }),
  closed_at: Instant("When its invoice was marked closed"),
  finalized_at: t.String({ format: "date-time", description: "When its reports were frozen: their figures for this month no longer change" }),
  reports: t.Array(t.String(), { description: "The report types frozen (GET /allocation-reports/{report_type}?year=&month=)" }),
});
export type PeriodFinalizedData = Static<typeof PeriodFinalizedData>;

export const NOTICE_DAYS = [90, 30, 7] as const;

export const CommitmentExpiringData = t.Object({
  commitment: t.Object({
    id: t.String({ format: "uuid", description: "GET /commitments/{id}" }),
    provider: Provider,
    provider_commitment_id: t.String({ description: "The provider's id (ARN, reservation id, CUD name)" }),
    name: Str(),
    commitment_type: t.String({ description: "reserved_instance, compute_savings_plan, reservation, savings_plan, resource_cud, spend_cud, …" }),
    contract_term: Str(),
    payment_option: Str(),
    region: Str(),
    instance_type: Str(),
    holding_account_id: Str(),
    insured: t.Boolean(),
    starts_at: Instant("When it started"),
    ends_at: t.String({ format: "date-time" }),
  }),
  notice_days: t.Union(NOTICE_DAYS.map((d) => t.Literal(d)), { description: "Which notice this is: 90, 30 or 7 days before the end (each sent once; one first seen closer to its end gets only the nearest)" }),
  days_left: t.Integer({ description: "Whole days from the event to ends_at, rounded up" }),
  amount: t.Union([t.Number(), t.Null()], { description: "Resource count (RI, reservation, resource CUD) or $/hour committed (savings plan, spend CUD), 6 decimals" }),
  hourly_commitment: t.Union([t.Number(), t.Null()], { description: "What it costs per hour: recurring charge plus the upfront amortized over its term (6 decimals); null when its costs are unknown" }),
  monthly_commitment: t.Union([t.Number(), t.Null()], { description: "hourly_commitment × 730, in cents: the monthly spend that lapses or renews" }),
  upfront_cost: t.Union([t.Number(), t.Null()], { description: "One-time upfront paid for the whole term, in cents" }),
  currency: Str("ISO 4217 billing currency of the amounts (from its billing rows); null when none is known"),
});
export type CommitmentExpiringData = Static<typeof CommitmentExpiringData>;

export const AnomalyDetectedData = t.Object({
  dimension: t.Union([t.Literal("account"), t.Literal("service")], { description: "The series is one account's spend or one service's" }),
  provider: Provider,
  currency: t.String(),
  key: Str("The account id (linked account, else billing account) or service name; null: rows without one"),
  name: Str("The account's name (account series)"),
  date: t.String({ format: "date", description: "The UTC day with unusual spend" }),
  weekday: t.String(),
  expected: t.Number({ description: "Expected effective cost of that day (cents)" }),
  actual: t.Number({ description: "Its effective cost (cents)" }),
  impact: t.Number({ description: "actual − expected" }),
  spread: t.Number({ description: "The series' typical daily deviation" }),
  score: t.Number({ description: "impact ÷ spread (an anomaly from ±3.5)" }),
  direction: t.Union([t.Literal("spike"), t.Literal("drop")]),
});
export type AnomalyDetectedData = Static<typeof AnomalyDetectedData>;

export const CatalogRefreshFailedData = t.Object({
  day: t.String({ format: "date", description: "The UTC day of the refresh (this event is sent at most once a day)" }),
  status: t.Union([t.Literal("partial"), t.Literal("failed")], { description: "`partial`: some feeds were refreshed; `failed`: none" }),
  feeds_failed: t.Integer(),
  feeds_refreshed: t.Integer({ description: "Feeds refreshed or confirmed current" }),
  failures: t.Array(
    t.Object({
      provider: Provider,
      feed: Str("The price feed; null when the provider's index of feeds could not be read"),
      error: t.String({ description: "The cause in words" }),
    }),
    { description: "The first 20 failures" },
  ),
  prices_kept: t.Literal(true, { description: "The failed feeds keep their previous prices; a Pricing says `stale` once they are older than PRICE_STALE_DAYS" }),
});
export type CatalogRefreshFailedData = Static<typeof CatalogRefreshFailedData>;

export const billingEventTypes = {
  "billing_sync.succeeded": {
    version: 1,
    description: "A billing connection's sync imported new data (a new version of at least one billing period), or succeeded again after failures.",
    data: BillingSyncSucceededData as TSchema,
  },
  "billing_sync.failed": {
    version: 1,
    description: "A billing connection's sync failed: on the first failure, when the cause changes, when the connection turns `error` (3 in a row) and on every failed manual sync (retries with the same cause are not repeated).",
    data: BillingSyncFailedData,
  },
  "billing_sync.stale": {
    version: 1,
    description: "An enabled billing connection has brought no new data for BILLING_STALE_DAYS days (default 3); once per episode, until new data arrives.",
    data: BillingSyncStaleData,
  },
  "period.finalized": { version: 1, description: "A billing period was finalized: its invoice closed and its reports frozen (their figures no longer change).", data: PeriodFinalizedData },
  "commitment.expiring": { version: 1, description: "A commitment ends in 90, 30 or 7 days (each notice once; one first seen nearer its end gets only the nearest).", data: CommitmentExpiringData },
  "anomaly.detected": { version: 1, description: "A day of unusual spend of one account or service (the assistant's detect_spend_anomalies method), once per series and day.", data: AnomalyDetectedData },
  "catalog.refresh_failed": {
    version: 1,
    description: "The daily refresh of the public price catalog failed for some feeds (at most once a day; sent to orgs that buy or plan on those prices: see GET /events).",
    data: CatalogRefreshFailedData,
  },
} satisfies Record<string, EventTypeSpec>;
