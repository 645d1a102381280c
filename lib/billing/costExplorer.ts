/**
 * The cost explorer as its clients see it — the assistant's `query_costs` and
 * `list_dimension_values` tools (lib/mcp/tools/costs.ts) and the Beta API's
 * `GET /costs`, `GET /costs/dimensions/{dimension}` (routes/beta/v1/org/[org_id]/costs/): the
 * reporting window, the money columns of a metric and the answer's shape, on the queries of
 * lib/billing/costQuery.ts. One implementation, so both clients show the same cents.
 */
import type { DbOrTx } from "../db/index.ts";
import { BadRequestError, NotFoundError, ValidationError } from "../errors.ts";
import { csvChunk } from "../reports/service.ts";
import type { ReportDefinition } from "../reports/catalog.ts";
import {
  COST_DIMENSIONS,
  listDimensionValues,
  MAX_FILTER_VALUES,
  MAX_LIMIT,
  parseDimension,
  queryCosts,
  TAG_KEY_MAX,
  TAG_PREFIX,
  type CostAmounts,
  type CostFilters,
  type DimensionValuesResult,
  type MoneyField,
} from "./costQuery.ts";

export const ymd = (d: Date) => d.toISOString().slice(0, 10);

function validDate(s: string): Date {
  const d = new Date(`${s}T00:00:00Z`);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s) throw new ValidationError(`${s} is not a calendar date.`, {});
  return d;
}

export interface ReportingWindow {
  from: Date;
  to: Date;
  start_date: string;
  end_date: string;
}

/** The reporting window: [start, end) days; default = the current month and the two before it. */
export function resolveWindow(now: Date, a: { start_date?: string; end_date?: string }): ReportingWindow {
  const from = a.start_date ? validDate(a.start_date) : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1));
  const to = a.end_date ? validDate(a.end_date) : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  if (to <= from) throw new ValidationError("end_date must be after start_date.", {});
  if (to.getTime() - from.getTime() > 3 * 366 * 86_400_000) throw new ValidationError("The window may span at most three years.", {});
  return { from, to, start_date: ymd(from), end_date: ymd(to) };
}

/** The money columns a cost query answers with. */
export const COST_METRICS = ["all", "effective_cost", "billed_cost", "list_cost", "split"] as const;
export type CostMetric = (typeof COST_METRICS)[number];
export const METRIC_FIELDS: Record<CostMetric, MoneyField[]> = {
  all: ["effective_cost", "billed_cost", "list_cost", "ondemand_cost", "commitment_cost", "other_cost"],
  effective_cost: ["effective_cost"],
  billed_cost: ["effective_cost", "billed_cost"],
  list_cost: ["effective_cost", "list_cost"],
  split: ["effective_cost", "ondemand_cost", "commitment_cost", "other_cost"],
};
const pick = (a: CostAmounts, fields: MoneyField[]) => Object.fromEntries(fields.map((f) => [f, a[f]])) as Partial<CostAmounts> & { effective_cost: number };

export interface CostExplorerQuery {
  start_date?: string;
  end_date?: string;
  group_by?: string[];
  filters?: CostFilters;
  metric?: CostMetric;
  limit?: number;
}

export interface CostExplorerResult {
  window: { start_date: string; end_date: string };
  group_by: string[];
  metric: CostMetric;
  rows: ({ currency: string; keys: Record<string, string | null> } & Partial<CostAmounts> & { effective_cost: number })[];
  total_rows: number;
  truncated: boolean;
  totals: ({ currency: string; rows: number } & Partial<CostAmounts> & { effective_cost: number })[];
}

/** `query_costs`: the costs of a window grouped and filtered, with the metric's money columns. */
export async function exploreCosts(db: DbOrTx, orgId: string, now: Date, q: CostExplorerQuery): Promise<CostExplorerResult> {
  const w = resolveWindow(now, q);
  const metric = q.metric ?? "all";
  const r = await queryCosts(db, orgId, { window: w, groupBy: q.group_by ?? [], filters: q.filters, limit: q.limit ?? 100 });
  const fields = METRIC_FIELDS[metric];
  return {
    window: { start_date: w.start_date, end_date: w.end_date },
    group_by: r.group_by,
    metric,
    rows: r.rows.map((x) => ({ currency: x.currency, keys: x.keys, ...pick(x, fields) })),
    total_rows: r.total_rows,
    truncated: r.truncated,
    totals: r.totals.map((t) => ({ currency: t.currency, rows: t.rows, ...pick(t, fields) })),
  };
}

export interface DimensionValuesQuery {
  dimension: string;
  start_date?: string;
  end_date?: string;
  prefix?: string;
  filters?: CostFilters;
  limit?: number;
}

/** `list_dimension_values`: the values of one dimension (or `tag_keys`) in a window, most costly first. */
export async function exploreDimensionValues(db: DbOrTx, orgId: string, now: Date, q: DimensionValuesQuery): Promise<{ window: { start_date: string; end_date: string } } & DimensionValuesResult> {
  const w = resolveWindow(now, q);
  const r = await listDimensionValues(db, orgId, { window: w, dimension: q.dimension, prefix: q.prefix, filters: q.filters, limit: q.limit ?? 100 });
  return { window: { start_date: w.start_date, end_date: w.end_date }, ...r };
}

/**
 * The rows of a cost query as RFC 4180 CSV (the reports' writer: money with two decimals, text
 * neutralised for spreadsheets): `currency`, one column per group_by dimension (named as given,
 * e.g. `tag:team`; empty = not set), then the metric's money columns — exactly the JSON rows.
 */
export function costRowsCsv(r: CostExplorerResult): string {
  const money = METRIC_FIELDS[r.metric];
  const layout = {
    output_fields: [
      { name: "currency", type: "string" as const, description: "" },
      ...r.group_by.map((g) => ({ name: g, type: "string" as const, description: "" })),
      ...money.map((m) => ({ name: m, type: "number" as const, description: "" })),
    ],
    money: [...money],
  } satisfies Pick<ReportDefinition, "output_fields" | "money">;
  const rows = r.rows.map((x) => ({ ...Object.fromEntries(r.group_by.map((g) => [g, x.keys[g] ?? null])), ...x, currency: x.currency }));
  // csvChunk reads only the layout of a report definition.
  return csvChunk(layout as ReportDefinition, rows, true);
}

// ---- The Beta API's query parameters (no request context: a URLSearchParams in, inputs out) ----

/** group_by dimensions a Beta API query takes (the assistant's query_costs takes up to MAX_GROUP_BY). */
export const API_MAX_GROUP_BY = 2;
export const FILTER_PARAMS = [...COST_DIMENSIONS] as readonly string[];
const COST_PARAMS = ["start_date", "end_date", "group_by", "metric", "limit", "format"];
const DIMENSION_PARAMS = ["start_date", "end_date", "prefix", "limit"];
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function single(sp: URLSearchParams, name: string): string | undefined {
  const all = sp.getAll(name);
  if (all.length > 1) throw new BadRequestError(`Invalid query parameter: give ${name} once.`, { [name]: ["must be given once"] });
  return all[0];
}

function dateParam(sp: URLSearchParams, name: string): string | undefined {
  const v = single(sp, name);
  if (v === undefined) return undefined;
  if (!DATE.test(v)) throw new BadRequestError(`Invalid query parameter: ${name} must be a date YYYY-MM-DD.`, { [name]: ["must be a date YYYY-MM-DD"] });
  return v;
}

function limitParam(sp: URLSearchParams): number | undefined {
  const v = single(sp, "limit");
  if (v === undefined) return undefined;
  const n = /^\d{1,7}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new BadRequestError(`Invalid query parameter: limit must be an integer from 1 to ${MAX_LIMIT}.`, { limit: [`must be an integer from 1 to ${MAX_LIMIT}`] });
  return n;
}

const DIMENSION_RULE = `must be one of ${COST_DIMENSIONS.join(", ")} or tag:<key> (a key of 1 to ${TAG_KEY_MAX} characters)`;

/** A dimension named by a query param (group_by, a filter's name): 400 naming the param. */
function checkDimension(name: string, field: string): void {
  try {
    parseDimension(name, field);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    const f = field.slice(0, 200);
    throw new BadRequestError(`Invalid query parameter ${f}: "${name.slice(0, 200)}" is not a cost dimension; use one of ${COST_DIMENSIONS.join(", ")} or tag:<key>.`, { [f]: [DIMENSION_RULE] });
  }
}

/** Every other param names a dimension to filter on: repeated for several values, empty = not set. */
function filterParams(sp: URLSearchParams, reserved: string[]): CostFilters | undefined {
  const filters: CostFilters = {};
  for (const name of new Set(sp.keys())) {
    if (reserved.includes(name)) continue;
    if (!FILTER_PARAMS.includes(name) && !name.startsWith(TAG_PREFIX))
      throw new BadRequestError(`Unknown query parameter "${name.slice(0, 200)}": filter on ${FILTER_PARAMS.join(", ")} or tag:<key>.`, { [name.slice(0, 200)]: ["is not a parameter of this operation"] });
    checkDimension(name, name);
    const values = sp.getAll(name).map((v) => (v === "" ? null : v));
    if (values.length > MAX_FILTER_VALUES) throw new BadRequestError(`Invalid query parameter ${name.slice(0, 200)}: at most ${MAX_FILTER_VALUES} values.`, { [name.slice(0, 200)]: [`must have at most ${MAX_FILTER_VALUES} values`] });
    filters[name] = values;
  }
  return Object.keys(filters).length ? filters : undefined;
}

/** `GET /costs`'s query: the same input as query_costs (filters as params), plus `format`. */
export function costQueryOfParams(sp: URLSearchParams): CostExplorerQuery & { format: "json" | "csv" } {
  const groupBy = sp
    .getAll("group_by")
    .flatMap((g) => g.split(","))
    .map((g) => g.trim())
    .filter((g) => g.length);
  if (groupBy.length > API_MAX_GROUP_BY) throw new BadRequestError(`Invalid query parameter: group_by takes at most ${API_MAX_GROUP_BY} dimensions.`, { group_by: [`must name at most ${API_MAX_GROUP_BY} dimensions`] });
  for (const g of groupBy) checkDimension(g, "group_by");
  if (new Set(groupBy).size !== groupBy.length) throw new BadRequestError("Invalid query parameter: group_by names a dimension twice.", { group_by: ["must not name a dimension twice"] });
  const metric = single(sp, "metric") ?? "all";
  if (!(COST_METRICS as readonly string[]).includes(metric)) throw new BadRequestError(`Invalid query parameter: metric must be one of ${COST_METRICS.join(", ")}.`, { metric: [`must be one of ${COST_METRICS.join(", ")}`] });
  const format = single(sp, "format") ?? "json";
  if (format !== "json" && format !== "csv") throw new BadRequestError("Invalid query parameter: format must be json or csv.", { format: ["must be json or csv"] });
  return {
    start_date: dateParam(sp, "start_date"),
    end_date: dateParam(sp, "end_date"),
    group_by: groupBy,
    metric: metric as CostMetric,
    limit: limitParam(sp),
    filters: filterParams(sp, COST_PARAMS),
    format,
  };
}

/**
 * `GET /costs/dimensions/{dimension}`'s query: the same input as list_dimension_values. The
 * dimension is the resource of the path: an unknown one is 404, a malformed tag:<key> 400.
 */
export function dimensionQueryOfParams(dimension: string, sp: URLSearchParams): DimensionValuesQuery {
  if (dimension !== "tag_keys" && !dimension.startsWith(TAG_PREFIX) && !FILTER_PARAMS.includes(dimension))
    throw new NotFoundError(`No cost dimension "${dimension.slice(0, 200)}": use one of ${COST_DIMENSIONS.join(", ")}, tag:<key> or tag_keys.`);
  try {
    if (dimension !== "tag_keys") parseDimension(dimension);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    throw new BadRequestError(`Invalid path parameter: dimension tag:<key> takes a key of 1 to ${TAG_KEY_MAX} characters.`, { dimension: [`must be tag:<key> with a key of 1 to ${TAG_KEY_MAX} characters`] });
  }
  const prefix = single(sp, "prefix");
  if (prefix !== undefined && (prefix.length < 1 || prefix.length > 256)) throw new BadRequestError("Invalid query parameter: prefix takes 1 to 256 characters.", { prefix: ["must have 1 to 256 characters"] });
  return { dimension, start_date: dateParam(sp, "start_date"), end_date: dateParam(sp, "end_date"), prefix, limit: limitParam(sp), filters: filterParams(sp, DIMENSION_PARAMS) };
}

/**
 * A query's input errors answer 400 on the API (they are query parameters): the domain's
 * ValidationError (unknown dimension, bad window…) becomes a BadRequestError with its message.
 */
export async function asBadRequest<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof ValidationError) throw new BadRequestError(e.message, e.errors);
    throw e;
  }
}
