/**
 * The reports' aggregates rebuilt from the stored rows in SQL, in the import's transaction: one
 * pass with GROUPING SETS writes billing_cost_summaries, the detail grains
 * (billing_detail_summaries: per resource, per day and account or service) and the mark of the
 * period (billing_summary_periods); another commitment_usage_summaries; exact numeric sums. Then
 * a large month's report rows are stored ahead (lib/reports/rowCache.ts). Report requests and
 * the assistant's daily spend read these small tables instead of the month's raw rows.
 */
import type { DbOrTx } from "../db/index.ts";
import { queryRows, type Provider } from "./sql.ts";
import { SQLX } from "./queries.ts";
import { dropReportRows, storeReportRows } from "../reports/rowCache.ts";

/** The unit an import replaces: one billing account's month of one provider. */
export interface BillingPeriodKey {
  provider: Provider;
  billing_account_id: string;
  /** First day of the month, `YYYY-MM-DD`. */
  month: string;
}

const PERIODS = `p AS (SELECT * FROM json_to_recordset($2::json) AS p(provider text, billing_account_id text, month date))`;
/**
 * The periods' rows, by a join with the periods. Its estimate multiplies the three columns'
 * selectivities against the function's guessed 100 rows, so the planner expects few groups and
 * hashes them (with sorting off in the import's transaction); a semi-join's true row count made it
 * expect hundreds of thousands of groups and sort the rows instead (3 M rows: 22 s against about 7).
 */
const ROWS_OF_PERIODS = `billing_line_items li JOIN p ON li.provider = p.provider AND li.billing_account_id = p.billing_account_id AND li.billing_period = p.month`;

/** Which summary tables a step covers (both when not said). */
export interface SummaryTables {
  cost?: boolean;
  commitment?: boolean;
}

const tablesOf = (t: SummaryTables) => [...(t.cost !== false ? ["billing_cost_summaries"] : []), ...(t.commitment !== false ? ["commitment_usage_summaries"] : [])];

/**
 * Deletes the summaries of `periods` (before they are written again). With the cost summaries go
 * their detail grains and the mark that the period has them; any change of a period drops the
 * report rows stored ahead for its month (lib/reports/rowCache.ts).
 */
export async function deleteSummaries(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[], tables: SummaryTables = {}): Promise<void> {
  if (!periods.length) return;
  const params = [orgId, JSON.stringify(periods)];
  const detail = tables.cost !== false ? ["billing_detail_summaries", "billing_summary_periods"] : [];
  for (const table of [...tablesOf(tables), ...detail]) {
    await queryRows(
      tx,
      `WITH ${PERIODS} DELETE FROM ${table} s USING p
       WHERE s.org_id = $1::uuid AND s.provider = p.provider AND s.billing_account_id = p.billing_account_id AND s.month = p.month`,
      params,
    );
  }
  await dropReportRows(tx, orgId, periods);
}

/** Replaces the summaries of `periods` (both tables, or those asked for) with aggregates of their current billing rows, in SQL. */
export async function rebuildBillingSummaries(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[], tables: SummaryTables = {}): Promise<{ cost_rows: number; commitment_rows: number }> {
  if (!periods.length) return { cost_rows: 0, commitment_rows: 0 };
  const params = [orgId, JSON.stringify(periods)];
  await deleteSummaries(tx, orgId, periods, tables);
  const [cost] = tables.cost === false ? [] : await queryRows<{ n: number }>(
    tx,
    `WITH ${PERIODS},
     x AS (
       SELECT li.provider, li.billing_account_id, li.billing_period, li.billing_currency, ${SQLX.account} AS account_id,
         CASE WHEN li.sub_account_id IS NULL THEN li.billing_account_name ELSE li.sub_account_name END AS account_name,
         li.service_category, li.service_name, li.resource_id, (li.charge_period_start AT TIME ZONE 'UTC')::date AS day,
         li.effective_cost, li.billed_cost,
         ${SQLX.ondemand} AS is_ondemand,
         (li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL) OR li.charge_category = 'Purchase' AS is_commitment,
         li.charge_category NOT IN ('Usage', 'Purchase') AS is_other
       FROM ${ROWS_OF_PERIODS}
       WHERE li.org_id = $1::uuid
     ),
     -- Two fine groupings read the rows once each; every grain is a roll-up of one of them (exact numeric sums of sums).
     f AS (
       SELECT provider, billing_account_id, billing_period, billing_currency, account_id, resource_id, service_category, service_name, day,
         GROUPING(day) = 1 AS by_resource, max(account_name) AS account_name, count(*) AS n,
         COALESCE(SUM(effective_cost) FILTER (WHERE is_ondemand), 0) AS o, COALESCE(SUM(effective_cost) FILTER (WHERE is_commitment), 0) AS c,
         COALESCE(SUM(effective_cost) FILTER (WHERE is_other), 0) AS x, SUM(effective_cost) AS t, SUM(billed_cost) AS b
       FROM x
       GROUP BY provider, billing_account_id, billing_period, billing_currency,
         GROUPING SETS ((account_id, resource_id, service_category, service_name), (day, account_id, service_category, service_name))
     ),
     g AS (
       SELECT provider, billing_account_id, billing_period, billing_currency,
         CASE WHEN GROUPING(resource_id) = 0 THEN 'resource' WHEN GROUPING(account_id) = 0 THEN 'account' ELSE 'service' END AS grain,
         account_id, CASE WHEN GROUPING(account_id) = 0 AND GROUPING(resource_id) = 1 THEN max(account_name) END AS account_name,
         resource_id, service_category, service_name, NULL::date AS day,
         SUM(n) AS n, SUM(o) AS o, SUM(c) AS c, SUM(x) AS x, SUM(t) AS t, SUM(b) AS b
       FROM f WHERE by_resource
       GROUP BY provider, billing_account_id, billing_period, billing_currency,
         GROUPING SETS ((account_id), (service_category, service_name), (account_id, resource_id, service_name))
       UNION ALL
       SELECT provider, billing_account_id, billing_period, billing_currency,
         CASE WHEN GROUPING(account_id) = 0 THEN 'day_account' WHEN GROUPING(service_name) = 0 THEN 'day_service' ELSE 'day' END,
         account_id, CASE WHEN GROUPING(account_id) = 0 THEN max(account_name) END,
         NULL, service_category, service_name, day,
         SUM(n), SUM(o), SUM(c), SUM(x), SUM(t), SUM(b)
       FROM f WHERE NOT by_resource
       GROUP BY provider, billing_account_id, billing_period, billing_currency,
         GROUPING SETS ((day), (day, account_id), (day, service_category, service_name))
     ),
     ins AS (
       INSERT INTO billing_cost_summaries (org_id, provider, billing_account_id, month, grain, currency, account_id, account_name, service_category, service_name, day,
         ondemand_cost, commitment_cost, other_cost, total_cost, billed_cost)
       SELECT $1::uuid, provider, billing_account_id, billing_period, grain, billing_currency, account_id, account_name, service_category, service_name, day, o, c, x, t, b
       FROM g WHERE grain IN ('account', 'service', 'day')
       RETURNING 1
     ),
     detail AS (
       INSERT INTO billing_detail_summaries (org_id, provider, billing_account_id, month, grain, currency, account_id, account_name, resource_id, service_category, service_name, day,
         ondemand_cost, commitment_cost, other_cost, total_cost, billed_cost)
       SELECT $1::uuid, provider, billing_account_id, billing_period, grain, billing_currency, account_id, account_name, resource_id, service_category, service_name, day, o, c, x, t, b
       FROM g WHERE grain NOT IN ('account', 'service', 'day')
       RETURNING 1
     ),
     marks AS (
       INSERT INTO billing_summary_periods (org_id, provider, billing_account_id, month, line_items)
       SELECT $1::uuid, p.provider, p.billing_account_id, p.month, COALESCE((SELECT SUM(g.n) FROM g WHERE g.grain = 'day' AND g.provider = p.provider AND g.billing_account_id = p.billing_account_id AND g.billing_period = p.month), 0)
       FROM p
       RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM ins) AS n, (SELECT count(*) FROM detail) AS d, (SELECT count(*) FROM marks) AS m`,
    params,
  );
  const [commitment] = tables.commitment === false ? [] : await queryRows<{ n: number }>(
    tx,
    `WITH ${PERIODS},
     x AS (
       SELECT li.provider, li.billing_account_id, li.billing_period, li.billing_currency, li.commitment_discount_id AS cid, ${SQLX.account} AS account_id,
         li.service_name, (li.charge_period_start AT TIME ZONE 'UTC')::date AS day, li.commitment_discount_status AS status, li.effective_cost, ${SQLX.odEq} AS od
       FROM ${ROWS_OF_PERIODS}
       WHERE li.org_id = $1::uuid AND li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL AND li.commitment_discount_status IN ('Used', 'Unused')
     ),
     ins AS (
       INSERT INTO commitment_usage_summaries (org_id, provider, billing_account_id, month, grain, currency, commitment_id, account_id, service_name, day,
         used_cost, unused_cost, covered_ondemand_cost, savings)
       SELECT $1::uuid, provider, billing_account_id, billing_period,
         CASE WHEN GROUPING(day) = 0 THEN 'day_account' WHEN GROUPING(account_id) = 0 THEN 'account' ELSE 'service' END,
         billing_currency, cid, account_id, service_name, day,
         COALESCE(SUM(effective_cost) FILTER (WHERE status = 'Used'), 0), COALESCE(SUM(effective_cost) FILTER (WHERE status = 'Unused'), 0),
         COALESCE(SUM(od) FILTER (WHERE status = 'Used'), 0), COALESCE(SUM(od - effective_cost) FILTER (WHERE status = 'Used'), 0)
       FROM x
       GROUP BY provider, billing_account_id, billing_period, billing_currency, cid, GROUPING SETS ((account_id), (service_name), (day, account_id))
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM ins`,
    params,
  );
  // The month's report rows as shown, stored ahead when the month is large (their inputs just changed).
  if (tables.cost !== false) await storeReportRows(tx, orgId, periods);
  return { cost_rows: Number(cost?.n ?? 0), commitment_rows: Number(commitment?.n ?? 0) };
}

/**
 * Rebuilds the summaries of every billing period the org has rows for (optionally one month):
 * for rows written other than by the import (tests' fixtures, a data repair by hand).
 */
export async function rebuildAllBillingSummaries(tx: DbOrTx, orgId: string, month?: string): Promise<number> {
  const periods = await queryRows<BillingPeriodKey>(
    tx,
    `SELECT DISTINCT provider, billing_account_id, to_char(billing_period, 'YYYY-MM-DD') AS month FROM billing_line_items
     WHERE org_id = $1::uuid AND ($2::date IS NULL OR billing_period = $2::date)`,
    [orgId, month ?? null],
  );
  await rebuildBillingSummaries(tx, orgId, periods);
  return periods.length;
}
