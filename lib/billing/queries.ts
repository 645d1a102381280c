/**
 * Read-side queries over the billing data and the commitment inventory, shared by the MCP
 * assistant, plan generation and the reports. Every function is scoped to one organization.
 * Money comes back as JS numbers (unrounded); callers round at their edge.
 */
import type { DbOrTx } from "../db/index.ts";
import { num, queryRows, type Provider } from "./sql.ts";

/** Dates: ISO strings (`2026-05-01` or full timestamps) or Date; `from` inclusive, `to` exclusive. */
export type DateLike = string | Date;
const iso = (d: DateLike) => (d instanceof Date ? d.toISOString() : d);

/** SQL snippets shared with the reports (one definition of each money concept). */
export const SQLX = {
  /** The account a row belongs to: the linked account, else the billing account. */
  account: "COALESCE(li.sub_account_id, li.billing_account_id)",
  /** On-demand equivalent of a row: list price, else contracted, else what was paid. */
  odEq: "COALESCE(li.list_cost, NULLIF(li.contracted_cost, 0), li.effective_cost)",
  used: "(li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL AND li.commitment_discount_status = 'Used')",
  unused: "(li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL AND li.commitment_discount_status = 'Unused')",
  ondemand: "(li.charge_category = 'Usage' AND li.commitment_discount_id IS NULL)",
  /** Commitment cost of the bill: covered usage, the commitments' Unused rows and Purchase fees. */
  commitmentCost: "((li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL) OR li.charge_category = 'Purchase')",
  /** Tax, credits, adjustments: with ondemand and commitmentCost it partitions every row. */
  otherCost: "li.charge_category NOT IN ('Usage', 'Purchase')",
  /** Month and day of the charge (UTC). */
  chargeMonth: "to_char(li.charge_period_start AT TIME ZONE 'UTC', 'YYYY-MM')",
  chargeDay: "to_char(li.charge_period_start AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
  /** Commitment group of plan generation: instance family from the instance type. */
  instanceFamily:
    "CASE WHEN li.instance_type IS NULL THEN NULL WHEN li.provider = 'aws' THEN split_part(li.instance_type, '.', 1) WHEN li.provider = 'gcp' THEN split_part(li.instance_type, '-', 1) ELSE regexp_replace(li.instance_type, '[0-9]+', '', 'g') END",
};

export interface CommitmentFilters {
  provider?: Provider;
  /** `active` (default): running now; `expired`; `all`. */
  status?: "active" | "expired" | "all";
  insured?: boolean;
  commitmentType?: string;
  /** Reference time for active/expired (default now). */
  at?: Date;
}

export interface CommitmentView {
  id: string;
  provider: Provider;
  provider_commitment_id: string;
  name: string | null;
  commitment_type: string;
  category: string | null;
  contract_term: string | null;
  payment_option: string | null;
  offering_class: string | null;
  region: string | null;
  instance_type: string | null;
  instance_family: string | null;
  starts_at: string | null;
  ends_at: string | null;
  amount: number | null;
  upfront_cost: number | null;
  recurring_hourly_cost: number | null;
  holding_account_id: string | null;
  insured: boolean;
  fee_rate: number | null;
  lock_in_ends_at: string | null;
  source: "billing" | "purchase";
}

const nullableNum = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const ts = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/** The commitment inventory of an org (derived from billing data and added by purchases). */
export async function listCommitments(db: DbOrTx, orgId: string, filters: CommitmentFilters = {}): Promise<CommitmentView[]> {
  const params: unknown[] = [orgId];
  const where = ["c.org_id = $1::uuid"];
  if (filters.provider) where.push(`c.provider = $${params.push(filters.provider)}`);
  if (filters.insured !== undefined) where.push(`c.insured = $${params.push(filters.insured)}::boolean`);
  if (filters.commitmentType) where.push(`c.commitment_type = $${params.push(filters.commitmentType)}`);
  const status = filters.status ?? "active";
  if (status !== "all") {
    const at = `$${params.push((filters.at ?? new Date()).toISOString())}::timestamptz`;
    where.push(status === "active" ? `(c.starts_at IS NULL OR c.starts_at <= ${at}) AND (c.ends_at IS NULL OR c.ends_at > ${at})` : `c.ends_at <= ${at}`);
  }
  const rows = await queryRows<any>(db, `SELECT c.* FROM commitments c WHERE ${where.join(" AND ")} ORDER BY c.provider, c.starts_at NULLS FIRST, c.provider_commitment_id`, params);
  return rows.map((c) => ({
    id: c.id,
    provider: c.provider,
    provider_commitment_id: c.provider_commitment_id,
    name: c.name,
    commitment_type: c.commitment_type,
    category: c.category,
    contract_term: c.contract_term,
    payment_option: c.payment_option,
    offering_class: c.offering_class,
    region: c.region,
    instance_type: c.instance_type,
    instance_family: c.instance_family,
    starts_at: ts(c.starts_at),
    ends_at: ts(c.ends_at),
    amount: nullableNum(c.amount),
    upfront_cost: nullableNum(c.upfront_cost),
    recurring_hourly_cost: nullableNum(c.recurring_hourly_cost),
    holding_account_id: c.holding_account_id,
    insured: Boolean(c.insured),
    fee_rate: nullableNum(c.fee_rate),
    lock_in_ends_at: ts(c.lock_in_ends_at),
    source: c.source,
  }));
}

export interface WindowQuery {
  provider?: Provider;
  from: DateLike;
  to: DateLike;
}

/**
 * The org's rows charged in [from, to): `orgId` is pushed as the next parameter unless `org` names
 * the parameter already holding it. Bounded below by billing period (a row is billed in the month
 * of its charge or, for corrections, later), so the (org, billing_period, provider) index skips
 * the older history; no upper bound, so later corrections of the window's charges count.
 */
export function chargeWindowWhere(org: { orgId: string } | { param: number }, q: WindowQuery, params: unknown[]): string {
  const orgParam = "param" in org ? org.param : params.push(org.orgId);
  const from = params.push(iso(q.from));
  const w = [
    `li.org_id = $${orgParam}::uuid`,
    `li.billing_period >= (date_trunc('month', $${from}::timestamptz) - interval '1 month')::date`,
    `li.charge_period_start >= $${from}::timestamptz`,
    `li.charge_period_start < $${params.push(iso(q.to))}::timestamptz`,
  ];
  if (q.provider) w.push(`li.provider = $${params.push(q.provider)}`);
  return w.join(" AND ");
}

const windowWhere = (q: WindowQuery, params: unknown[]) => chargeWindowWhere({ param: 1 }, q, params);

export interface CoverageUtilizationRow {
  /** Month `YYYY-MM` (groupBy period), account id, service name or commitment id. */
  key: string | null;
  provider: Provider;
  /** FOCUS BillingCurrency of the amounts: rows never mix currencies. */
  currency: string;
  /** EffectiveCost of Used rows. */
  used_cost: number;
  /** EffectiveCost of Unused rows (on the holding account). */
  unused_cost: number;
  /** used / (used + unused); null when there is no commitment cost. */
  utilization: number | null;
  /** On-demand equivalent of the usage commitments covered. */
  covered_ondemand_cost: number;
  /** On-demand cost of eligible usage left uncovered (same provider + service as covered usage). */
  uncovered_ondemand_cost: number;
  /** covered / (covered + uncovered eligible); null when there is no eligible usage. */
  coverage: number | null;
  /** On-demand equivalent − EffectiveCost of Used rows. */
  savings: number;
}

/**
 * Coverage and utilization over [from, to) by charge period start. Coverage counts as eligible
 * the on-demand usage of services that commitments covered in the window (FOCUS ≤ 1.2 has no
 * eligibility column).
 */
export async function coverageAndUtilization(
  db: DbOrTx,
  orgId: string,
  q: WindowQuery & { groupBy: "period" | "account" | "service" | "commitment" },
): Promise<CoverageUtilizationRow[]> {
  const params: unknown[] = [orgId];
  const where = windowWhere(q, params);
  const key = {
    period: SQLX.chargeMonth,
    account: SQLX.account,
    service: "li.service_name",
    commitment: "li.commitment_discount_id",
  }[q.groupBy];
  const rows = await queryRows<any>(
    db,
    `WITH w AS (SELECT li.* FROM billing_line_items li WHERE ${where}),
     covered_services AS (SELECT DISTINCT li.provider, COALESCE(li.service_name, '') AS svc FROM w li WHERE ${SQLX.used})
     SELECT ${key} AS key, li.provider, li.billing_currency AS currency,
       COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.used}), 0) AS used_cost,
       COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.unused}), 0) AS unused_cost,
       COALESCE(SUM(${SQLX.odEq}) FILTER (WHERE ${SQLX.used}), 0) AS covered,
       COALESCE(SUM(${SQLX.odEq}) FILTER (WHERE ${SQLX.ondemand} AND COALESCE(li.pricing_category, 'Standard') = 'Standard'
         AND EXISTS (SELECT 1 FROM covered_services cs WHERE cs.provider = li.provider AND cs.svc = COALESCE(li.service_name, ''))), 0) AS uncovered,
       COALESCE(SUM(${SQLX.odEq} - li.effective_cost) FILTER (WHERE ${SQLX.used}), 0) AS savings
     FROM w li
     WHERE li.charge_category = 'Usage' ${q.groupBy === "commitment" ? "AND li.commitment_discount_id IS NOT NULL" : ""}
     GROUP BY 1, 2, 3 ORDER BY 2, 3, 1`,
    params,
  );
  return rows
    .map((r) => {
      const used = num(r.used_cost);
      const unused = num(r.unused_cost);
      const covered = num(r.covered);
      const uncovered = num(r.uncovered);
      return {
        key: r.key ?? null,
        provider: r.provider,
        currency: r.currency,
        used_cost: used,
        unused_cost: unused,
        utilization: used + unused !== 0 ? used / (used + unused) : null,
        covered_ondemand_cost: covered,
        uncovered_ondemand_cost: uncovered,
        coverage: covered + uncovered !== 0 ? covered / (covered + uncovered) : null,
        savings: num(r.savings),
      };
    });
}

export interface SpendRow {
  /** `YYYY-MM` (month), `YYYY-MM-DD` (day), account id or service name. */
  key: string | null;
  provider: Provider;
  /** FOCUS BillingCurrency of the row's amounts: spend is always grouped by currency. */
  currency: string;
  billed_cost: number;
  /** Σ EffectiveCost (amortized). */
  effective_cost: number;
  ondemand_cost: number;
  commitment_cost: number;
  /** Tax, credits, adjustments. */
  other_cost: number;
  /**
   * How far the group's billing data reaches: the latest ChargePeriodEnd (ISO 8601) among its
   * rows of at most one day (usage-grain rows; monthly fees, taxes and credits span the billing
   * period and say nothing of how far an export has got). Null when it has no such row.
   */
  data_end: string | null;
}

export interface SpendQuery extends WindowQuery {
  groupBy: "month" | "day" | "account" | "service";
}

/**
 * Spend over [from, to) (by charge period start), grouped by month, day, account or service,
 * always per provider and billing currency (amounts in different currencies are never added).
 */
export async function spendBy(db: DbOrTx, orgId: string, q: SpendQuery): Promise<SpendRow[]> {
  const params: unknown[] = [orgId];
  const where = windowWhere(q, params);
  const key = {
    month: SQLX.chargeMonth,
    day: SQLX.chargeDay,
    account: SQLX.account,
    service: "li.service_name",
  }[q.groupBy];
  const rows = await queryRows<any>(
    db,
    `SELECT ${key} AS key, li.provider, li.billing_currency AS currency,
       SUM(li.billed_cost) AS billed, SUM(li.effective_cost) AS effective,
       COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.ondemand}), 0) AS ondemand,
       COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.commitmentCost}), 0) AS commitment,
       COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.otherCost}), 0) AS other,
       MAX(li.charge_period_end) FILTER (WHERE li.charge_period_end <= li.charge_period_start + interval '1 day') AS data_end
     FROM billing_line_items li WHERE ${where} GROUP BY 1, 2, 3 ORDER BY 2, 3, 1`,
    params,
  );
  return rows.map((r) => ({
    key: r.key ?? null,
    provider: r.provider,
    currency: r.currency,
    billed_cost: num(r.billed),
    effective_cost: num(r.effective),
    ondemand_cost: num(r.ondemand),
    commitment_cost: num(r.commitment),
    other_cost: num(r.other),
    data_end: ts(r.data_end),
  }));
}

export interface LinkedAccount {
  provider: Provider;
  account_id: string;
  name: string | null;
  billing_account_id: string | null;
  billing_account_name: string | null;
  child_org_id: string | null;
  first_seen_at: string;
}

/** Linked accounts (FOCUS SubAccount) discovered from the org's billing data. */
export async function listLinkedAccounts(db: DbOrTx, orgId: string, provider?: Provider): Promise<LinkedAccount[]> {
  const params: unknown[] = [orgId];
  const extra = provider ? ` AND provider = $${params.push(provider)}` : "";
  const rows = await queryRows<any>(db, `SELECT * FROM cloud_accounts WHERE org_id = $1::uuid${extra} ORDER BY provider, account_id`, params);
  return rows.map((r) => ({
    provider: r.provider,
    account_id: r.account_id,
    name: r.name,
    billing_account_id: r.billing_account_id,
    billing_account_name: r.billing_account_name,
    child_org_id: r.child_org_id,
    first_seen_at: new Date(r.first_seen_at).toISOString(),
  }));
}

export interface HourlyUsageRow {
  /** Start of the hour, ISO 8601 UTC. */
  hour: string;
  provider: Provider;
  service: string | null;
  region: string | null;
  instance_family: string | null;
  /** On-demand equivalent cost of the usage in that hour (covered by commitments or not). */
  ondemand_equivalent_cost: number;
}

/**
 * Per-hour on-demand-equivalent cost of usage per commitment group (provider + service +
 * region + instance family), for plan generation. Covered (Used) and on-demand usage both
 * count, Unused commitment rows do not. Rows longer than an hour (daily-grain exports) are
 * spread evenly over their hours.
 */
export async function hourlyOnDemandEquivalentUsage(
  db: DbOrTx,
  orgId: string,
  q: { provider: Provider; from: DateLike; to: DateLike; accountIds?: string[]; regions?: string[]; services?: string[] },
): Promise<HourlyUsageRow[]> {
  const params: unknown[] = [orgId];
  const where = windowWhere(q, params);
  const extra: string[] = [];
  const inList = (expr: string, values?: string[]) => {
    if (!values?.length) return;
    extra.push(`${expr} IN (${values.map((v) => `$${params.push(v)}`).join(", ")})`);
  };
  inList(SQLX.account, q.accountIds);
  inList("li.region_id", q.regions);
  inList("li.service_name", q.services);
  const rows = await queryRows<any>(
    db,
    `WITH u AS (
       SELECT li.provider, li.service_name, li.region_id, ${SQLX.instanceFamily} AS fam, li.charge_period_start AS s, li.charge_period_end AS e, ${SQLX.odEq} AS od
       FROM billing_line_items li
       WHERE ${where} ${extra.map((e) => `AND ${e}`).join(" ")}
         AND li.charge_category = 'Usage' AND (li.commitment_discount_id IS NULL OR li.commitment_discount_status = 'Used')
     )
     SELECT to_char(h AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:00:00"Z"') AS hour, provider, service_name, region_id, fam, SUM(od / n) AS cost
     FROM (
       SELECT u.*, GREATEST(1, CEIL(EXTRACT(EPOCH FROM (u.e - u.s)) / 3600))::int AS n FROM u
     ) x
     CROSS JOIN LATERAL generate_series(date_trunc('hour', x.s), date_trunc('hour', x.s) + (x.n - 1) * interval '1 hour', interval '1 hour') AS h
     WHERE h < $3::timestamptz
     GROUP BY 1, 2, 3, 4, 5 ORDER BY 2, 3, 4, 5, 1`,
    params,
  );
  return rows.map((r) => ({
    hour: r.hour,
    provider: r.provider,
    service: r.service_name,
    region: r.region_id,
    instance_family: r.fam,
    ondemand_equivalent_cost: num(r.cost),
  }));
}
