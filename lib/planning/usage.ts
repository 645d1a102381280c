/**
 * Hourly on-demand-equivalent usage of a segment per commitment group (provider, region,
 * instance family), read from billing_line_items. Same definitions as
 * lib/billing/queries.ts `hourlyOnDemandEquivalentUsage` (shared SQLX snippets), plus the
 * template's `resource_ids` filter; returned as dense hourly arrays for the optimizer.
 */
import type { DbOrTx } from "../db/index.ts";
import { SQLX } from "../billing/queries.ts";
import { queryRows, num } from "../billing/sql.ts";
import type { SegmentFilters } from "../segments/service.ts";
import type { Provider } from "../templates/enums.ts";
import { ValidationError } from "../errors.ts";

export interface GroupUsage {
  key: string;
  service: string | null;
  region: string;
  instanceFamily: string;
  /** On-demand-equivalent $ per hour, one entry per hour of the window. */
  hourlyCost: Float64Array;
}

const HOUR = 3_600_000;

/**
 * The usage of the window is billed in rows longer than a day (a monthly-grain export): which
 * hours of the month the usage ran is unknown, and the optimizer sizes on the hours, so spreading
 * a row evenly would size commitments on its average — too much for usage that did not run all
 * month. Plans need hourly (or daily) usage; the caller is told so, once (no retry would help).
 */
export class CoarseUsageError extends ValidationError {
  constructor(provider: string, from: Date, to: Date, example: { s: Date; e: Date }) {
    const day = (d: Date) => d.toISOString().slice(0, 10);
    super(
      `The ${provider} usage between ${day(from)} and ${day(to)} is billed in rows that each cover more than a day (e.g. ${day(example.s)} to ${day(example.e)}): ` +
        "the hours it ran cannot be told from them, so no plan was sized. Import the provider's cost export at hourly (or daily) granularity.",
      {},
      "usage_too_coarse",
    );
  }
}

export async function segmentHourlyUsage(
  db: DbOrTx,
  orgId: string,
  q: { provider: Provider; from: Date; to: Date; filters: SegmentFilters; resourceIds: string[] },
): Promise<GroupUsage[]> {
  const params: unknown[] = [orgId, q.from.toISOString(), q.to.toISOString(), q.provider];
  const extra: string[] = [];
  const inList = (expr: string, values?: string[]) => {
    if (!values?.length) return;
    extra.push(`${expr} IN (${values.map((v) => `$${params.push(v)}`).join(", ")})`);
  };
  inList(SQLX.account, q.filters.account_ids);
  inList("li.region_id", q.filters.regions);
  inList("li.service_name", q.filters.services);
  inList("li.resource_id", q.resourceIds);
  const where = `li.org_id = $1::uuid AND li.provider = $4
         -- billing_period first so the (org, billing_period, provider) index prunes the history
         AND li.billing_period >= (date_trunc('month', $2::timestamptz) - interval '1 month')::date
         AND li.charge_period_start < $3::timestamptz AND li.charge_period_end > $2::timestamptz
         AND li.charge_category = 'Usage' AND (li.commitment_discount_id IS NULL OR li.commitment_discount_status = 'Used')
         AND li.instance_type IS NOT NULL AND li.region_id IS NOT NULL
         ${extra.map((e) => `AND ${e}`).join(" ")}`;
  const rows = await queryRows<any>(
    db,
    `WITH u AS (
       SELECT li.service_name, li.region_id, ${SQLX.instanceFamily} AS fam, li.charge_period_start AS s, li.charge_period_end AS e, ${SQLX.odEq} AS od
       FROM billing_line_items li
       WHERE ${where}
     )
     SELECT floor(EXTRACT(EPOCH FROM h) - EXTRACT(EPOCH FROM $2::timestamptz))::bigint / 3600 AS idx, service_name, region_id, fam, SUM(od / n) AS cost,
            min(x.s) FILTER (WHERE x.e - x.s > interval '1 day') AS coarse_s, min(x.e) FILTER (WHERE x.e - x.s > interval '1 day') AS coarse_e
     FROM (SELECT u.*, GREATEST(1, CEIL(EXTRACT(EPOCH FROM (u.e - u.s)) / 3600))::int AS n FROM u) x
     CROSS JOIN LATERAL generate_series(date_trunc('hour', x.s), date_trunc('hour', x.s) + (x.n - 1) * interval '1 hour', interval '1 hour') AS h
     WHERE h >= $2::timestamptz AND h < $3::timestamptz
     GROUP BY 1, 2, 3, 4`,
    params,
  );
  // A row spanning more than a day (monthly-grain data) is seen in the same scan: its hours are unknown.
  const coarse = rows.find((r) => r.coarse_s != null);
  if (coarse) throw new CoarseUsageError(q.provider, q.from, q.to, { s: new Date(coarse.coarse_s), e: new Date(coarse.coarse_e) });
  const hours = Math.max(0, Math.round((q.to.getTime() - q.from.getTime()) / HOUR));
  const groups = new Map<string, GroupUsage>();
  for (const r of rows) {
    if (!r.fam) continue;
    const key = `${r.region_id}|${r.fam}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { key, service: r.service_name ?? null, region: r.region_id, instanceFamily: r.fam, hourlyCost: new Float64Array(hours) }));
    const i = Number(r.idx);
    if (i >= 0 && i < hours) g.hourlyCost[i]! += num(r.cost);
  }
  return [...groups.values()].sort((a, b) => a.key.localeCompare(b.key));
}

/** Instance family by the same rule as SQLX.instanceFamily (billing side). */
export function familyOf(provider: Provider, instanceType: string): string {
  if (!instanceType) return "";
  if (provider === "aws") return instanceType.split(".")[0]!;
  if (provider === "gcp") return instanceType.split("-")[0]!;
  return instanceType.replace(/[0-9]+/g, "");
}
