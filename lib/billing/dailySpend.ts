/**
 * Daily spend per account or service and currency, and how far each billing account's usage
 * data reaches: the input of the spend-anomaly detection (lib/billing/anomalies.ts). Amounts
 * are Σ EffectiveCost (amortized) by the UTC day of the charge period start, as in the
 * cloud_bill_daily report and `spendBy(…, "day")`; never summed across currencies.
 */
import type { DbOrTx } from "../db/index.ts";
import { chargeWindowWhere, SQLX, type DateLike } from "./queries.ts";
import { num, queryRows, type Provider } from "./sql.ts";


export type SpendDimension = "account" | "service";

export interface DailySpendQuery {
  /** Charge period start in [from, to). */
  from: DateLike;
  to: DateLike;
  provider?: Provider;
  dimension: SpendDimension;
}

export interface DailySpendPoint {
  date: string;
  provider: Provider;
  currency: string;
  /** Account id (linked account, else billing account) or service name. */
  key: string | null;
  effective_cost: number;
}

export interface DailySpendSeries {
  provider: Provider;
  currency: string;
  key: string | null;
  /** Account name (account dimension; null for services or when unknown). */
  name: string | null;
  /** Billing accounts with rows in this series in the window. */
  billing_account_ids: string[];
}

const KEY: Record<SpendDimension, string> = { account: SQLX.account, service: "li.service_name" };

const where = (orgId: string, q: Omit<DailySpendQuery, "dimension">, params: unknown[]) => chargeWindowWhere({ orgId }, q, params);

/**
 * Σ EffectiveCost per UTC day, provider, currency and account/service over [from, to), with the
 * series' names and billing accounts. A window of whole UTC days reads the day-grain summaries
 * (billing_detail_summaries) when every billing period it touches has them; else the raw rows.
 */
export async function dailySpendBy(db: DbOrTx, orgId: string, q: DailySpendQuery): Promise<{ points: DailySpendPoint[]; series: DailySpendSeries[] }> {
  const days = wholeDays(q);
  const { points, members } = days && (await summariesCover(db, orgId, days, q.provider)) ? await fromSummaries(db, orgId, days, q) : await fromRows(db, orgId, q);
  const series = new Map<string, DailySpendSeries>();
  for (const m of members) {
    const id = JSON.stringify([m.provider, m.currency, m.key ?? null]);
    let s = series.get(id);
    if (!s) series.set(id, (s = { provider: m.provider, currency: m.currency, key: m.key ?? null, name: null, billing_account_ids: [] }));
    s.billing_account_ids.push(m.billing_account_id);
    s.name ??= m.name ?? null;
  }
  return {
    points: points.map((r) => ({ date: r.date, provider: r.provider, currency: r.currency, key: r.key ?? null, effective_cost: num(r.cost) })),
    series: [...series.values()],
  };
}

const DAY_MS = 86_400_000;
const isoOf = (d: DateLike) => (d instanceof Date ? d.toISOString() : d);

/** The window as UTC days [from, to) when both ends are midnights (UTC), else null. */
function wholeDays(q: Pick<DailySpendQuery, "from" | "to">): { from: string; to: string; fromTs: string } | null {
  const from = new Date(isoOf(q.from));
  const to = new Date(isoOf(q.to));
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || from.getTime() % DAY_MS !== 0 || to.getTime() % DAY_MS !== 0) return null;
  return { from: from.toISOString().slice(0, 10), to: to.toISOString().slice(0, 10), fromTs: isoOf(q.from) };
}

/** The summary rows of the window: as chargeWindowWhere bounds the raw rows ($1 org, $2 from, $3 to, $4 from as given, $5 provider). */
const SUMMARY_WINDOW = `s.org_id = $1::uuid AND s.month >= (date_trunc('month', $4::timestamptz) - interval '1 month')::date
  AND s.day >= $2::date AND s.day < $3::date AND ($5::text IS NULL OR s.provider = $5::text)`;

/** Whether every billing period with rows in the window has its detail summaries. */
async function summariesCover(db: DbOrTx, orgId: string, days: { from: string; to: string; fromTs: string }, provider?: Provider): Promise<boolean> {
  const [r] = await queryRows<{ missing: boolean }>(
    db,
    `SELECT EXISTS (
       SELECT 1 FROM billing_cost_summaries s
       WHERE ${SUMMARY_WINDOW} AND s.grain = 'day'
         AND NOT EXISTS (SELECT 1 FROM billing_summary_periods m WHERE m.org_id = s.org_id AND m.month = s.month AND m.provider = s.provider AND m.billing_account_id = s.billing_account_id)
     ) AS missing`,
    [orgId, days.from, days.to, days.fromTs, provider ?? null],
  );
  return r?.missing === false || (r?.missing as unknown) === "f";
}

async function fromSummaries(db: DbOrTx, orgId: string, days: { from: string; to: string; fromTs: string }, q: DailySpendQuery) {
  const grain = q.dimension === "account" ? "day_account" : "day_service";
  const key = q.dimension === "account" ? "s.account_id" : "s.service_name";
  const params = [orgId, days.from, days.to, days.fromTs, q.provider ?? null];
  const points = await queryRows<any>(
    db,
    `SELECT to_char(s.day, 'YYYY-MM-DD') AS date, s.provider, s.currency, ${key} AS key, SUM(s.total_cost) AS cost
     FROM billing_detail_summaries s WHERE ${SUMMARY_WINDOW} AND s.grain = '${grain}' GROUP BY 1, 2, 3, 4 ORDER BY 2, 3, 4, 1`,
    params,
  );
  const members = await queryRows<any>(
    db,
    `SELECT s.provider, s.currency, ${key} AS key, s.billing_account_id, ${q.dimension === "account" ? "max(s.account_name)" : "NULL"} AS name
     FROM billing_detail_summaries s WHERE ${SUMMARY_WINDOW} AND s.grain = '${grain}' GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    params,
  );
  return { points, members };
}

async function fromRows(db: DbOrTx, orgId: string, q: DailySpendQuery) {
  const key = KEY[q.dimension];
  const p1: unknown[] = [];
  const points = await queryRows<any>(
    db,
    `SELECT ${SQLX.chargeDay} AS date, li.provider, li.billing_currency AS currency, ${key} AS key, SUM(li.effective_cost) AS cost
     FROM billing_line_items li WHERE ${where(orgId, q, p1)} GROUP BY 1, 2, 3, 4 ORDER BY 2, 3, 4, 1`,
    p1,
  );
  const p2: unknown[] = [];
  const members = await queryRows<any>(
    db,
    `SELECT li.provider, li.billing_currency AS currency, ${key} AS key, li.billing_account_id,
       ${q.dimension === "account" ? "max(CASE WHEN li.sub_account_id IS NULL THEN li.billing_account_name ELSE li.sub_account_name END)" : "NULL"} AS name
     FROM billing_line_items li WHERE ${where(orgId, q, p2)} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    p2,
  );
  return { points, members };
}

export interface UsageHorizon {
  provider: Provider;
  billing_account_id: string;
  /** Latest end of a usage charge period (ISO 8601 UTC) among rows starting in the window. */
  horizon: string;
}

/**
 * How far each billing account's usage data reaches: the latest ChargePeriodEnd of its Usage
 * rows starting in [from, to) (pass `to` = now: rows dated in the future do not count). Tax,
 * credits and purchases are often dated on the whole month, so they do not tell.
 */
export async function usageDataHorizons(db: DbOrTx, orgId: string, q: { from: DateLike; to: DateLike; provider?: Provider }): Promise<UsageHorizon[]> {
  const params: unknown[] = [];
  const rows = await queryRows<any>(
    db,
    `SELECT li.provider, li.billing_account_id, to_char(max(li.charge_period_end) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS horizon
     FROM billing_line_items li WHERE ${where(orgId, q, params)} AND li.charge_category = 'Usage' GROUP BY 1, 2 ORDER BY 1, 2`,
    params,
  );
  return rows.map((r) => ({ provider: r.provider, billing_account_id: r.billing_account_id, horizon: r.horizon }));
}
