/**
 * Ad-hoc cost queries over the FOCUS line items (the assistant's "cost explorer"): costs of a
 * window of days grouped by up to three dimensions (incl. FOCUS tags) with filters, the distinct
 * values of a dimension, and the comparison of two periods with the drivers of the change.
 *
 * Money follows the reports' rounding (lib/reports/catalog.ts `shownSql`, DESIGN §12): the
 * amounts are computed exactly per cell (the grain of the rows plus the filtered dimensions),
 * then rounded to cents by largest remainder within each invoice — provider, billing currency,
 * billing account and billing month — so that each invoice's part in the window is its exact
 * total to the cent (its commitment cost too), each invoice's part of a cell is the floor or
 * ceiling of its exact amount, a cell spanning invoices is the sum of its parts' cents, and
 * every total is the sum of the cents shown. Filters are applied to the rounded cells (as a report's filters
 * are): a filter never changes the cents of what it keeps, and a query at a report's grain
 * shows the report's cents. Filters on provider and billing account select whole invoices and
 * go into the scan (the (org, billing_period, provider, billing_account) index).
 *
 * Amounts in different billing currencies are never added: the currency is part of every
 * grouping and totals are per currency. SQL is parameterised throughout (tag keys and values,
 * filter values); only fixed expressions are composed.
 */
import type { DbOrTx } from "../db/index.ts";
import { ValidationError } from "../errors.ts";
import { fromCents, toCents } from "../pricing/display.ts";
import { cents } from "../pricing/index.ts";
import { BILL_PARTS, billTotal, shownSql, type FieldDescriptor, type MoneyRounding } from "../reports/catalog.ts";
import { chargeWindowWhere, listCommitments, listLinkedAccounts, SQLX, type CommitmentView } from "./queries.ts";
import { queryRows, type Provider } from "./sql.ts";

/** The dimensions of a cost query, besides `tag:<key>` (a FOCUS tag). */
export const COST_DIMENSIONS = ["provider", "billing_account", "account", "service", "service_category", "region", "resource", "charge_category", "commitment", "month", "day"] as const;
export type BaseDimension = (typeof COST_DIMENSIONS)[number];
export const TAG_PREFIX = "tag:";
export const TAG_KEY_MAX = 128;
export const MAX_GROUP_BY = 3;
export const MAX_FILTERS = 10;
export const MAX_FILTER_VALUES = 50;
export const MAX_LIMIT = 1000;

/** The row expression of each dimension (the account as the reports define it: SQLX.account). */
const DIMENSION_SQL: Record<BaseDimension, string> = {
  provider: "li.provider",
  billing_account: "li.billing_account_id",
  account: SQLX.account,
  service: "li.service_name",
  service_category: "li.service_category",
  region: "li.region_id",
  resource: "li.resource_id",
  charge_category: "li.charge_category",
  commitment: "li.commitment_discount_id",
  month: SQLX.chargeMonth,
  day: SQLX.chargeDay,
};

/** Exact sums of a cell (numeric), named as the rounding below expects: the bill's split (SQLX) as spendBy and the cloud_bill reports, whose three parts add up to Σ EffectiveCost. */
const MONEY_SUMS = `(COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.ondemand}), 0))::numeric AS ondemand_cost,
  (COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.commitmentCost}), 0))::numeric AS commitment_cost,
  (COALESCE(SUM(li.effective_cost) FILTER (WHERE ${SQLX.otherCost}), 0))::numeric AS other_cost,
  (SUM(li.effective_cost))::numeric AS effective_cost,
  (SUM(li.billed_cost))::numeric AS billed_cost,
  (COALESCE(SUM(li.list_cost), 0))::numeric AS list_cost`;

export const MONEY_FIELDS = ["effective_cost", "billed_cost", "list_cost", "ondemand_cost", "commitment_cost", "other_cost"] as const;
export type MoneyField = (typeof MONEY_FIELDS)[number];

/**
 * As the cloud_bill reports (their BILL_PARTS): on-demand, commitment and other are rounded
 * together (their sum over an invoice is its exact effective cost to the cent, and so is the
 * commitment cost) and effective_cost is the sum of the three as shown; billed and list cost are
 * rounded on their own.
 */
const ROUNDING: MoneyRounding = {
  groups: [[...BILL_PARTS], [{ column: "billed_cost", sign: 1 }], [{ column: "list_cost", sign: 1 }]],
  derived: [billTotal("effective_cost")],
};

const field = (name: string, type: FieldDescriptor["type"] = "string"): FieldDescriptor => ({ name, type, description: name });
const MONEY_OUTPUT = MONEY_FIELDS.map((m) => field(m, "number"));

/**
 * The invoice of a cell (`shownSql`'s `invoice` column, as every report's): the billing month
 * and the billing account (fixed-length prefix: distinct invoices never share a key). Cells are
 * rounded within their invoice and summed over the invoices they span, as the reports' rows are.
 * The plain billing account id travels in `payer_id` when the billing account is a dimension.
 */
const MONTH_KEY = "to_char(li.billing_period, 'YYYY-MM')";
const INVOICE_KEY = `${MONTH_KEY} || ':' || li.billing_account_id`;

export interface Dimension {
  /** As given: `service`, `tag:team`. */
  name: string;
  base: BaseDimension | "tag";
  tagKey?: string;
}

/** Parses and checks one dimension name; a ValidationError names the allowed ones. */
export function parseDimension(name: string, what = "dimension"): Dimension {
  if (typeof name !== "string") throw new ValidationError(`A ${what} must be a string.`, {});
  if (name.startsWith(TAG_PREFIX)) {
    const key = name.slice(TAG_PREFIX.length);
    if (!key.length || key.length > TAG_KEY_MAX) throw new ValidationError(`A tag ${what} is tag:<key> with a key of 1 to ${TAG_KEY_MAX} characters.`, { [what]: [name.slice(0, 200)] });
    return { name, base: "tag", tagKey: key };
  }
  if (!(COST_DIMENSIONS as readonly string[]).includes(name))
    throw new ValidationError(`Unknown ${what} "${name.slice(0, 200)}": use one of ${COST_DIMENSIONS.join(", ")} or tag:<key>.`, { [what]: [name.slice(0, 200)] });
  return { name, base: name as BaseDimension };
}

function dimensionSql(d: Dimension, params: unknown[]): string {
  return d.base === "tag" ? `(li.tags ->> $${params.push(d.tagKey)}::text)` : DIMENSION_SQL[d.base];
}

export type FilterValue = string | null;
export type CostFilters = Record<string, FilterValue | FilterValue[]>;

interface Filter {
  dim: Dimension;
  values: FilterValue[];
}

function parseFilters(filters: CostFilters | undefined): Filter[] {
  const entries = Object.entries(filters ?? {});
  if (entries.length > MAX_FILTERS) throw new ValidationError(`At most ${MAX_FILTERS} filters.`, {});
  return entries.map(([name, v]) => {
    const dim = parseDimension(name, "filter");
    const values = Array.isArray(v) ? v : [v];
    if (!values.length) throw new ValidationError(`Filter ${name}: give at least one value.`, {});
    if (values.length > MAX_FILTER_VALUES) throw new ValidationError(`Filter ${name}: at most ${MAX_FILTER_VALUES} values.`, {});
    for (const x of values) if (x !== null && typeof x !== "string") throw new ValidationError(`Filter ${name}: values are strings (or null for "not set").`, {});
    return { dim, values };
  });
}

/** `expr` is one of the values (null matches rows where the dimension is not set). */
function inValues(expr: string, values: FilterValue[], params: unknown[]): string {
  const set = [...new Set(values.filter((v): v is string => v !== null))];
  const parts: string[] = [];
  if (set.length) parts.push(`${expr} IN (${set.map((v) => `$${params.push(v)}::text`).join(", ")})`);
  if (values.includes(null)) parts.push(`${expr} IS NULL`);
  return `(${parts.join(" OR ")})`;
}

export interface CostWindow {
  /** Inclusive, by charge period start. */
  from: Date;
  /** Exclusive. */
  to: Date;
}

/** Columns of the rounded cells: provider, the billing account (payer_id), or k0, k1… */
function cellColumn(d: Dimension, i: number): string {
  return d.base === "provider" ? "provider" : d.base === "billing_account" ? "payer_id" : `k${i}`;
}

interface Cells {
  /** SELECT of the rounded cells that pass the filters: provider, billing_currency, payer_id, k…, money (2 decimals). */
  sql: string;
  /** Column of each wanted dimension in the cells. */
  column(name: string): string;
}

/**
 * The rounded cells of a window at the grain of `dims` plus the filtered dimensions, filtered.
 * `extraWhere` (on the cells' columns) narrows further, e.g. a prefix search. `currency` keeps
 * one billing currency, in the scan: it selects whole invoices, so no cent of what it keeps changes.
 */
function roundedCells(
  orgId: string,
  w: CostWindow,
  dims: Dimension[],
  filters: Filter[],
  params: unknown[],
  extraWhere?: (column: (name: string) => string) => string | null,
  currency?: string,
): Cells {
  const grain: Dimension[] = [];
  for (const d of [...dims, ...filters.map((f) => f.dim)]) if (!grain.some((g) => g.name === d.name)) grain.push(d);
  const cols = new Map(grain.map((d, i) => [d.name, cellColumn(d, i)]));
  const column = (name: string) => cols.get(name)!;
  const keyed = grain.filter((d) => d.base !== "provider" && d.base !== "billing_account");

  const where = [chargeWindowWhere({ orgId }, w, params)];
  // Provider and billing account select whole invoices: filtered in the scan.
  const pushed = filters.filter((f) => f.dim.base === "provider" || f.dim.base === "billing_account");
  for (const f of pushed) where.push(inValues(DIMENSION_SQL[f.dim.base as BaseDimension], f.values, params));
  if (currency !== undefined) where.push(`li.billing_currency = $${params.push(currency)}::text`);
  const keyExprs = keyed.map((d) => `${dimensionSql(d, params)} AS ${column(d.name)}`);
  const perPayer = grain.some((d) => d.base === "billing_account");
  const exactSql = `SELECT li.provider, li.billing_currency, ${INVOICE_KEY} AS _invoice, ${perPayer ? "li.billing_account_id" : "NULL::text"} AS payer_id${keyExprs.map((e) => `, ${e}`).join("")},
      ${MONEY_SUMS}
    FROM billing_line_items li
    WHERE ${where.join(" AND ")}
    GROUP BY ${[1, 2, 3, 4, ...keyed.map((_, i) => 5 + i)].join(", ")}`;
  const shown = shownSql({
    exactSql,
    output_fields: [field("provider"), field("billing_currency"), field("payer_id"), ...keyed.map((d) => field(column(d.name))), ...MONEY_OUTPUT],
    // Ties of the largest remainder go by the cells' keys in the order asked (a report's grain
    // asked in the report's column order gives the report's cents).
    orderBy: ["provider", "billing_currency", ...keyed.map((d) => column(d.name))],
    rounding: ROUNDING,
    invoice: "_invoice",
  });
  const post = filters.filter((f) => !pushed.includes(f)).map((f) => inValues(`c.${column(f.dim.name)}`, f.values, params));
  const extra = extraWhere?.((n) => `c.${column(n)}`);
  if (extra) post.push(extra);
  return { sql: `SELECT c.* FROM (${shown}) c${post.length ? ` WHERE ${post.join(" AND ")}` : ""}`, column };
}

const money = (v: unknown): number => cents(v === null || v === undefined ? 0 : Number(v));

export type CostAmounts = Record<MoneyField, number>;

export interface CostRow extends CostAmounts {
  currency: string;
  /** Value of each group_by dimension, by its name as given (`service`, `tag:team`); null: not set. */
  keys: Record<string, string | null>;
}

export interface CostTotals extends CostAmounts {
  currency: string;
  rows: number;
}

export interface CostQuery {
  window: CostWindow;
  groupBy?: string[];
  filters?: CostFilters;
  /** Only amounts billed in this currency (FOCUS BillingCurrency, e.g. EUR): rows, totals and the limit are that currency's. */
  currency?: string;
  /** Rows returned (each currency's largest effective cost first, by currency); totals cover all rows. */
  limit?: number;
}

export interface CostQueryResult {
  group_by: string[];
  rows: CostRow[];
  total_rows: number;
  truncated: boolean;
  /** Per currency (sorted by currency code), over all rows (also those left out by the limit): sums of the rows' cents. */
  totals: CostTotals[];
}

function checkLimit(limit: number | undefined, def: number): number {
  const l = limit ?? def;
  if (!Number.isInteger(l) || l < 1 || l > MAX_LIMIT) throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIMIT}.`, {});
  return l;
}

function parseGroupBy(groupBy: string[] | undefined): Dimension[] {
  const dims = (groupBy ?? []).map((g) => parseDimension(g, "group_by"));
  if (dims.length > MAX_GROUP_BY) throw new ValidationError(`group_by takes at most ${MAX_GROUP_BY} dimensions.`, {});
  if (new Set(dims.map((d) => d.name)).size !== dims.length) throw new ValidationError("group_by names a dimension twice.", {});
  return dims;
}

const sumList = MONEY_FIELDS.map((m) => `SUM(c.${m}) AS ${m}`).join(", ");

/** Costs of a window grouped by up to three dimensions (currency always), filtered; one statement. */
export async function queryCosts(db: DbOrTx, orgId: string, q: CostQuery): Promise<CostQueryResult> {
  const dims = parseGroupBy(q.groupBy);
  const filters = parseFilters(q.filters);
  const limit = checkLimit(q.limit, 100);
  if (q.currency !== undefined && !/^[A-Z]{3}$/.test(q.currency)) throw new ValidationError("currency must be an ISO 4217 code in capitals, e.g. USD.", {});
  const params: unknown[] = [];
  const cells = roundedCells(orgId, q.window, dims, filters, params, undefined, q.currency);
  const keyCols = dims.map((d, i) => `c.${cells.column(d.name)} AS d${i}`);
  // Rows are ranked within their currency (amounts of different currencies are not compared):
  // the limit keeps each currency's largest rows in turn, shown by currency, largest first.
  const within = ["g.effective_cost DESC", ...dims.map((_, i) => `g.d${i} ASC NULLS FIRST`)].join(", ");
  const nullKeys = dims.map((_, i) => `NULL::text AS d${i}`);
  const rows = await queryRows<any>(
    db,
    `WITH c AS MATERIALIZED (${cells.sql}),
     g AS (SELECT c.billing_currency AS currency${keyCols.map((k) => `, ${k}`).join("")}, ${sumList} FROM c GROUP BY ${[1, ...dims.map((_, i) => i + 2)].join(", ")}),
     ranked AS (SELECT g.*, row_number() OVER (PARTITION BY g.currency ORDER BY ${within}) AS crk FROM g),
     kept AS (SELECT ranked.* FROM ranked ORDER BY ranked.crk, ranked.currency LIMIT $${params.push(limit)}),
     top AS (SELECT kept.*, row_number() OVER (ORDER BY kept.currency, kept.crk) AS rk FROM kept)
     SELECT 'row' AS kind, top.currency${dims.map((_, i) => `, top.d${i}`).join("")}, ${MONEY_FIELDS.map((m) => `top.${m}`).join(", ")}, top.rk AS n FROM top
     UNION ALL
     SELECT 'total', g.currency${nullKeys.map((k) => `, ${k}`).join("")}, ${MONEY_FIELDS.map((m) => `SUM(g.${m})`).join(", ")}, count(*) FROM g GROUP BY g.currency
     ORDER BY 1 DESC, ${dims.length + MONEY_FIELDS.length + 3}, 2`,
    params,
  );
  const amounts = (r: any) => Object.fromEntries(MONEY_FIELDS.map((m) => [m, money(r[m])])) as CostAmounts;
  const shown = rows.filter((r) => r.kind === "row").map((r) => ({ currency: r.currency as string, keys: Object.fromEntries(dims.map((d, i) => [d.name, r[`d${i}`] ?? null])), ...amounts(r) }));
  const totals = rows
    .filter((r) => r.kind === "total")
    .map((r) => ({ currency: r.currency as string, rows: Number(r.n), ...amounts(r) }))
    .sort((a, b) => a.currency.localeCompare(b.currency));
  const totalRows = totals.reduce((a, t) => a + t.rows, 0);
  return { group_by: dims.map((d) => d.name), rows: shown, total_rows: totalRows, truncated: shown.length < totalRows, totals };
}

export interface DimensionValue {
  value: string | null;
  /** Effective cost (amortized) per currency, largest first. */
  costs: { currency: string; effective_cost: number }[];
}

export interface DimensionValuesResult {
  dimension: string;
  values: DimensionValue[];
  total_values: number;
  truncated: boolean;
  /** Per currency over all values (none for tag_keys: a row counts for every key it carries). */
  totals: { currency: string; effective_cost: number }[];
}

/**
 * The distinct values of one dimension in a window (most costly first: by their largest cost in
 * any currency), with their effective cost per currency; `tag_keys` lists the tag keys. `prefix`
 * keeps the values starting with it (case-insensitive).
 */
export async function listDimensionValues(
  db: DbOrTx,
  orgId: string,
  q: { window: CostWindow; dimension: string; prefix?: string; filters?: CostFilters; limit?: number },
): Promise<DimensionValuesResult> {
  const limit = checkLimit(q.limit, 100);
  const filters = parseFilters(q.filters);
  if (q.prefix !== undefined && q.prefix.length > 256) throw new ValidationError("prefix: at most 256 characters.", {});
  const params: unknown[] = [];
  let valuesSql: string;
  if (q.dimension === "tag_keys") {
    // Cost per key: every row counts for each key it carries, so no rounding partition applies:
    // each (key, currency) amount is rounded on its own.
    const where = [chargeWindowWhere({ orgId }, q.window, params), "jsonb_typeof(li.tags) = 'object'"];
    for (const f of filters) where.push(inValues(dimensionSql(f.dim, params), f.values, params));
    const prefix = q.prefix ? ` AND starts_with(lower(k.key), lower($${params.push(q.prefix)}::text))` : "";
    valuesSql = `SELECT k.key AS value, li.billing_currency AS currency, SUM(li.effective_cost) AS cost
      FROM billing_line_items li CROSS JOIN LATERAL jsonb_object_keys(li.tags) AS k(key)
      WHERE ${where.join(" AND ")}${prefix}
      GROUP BY 1, 2`;
  } else {
    const dim = parseDimension(q.dimension);
    const cells = roundedCells(orgId, q.window, [dim], filters, params, (col) => (q.prefix ? `starts_with(lower(${col(dim.name)}), lower($${params.push(q.prefix)}::text))` : null));
    valuesSql = `SELECT c.${cells.column(dim.name)} AS value, c.billing_currency AS currency, SUM(c.effective_cost) AS cost FROM (${cells.sql}) c GROUP BY 1, 2`;
  }
  const rows = await queryRows<any>(
    db,
    `WITH v AS MATERIALIZED (${valuesSql}),
     t AS (SELECT value, max(cost) AS top FROM v GROUP BY value),
     r AS (SELECT t.value, row_number() OVER (ORDER BY t.top DESC, t.value ASC NULLS FIRST) AS rk, count(*) OVER () AS n FROM t)
     SELECT 'value' AS kind, r.value, r.rk, r.n, v.currency, v.cost FROM r JOIN v ON v.value IS NOT DISTINCT FROM r.value WHERE r.rk <= $${params.push(limit)}
     UNION ALL
     SELECT 'total', NULL, NULL, NULL, v.currency, SUM(v.cost) FROM v GROUP BY v.currency
     ORDER BY 1 DESC, 3, 6 DESC, 5`,
    params,
  );
  const values: DimensionValue[] = [];
  let total = 0;
  for (const r of rows.filter((x) => x.kind === "value")) {
    total = Number(r.n);
    const last = values[values.length - 1];
    const cost = { currency: r.currency as string, effective_cost: money(r.cost) };
    if (last && Number(r.rk) === values.length) last.costs.push(cost);
    else values.push({ value: r.value ?? null, costs: [cost] });
  }
  const totals =
    q.dimension === "tag_keys"
      ? []
      : rows
          .filter((r) => r.kind === "total")
          .map((r) => ({ currency: r.currency as string, effective_cost: money(r.cost) }))
          .sort((a, b) => a.currency.localeCompare(b.currency));
  return { dimension: q.dimension, values, total_values: total, truncated: values.length < total, totals };
}

export const DRIVER_DIMENSIONS = ["account", "service", "resource", "commitment"] as const;
export type DriverDimension = (typeof DRIVER_DIMENSIONS)[number];
export const COMPARE_METRICS = ["effective_cost", "billed_cost", "list_cost"] as const;
export type CompareMetric = (typeof COMPARE_METRICS)[number];

export interface PeriodTotals {
  currency: string;
  baseline: number;
  current: number;
  change: number;
}

export interface DriverRow {
  currency: string;
  provider: string;
  /** Account id, service name, resource id or commitment id; null: charges without one. */
  key: string | null;
  /** Display name of an account (linked-account inventory) or commitment; null when unknown. */
  name: string | null;
  baseline: number;
  current: number;
  change: number;
}

export interface DimensionDrivers {
  dimension: DriverDimension;
  /** The largest changes (by absolute value) per currency, largest first. */
  top: DriverRow[];
  /** Per currency: the change of every key (top and the rest); it is the total change. */
  by_currency: { currency: string; keys: number; top_change: number; rest_change: number; change: number }[];
}

export interface CommitmentEvent {
  commitment: CommitmentView;
  /** Change of the commitment's cost rows between the periods (0 when it had none), per currency. */
  changes: { currency: string; baseline: number; current: number; change: number }[];
}

export interface PeriodComparison {
  metric: CompareMetric;
  totals: PeriodTotals[];
  drivers: DimensionDrivers[];
  commitments_started: CommitmentEvent[];
  commitments_expired: CommitmentEvent[];
}

/** A dimension key of the comparison cells (the driver dimensions' row expressions). */
const DRIVER_SQL: Record<DriverDimension, string> = { account: DIMENSION_SQL.account, service: DIMENSION_SQL.service, resource: DIMENSION_SQL.resource, commitment: DIMENSION_SQL.commitment };

/**
 * Two periods compared: totals per currency and, for accounts, services, resources and
 * commitments, the keys whose cost changed most. One statement: the windows' rows are summed
 * once at the finest grain, then each dimension is rounded per invoice and period like
 * queryCosts, so each dimension's changes add up to the same total change, to the cent.
 */
export async function comparePeriods(
  db: DbOrTx,
  orgId: string,
  q: { baseline: CostWindow; current: CostWindow; top?: number; metric?: CompareMetric; provider?: Provider },
): Promise<PeriodComparison> {
  const top = q.top ?? 10;
  if (!Number.isInteger(top) || top < 1 || top > 100) throw new ValidationError("top must be an integer from 1 to 100.", {});
  const metric = q.metric ?? "effective_cost";
  if (!COMPARE_METRICS.includes(metric)) throw new ValidationError(`metric must be one of ${COMPARE_METRICS.join(", ")}.`, {});
  const params: unknown[] = [orgId];
  const ts = (d: Date) => `$${params.push(d.toISOString())}::timestamptz`;
  const lowest = q.baseline.from < q.current.from ? q.baseline.from : q.current.from;
  const where = [`li.org_id = $1::uuid`, `li.billing_period >= (date_trunc('month', ${ts(lowest)}) - interval '1 month')::date`];
  if (q.provider) where.push(`li.provider = $${params.push(q.provider)}`);
  const fineKeys = DRIVER_DIMENSIONS.map((d) => `${DRIVER_SQL[d]} AS ${d}`);
  // A row in both windows (overlapping periods) counts in each.
  const fine = `w(per, f, t) AS (VALUES ('baseline', ${ts(q.baseline.from)}, ${ts(q.baseline.to)}), ('current', ${ts(q.current.from)}, ${ts(q.current.to)})),
    fine AS MATERIALIZED (
      SELECT w.per, li.provider, li.billing_currency, li.billing_period, li.billing_account_id, ${fineKeys.join(", ")}, ${MONEY_SUMS}
      FROM billing_line_items li JOIN w ON li.charge_period_start >= w.f AND li.charge_period_start < w.t
      WHERE ${where.join(" AND ")}
      GROUP BY ${Array.from({ length: 5 + DRIVER_DIMENSIONS.length }, (_, i) => i + 1).join(", ")}
    )`;
  // Each (dimension, period, invoice) is a rounding partition: its key leads with the dimension
  // and the period (fixed names without ':'), then the billing month and account.
  const exactSql = `SELECT f.provider, f.billing_currency, d.dim || ':' || f.per || ':' || to_char(f.billing_period, 'YYYY-MM') || ':' || f.billing_account_id AS billing_account_id,
      d.dim, f.per, d.key AS k0, ${MONEY_FIELDS.map((m) => `(SUM(f.${m}))::numeric AS ${m}`).join(", ")}
    FROM fine f CROSS JOIN LATERAL (VALUES ${DRIVER_DIMENSIONS.map((d) => `('${d}', f.${d})`).join(", ")}) AS d(dim, key)
    GROUP BY f.provider, f.billing_currency, d.dim, f.per, f.billing_period, f.billing_account_id, d.key`;
  const shown = shownSql({
    exactSql,
    output_fields: [field("provider"), field("billing_currency"), field("billing_account_id"), field("dim"), field("per"), field("k0"), ...MONEY_OUTPUT],
    orderBy: ["provider", "billing_currency", "billing_account_id", "k0"],
    rounding: ROUNDING,
  });
  // Commitments that started or ended between the start of the earlier period and the end of the later one.
  const spanFrom = lowest;
  const spanTo = q.baseline.to > q.current.to ? q.baseline.to : q.current.to;
  const inventory = await listCommitments(db, orgId, { status: "all", provider: q.provider });
  const within = (iso: string | null) => iso !== null && new Date(iso) >= spanFrom && new Date(iso) < spanTo;
  const started = inventory.filter((c) => within(c.starts_at));
  const expired = inventory.filter((c) => within(c.ends_at));
  const eventIds = [...new Set([...started, ...expired].map((c) => c.provider_commitment_id))];
  const eventFilter = eventIds.length ? ` OR (r.dim = 'commitment' AND r.key IN (${eventIds.map((id) => `$${params.push(id)}::text`).join(", ")}))` : "";
  const topParam = params.push(top);
  const rows = await queryRows<any>(
    db,
    `WITH ${fine},
     s AS (SELECT * FROM (${shown}) s0),
     k AS (SELECT s.dim, s.billing_currency AS currency, s.provider, s.k0 AS key,
             COALESCE(SUM(s.${metric}) FILTER (WHERE s.per = 'baseline'), 0) AS baseline, COALESCE(SUM(s.${metric}) FILTER (WHERE s.per = 'current'), 0) AS current
           FROM s GROUP BY 1, 2, 3, 4),
     r AS (SELECT k.*, k.current - k.baseline AS change,
             row_number() OVER (PARTITION BY k.dim, k.currency ORDER BY abs(k.current - k.baseline) DESC, k.provider, k.key ASC NULLS FIRST) AS rk
           FROM k)
     SELECT 'row' AS kind, r.dim, r.currency, r.provider, r.key, r.baseline, r.current, r.change, r.rk AS n FROM r WHERE r.rk <= $${topParam}${eventFilter}
     UNION ALL
     SELECT 'all', r.dim, r.currency, NULL, NULL, SUM(r.baseline), SUM(r.current), SUM(r.change), count(*) FROM r GROUP BY r.dim, r.currency
     UNION ALL
     SELECT 'top', r.dim, r.currency, NULL, NULL, SUM(r.baseline), SUM(r.current), SUM(r.change), count(*) FROM r WHERE r.rk <= $${topParam} GROUP BY r.dim, r.currency
     ORDER BY 2, 3, 1, 9`,
    params,
  );
  const accounts = new Map((await listLinkedAccounts(db, orgId, q.provider)).map((a) => [`${a.provider}|${a.account_id}`, a.name]));
  const commitmentNames = new Map(inventory.map((c) => [`${c.provider}|${c.provider_commitment_id}`, c.name]));
  const nameOf = (dim: string, provider: string, key: string | null) =>
    key === null ? null : ((dim === "account" ? accounts : dim === "commitment" ? commitmentNames : null)?.get(`${provider}|${key}`) ?? null);
  const row = (r: any): DriverRow => ({
    currency: r.currency,
    provider: r.provider,
    key: r.key ?? null,
    name: nameOf(r.dim, r.provider, r.key ?? null),
    baseline: money(r.baseline),
    current: money(r.current),
    change: money(r.change),
  });
  const drivers: DimensionDrivers[] = DRIVER_DIMENSIONS.map((dim) => {
    const of = rows.filter((r) => r.dim === dim);
    const currencies = [...new Set(of.filter((r) => r.kind === "all").map((r) => r.currency as string))].sort();
    return {
      dimension: dim,
      top: of.filter((r) => r.kind === "row" && Number(r.n) <= top).map(row).sort((a, b) => a.currency.localeCompare(b.currency) || Math.abs(b.change) - Math.abs(a.change)),
      by_currency: currencies.map((currency) => {
        const all = of.find((r) => r.kind === "all" && r.currency === currency)!;
        const topChange = money(of.find((r) => r.kind === "top" && r.currency === currency)?.change);
        const change = money(all.change);
        return { currency, keys: Number(all.n), top_change: topChange, rest_change: fromCents(toCents(change) - toCents(topChange)), change };
      }),
    };
  });
  // Every dimension covers the same cells: its totals are the periods' totals.
  const totals = rows
    .filter((r) => r.kind === "all" && r.dim === "account")
    .map((r) => ({ currency: r.currency as string, baseline: money(r.baseline), current: money(r.current), change: money(r.change) }));
  const commitmentRows = rows.filter((r) => r.kind === "row" && r.dim === "commitment");
  const event = (c: CommitmentView): CommitmentEvent => ({
    commitment: c,
    changes: commitmentRows.filter((r) => r.provider === c.provider && r.key === c.provider_commitment_id).map((r) => ({ currency: r.currency, baseline: money(r.baseline), current: money(r.current), change: money(r.change) })),
  });
  return { metric, totals, drivers, commitments_started: started.map(event), commitments_expired: expired.map(event) };
}

/** The last complete calendar month before `now`. */
export function lastCompleteMonth(now: Date): CostWindow {
  return { from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)), to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)) };
}

/**
 * The period just before `w` to compare it with: the same number of calendar months when `w`
 * is whole months (April for May, Q1 for Q2), else the same number of days.
 */
export function precedingPeriod(w: CostWindow): CostWindow {
  const wholeMonths = (d: Date) => d.getUTCDate() === 1 && d.getTime() % 86_400_000 === 0;
  if (wholeMonths(w.from) && wholeMonths(w.to)) {
    const months = (w.to.getUTCFullYear() - w.from.getUTCFullYear()) * 12 + (w.to.getUTCMonth() - w.from.getUTCMonth());
    return { from: new Date(Date.UTC(w.from.getUTCFullYear(), w.from.getUTCMonth() - months, 1)), to: w.from };
  }
  return { from: new Date(w.from.getTime() - (w.to.getTime() - w.from.getTime())), to: w.from };
}
