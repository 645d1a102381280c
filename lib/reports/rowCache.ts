/**
 * Report rows of an open month stored ahead, as shown (report_row_sets, report_rows): a large
 * month's report would otherwise compute the whole month's invoice rounding before its first
 * row (seconds at 10 M raw rows); stored, its first page is an index range read in order.
 *
 * - Written by `rebuildBillingSummaries` (lib/billing/summaries.ts) in the import's transaction,
 *   for months of at least `storedRowsMinLineItems()` raw rows whose every billing period has its
 *   summaries built there; dropped with any period's summaries (`deleteSummaries`), so a set is
 *   never older than the billing rows.
 * - What a report joins when read (account names, child organizations, insured terms: the tables
 *   its SQL names, `INPUTS`) is fingerprinted into the set; a read whose fingerprint differs
 *   computes the set again first (on the primary; a replica then reads live), so a rename or a
 *   reassignment shows at once.
 * - Only `daily` reports are stored: an `on_period_close` report shows an open month empty and
 *   a closed one from its snapshot; the static inventory is small.
 */
import type { DbOrTx } from "../db/index.ts";
import { queryRows, type Provider } from "../billing/sql.ts";
import type { BillingPeriodKey } from "../billing/summaries.ts";
import { REPORTS, type ReportDefinition } from "./catalog.ts";
import { reportRowsMinLineItems } from "../config.ts";

/** Months with fewer raw rows are computed when read (fast enough; keeps small imports cheap). */
export const storedRowsMinLineItems = () => reportRowsMinLineItems();

export const storable = (def: ReportDefinition) => def.update_cadence === "daily";

/** Fingerprint of each table a report may join when read ($1 org, $2 provider). */
const INPUTS: Record<string, string> = {
  cloud_accounts: `SELECT md5(COALESCE(string_agg(concat_ws('|', quote_literal(account_id), quote_nullable(name), quote_nullable(billing_account_id), quote_nullable(child_org_id::text)), ',' ORDER BY account_id), ''))
    FROM cloud_accounts WHERE org_id = $1::uuid AND provider = $2::text`,
  organizations: `SELECT md5(COALESCE(string_agg(id::text || quote_nullable(name), ',' ORDER BY id), '')) FROM organizations WHERE parent_id = $1::uuid`,
  commitments: `SELECT md5(COALESCE(string_agg(concat_ws('|', quote_literal(provider_commitment_id), quote_nullable(fee_rate::text), quote_nullable(lock_in_ends_at::text)), ',' ORDER BY provider_commitment_id), ''))
    FROM commitments WHERE org_id = $1::uuid AND provider = $2::text AND insured`,
};

/** SQL of the fingerprint of what `def` joins when read (a constant when it joins nothing). */
function inputsSql(def: ReportDefinition): string {
  const parts = Object.entries(INPUTS)
    .filter(([table]) => new RegExp(`\\b${table}\\b`).test(def.exactSql))
    .map(([, sql]) => `(${sql})`);
  return parts.length ? `concat_ws(',', ${parts.join(", ")})` : `''`;
}

/**
 * Whether every billing period of the org's (provider, month) has its summaries built in SQL
 * with the detail grains (billing_summary_periods), and how many raw rows they summarise.
 */
export async function summaryDetailOf(db: DbOrTx, orgId: string, month: string, provider: Provider): Promise<{ complete: boolean; lineItems: number }> {
  const [r] = await queryRows<{ complete: boolean | null; n: string | number | null }>(
    db,
    `SELECT bool_and(m.org_id IS NOT NULL) AS complete, SUM(m.line_items) AS n
     FROM (SELECT DISTINCT s.billing_account_id FROM billing_cost_summaries s WHERE s.org_id = $1::uuid AND s.month = $2::date AND s.grain = 'day' AND s.provider = $3::text) s
     LEFT JOIN billing_summary_periods m ON m.org_id = $1::uuid AND m.month = $2::date AND m.provider = $3::text AND m.billing_account_id = s.billing_account_id`,
    [orgId, month, provider],
  );
  // No summaries at all: nothing to read from raw rows either.
  return { complete: r?.complete !== false, lineItems: Number(r?.n ?? 0) };
}

const monthsOf = (periods: BillingPeriodKey[]) => [...new Map(periods.map((p) => [`${p.provider}|${p.month}`, { provider: p.provider, month: p.month }])).values()];

/** Drops the stored report rows of the months of `periods` (their inputs are changing). */
export async function dropReportRows(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[]): Promise<void> {
  const months = JSON.stringify(monthsOf(periods));
  for (const table of ["report_rows", "report_row_sets"]) {
    await queryRows(
      tx,
      `DELETE FROM ${table} r USING json_to_recordset($2::json) AS m(provider text, month date)
       WHERE r.org_id = $1::uuid AND r.provider = m.provider AND r.month = m.month`,
      [orgId, months],
    );
  }
}

/** Serializes the writers of one set (an import and a read refreshing it). */
const lockSet = (tx: DbOrTx, orgId: string, type: string, provider: string, month: string) =>
  queryRows(tx, `SELECT pg_advisory_xact_lock(hashtext('report_rows|' || $1 || '|' || $2 || '|' || $3 || '|' || $4)) IS NULL AS locked`, [orgId, type, provider, month]);

/** (Re)computes one stored set from the current summaries and inputs. */
export async function storeRowSet(tx: DbOrTx, orgId: string, def: ReportDefinition, provider: Provider, month: string): Promise<number> {
  await lockSet(tx, orgId, def.report_type, provider, month);
  const key = [orgId, def.report_type, provider, month];
  await queryRows(tx, `DELETE FROM report_rows WHERE org_id = $1::uuid AND report_type = $2 AND provider = $3 AND month = $4::date`, key);
  await queryRows(tx, `DELETE FROM report_row_sets WHERE org_id = $1::uuid AND report_type = $2 AND provider = $3 AND month = $4::date`, key);
  // The report's own parameters: $1 org, $2 month, $3 provider; $4 the report type.
  const [ins] = await queryRows<{ n: number }>(
    tx,
    `WITH ins AS (
       INSERT INTO report_rows (org_id, report_type, provider, month, seq, row)
       SELECT $1::uuid, $4::text, $3::text, $2::date, row_number() OVER (ORDER BY ${def.orderBy.map((c) => `q.${c} NULLS FIRST`).join(", ")}), to_jsonb(q)
       FROM (${def.sql}) q
       RETURNING 1
     ) SELECT count(*)::int AS n FROM ins`,
    [orgId, month, provider, def.report_type],
  );
  const n = Number(ins?.n ?? 0);
  await queryRows(
    tx,
    `INSERT INTO report_row_sets (org_id, report_type, provider, month, inputs, row_count) SELECT $1::uuid, $3, $2::text, $4::date, ${inputsSql(def)}, $5::int`,
    [orgId, provider, def.report_type, month, n],
  );
  return n;
}

const SUMMARY_TABLES = ["billing_cost_summaries", "commitment_usage_summaries", "billing_detail_summaries"] as const;

/**
 * Statistics of the summaries just written, before the reports' plans read them: a planner that
 * believes a month's summaries empty (a table never analyzed, or grown since) joins the rounding's
 * adjustments to the month's rows in nested loops, quadratic in its rows (5 s instead of 0.5 s
 * for a 30 k-row resource report read live). All tables for a month whose rows are stored; else
 * those the months' rows outgrow, by autovacuum's own rule (50 + 10 % of the rows it knows), so
 * a small import into a large table does not pay for an ANALYZE.
 */
async function analyzeSummaries(tx: DbOrTx, orgId: string, months: { provider: string; month: string }[], all: boolean): Promise<void> {
  for (const table of SUMMARY_TABLES) {
    if (!all) {
      const [r] = await queryRows<{ known: number | string; written: number | string }>(
        tx,
        `SELECT (SELECT c.reltuples FROM pg_class c WHERE c.oid = '${table}'::regclass) AS known,
           (SELECT count(*) FROM ${table} s JOIN json_to_recordset($2::json) AS m(provider text, month date) ON s.provider = m.provider AND s.month = m.month WHERE s.org_id = $1::uuid) AS written`,
        [orgId, JSON.stringify(months)],
      );
      const known = Number(r?.known ?? -1);
      if (known >= 0 && Number(r?.written ?? 0) <= 50 + 0.1 * known) continue;
    }
    await queryRows(tx, `ANALYZE ${table}`);
  }
}

/** Stores the report rows of the large months among `periods` (after their summaries were rebuilt). */
export async function storeReportRows(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[]): Promise<number> {
  const months = monthsOf(periods);
  const large: typeof months = [];
  for (const m of months) {
    const detail = await summaryDetailOf(tx, orgId, m.month, m.provider);
    if (detail.complete && detail.lineItems >= storedRowsMinLineItems()) large.push(m);
  }
  await analyzeSummaries(tx, orgId, months, large.length > 0);
  let sets = 0;
  for (const { provider, month } of large) {
    for (const def of REPORTS.filter(storable)) {
      await storeRowSet(tx, orgId, def, provider, month);
      sets++;
    }
  }
  return sets;
}

/** The stored set of a report month: `fresh` (read it), `stale` (its inputs changed) or `none`. */
export async function rowSetState(db: DbOrTx, orgId: string, def: ReportDefinition, month: string, provider: Provider): Promise<"fresh" | "stale" | "none"> {
  if (!storable(def)) return "none";
  const [r] = await queryRows<{ fresh: boolean }>(
    db,
    `SELECT s.inputs = ${inputsSql(def)} AS fresh FROM report_row_sets s WHERE s.org_id = $1::uuid AND s.provider = $2::text AND s.report_type = $3 AND s.month = $4::date`,
    [orgId, provider, def.report_type, month],
  );
  return !r ? "none" : r.fresh === true || (r.fresh as unknown) === "t" ? "fresh" : "stale";
}

/**
 * The stored rows of a report month as a relation `r` of its output columns (text) and `seq`,
 * under the filters: what the JSON stream and the CSV COPY read. Params: $1 org, $2 report
 * type, $3 provider, $4 month, then the filters' values.
 */
export function storedRowsSql(def: ReportDefinition, filters: Record<string, string>, params: unknown[]): string {
  const where = Object.entries(filters).map(([col, v]) => ` AND c.row->>'${col.replace(/[^a-z_]/g, "")}' = $${params.push(v)}`);
  return `(SELECT c.seq, c.row, ${def.output_fields.map((f) => `c.row->>'${f.name}' AS ${f.name}`).join(", ")} FROM report_rows c
    WHERE c.org_id = $1::uuid AND c.report_type = $2 AND c.provider = $3 AND c.month = $4::date${where.join("")}) r`;
}
