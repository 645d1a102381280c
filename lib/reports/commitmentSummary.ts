/**
 * The headline figures of the commitment programme (REST `/commitment-summary`): per month and
 * billing currency the coverage figures of the allocation reports (lib/reports/coverage.ts, the
 * same rows the assistant's get_coverage_and_utilization sums), the Effective Savings Rate, and
 * the commitment lock-in of the inventory as of now.
 *
 * Formulas (money in integer cents of the rows as the reports show them; ratios from those cents):
 * - ondemand_equivalent_cost = covered_ondemand_cost + ondemand_cost: what the month's usage
 *   would have cost at on-demand rates (covered usage at list price, the rest as billed).
 * - realized_savings = savings − commitment_unused_allocated_cost: the savings on covered usage
 *   minus what the commitments cost unused (= on-demand equivalent − actual cost).
 * - effective_savings_rate (ESR) = realized_savings ÷ ondemand_equivalent_cost (null when 0).
 * - lock-in = Σ wᵢ·remainingᵢ ÷ Σ wᵢ over the commitments active now, remainingᵢ = time from now
 *   to the end of the commitment (insured `_gris`: to the end of its lock-in, after which it can
 *   be handed back) in months of 730 h (DESIGN §7), wᵢ = the committed cost per hour (recurring
 *   $/h + upfront amortized over the term).
 */
import type { DbOrTx } from "../db/index.ts";
import type { Provider } from "../billing/sql.ts";
import { listCommitments, type CommitmentView } from "../billing/queries.ts";
import { amortizedHourlyRate, HOURS_PER_MONTH, roundDecimal } from "../pricing/index.ts";
import { fromCents, rate6 } from "../pricing/display.ts";
import type { Services } from "../services.ts";
import { centsByCurrency, COVERAGE_MONEY, coverageReport, coverageShown, zeroCents, type CoverageAcc, type CoverageCents, type CoverageShown, type MonthStatus } from "./coverage.ts";

export interface SummaryFigures extends CoverageShown {
  ondemand_equivalent_cost: number;
  realized_savings: number;
  effective_savings_rate: number | null;
}

/** The shown figures of summed cents: the coverage figures, the on-demand equivalent, realized savings and the ESR. */
export function summaryFigures(x: CoverageCents): SummaryFigures {
  const ondemandEquivalent = x.covered_ondemand_cost + x.ondemand_cost;
  const realized = x.savings - x.commitment_unused_allocated_cost;
  return {
    ...coverageShown(x),
    ondemand_equivalent_cost: fromCents(ondemandEquivalent),
    realized_savings: fromCents(realized),
    effective_savings_rate: ondemandEquivalent !== 0 ? rate6(realized / ondemandEquivalent) : null,
  };
}

export interface CommitmentLockIn {
  as_of: string;
  /** Weighted remaining lock-in in months of 730 h (2 decimals); null when no active commitment has a known end and cost. */
  weighted_remaining_months: number | null;
  /** The same in years of 12 such months (2 decimals). */
  weighted_remaining_years: number | null;
  /** The active commitments weighed. */
  commitment_count: number;
  /** Σ of their committed cost per hour (the weights; each in its own billing currency). */
  committed_hourly_cost: number;
}

/** The weight of a commitment: its committed cost per hour (recurring + upfront amortized over start → end). */
export function committedHourlyCost(c: Pick<CommitmentView, "recurring_hourly_cost" | "upfront_cost" | "starts_at" | "ends_at">): number {
  const termSeconds = c.starts_at && c.ends_at ? (new Date(c.ends_at).getTime() - new Date(c.starts_at).getTime()) / 1000 : 0;
  return amortizedHourlyRate(c.recurring_hourly_cost ?? 0, c.upfront_cost ?? 0, termSeconds);
}

/** Where a commitment stops binding: the end of an insured commitment's lock-in, else its end. */
export const lockInEnd = (c: Pick<CommitmentView, "insured" | "lock_in_ends_at" | "ends_at">): string | null => (c.insured && c.lock_in_ends_at ? c.lock_in_ends_at : c.ends_at);

/** The committed-cost-weighted remaining lock-in of the commitments (those active at `now`; others and those without an end or a cost are left out). */
export function lockInOf(commitments: readonly CommitmentView[], now: Date): CommitmentLockIn {
  let weights = 0;
  let weighted = 0;
  let count = 0;
  for (const c of commitments) {
    const starts = c.starts_at ? new Date(c.starts_at).getTime() : null;
    const ends = c.ends_at ? new Date(c.ends_at).getTime() : null;
    if ((starts !== null && starts > now.getTime()) || (ends !== null && ends <= now.getTime())) continue;
    const end = lockInEnd(c);
    const w = committedHourlyCost(c);
    if (end === null || !(w > 0)) continue;
    const remainingMonths = Math.max(0, new Date(end).getTime() - now.getTime()) / 3_600_000 / HOURS_PER_MONTH;
    weights += w;
    weighted += w * remainingMonths;
    count++;
  }
  const months = weights > 0 ? weighted / weights : null;
  return {
    as_of: now.toISOString(),
    weighted_remaining_months: months === null ? null : roundDecimal(months, 2),
    weighted_remaining_years: months === null ? null : roundDecimal(months / 12, 2),
    commitment_count: count,
    committed_hourly_cost: rate6(weights),
  };
}

/** The lock-in of the org's commitments active at `now`. */
export async function commitmentLockIn(db: DbOrTx, orgId: string, now: Date, provider?: Provider): Promise<CommitmentLockIn> {
  return lockInOf(await listCommitments(db, orgId, { provider, status: "active", at: now }), now);
}

export interface SummaryRow extends SummaryFigures {
  month: string;
  status: MonthStatus;
  currency: string;
}

export interface CommitmentSummary {
  from: string;
  to: string;
  provider: Provider | null;
  months: { month: string; status: MonthStatus }[];
  rows: SummaryRow[];
  totals: ({ currency: string } & SummaryFigures)[];
  lock_in: CommitmentLockIn;
}

/** The summary of the months (YYYY-MM, oldest first): coverage rows per month summed over the providers of each billing currency. */
export async function commitmentSummary(s: Services, orgId: string, now: Date, q: { months: readonly string[]; provider?: Provider }): Promise<CommitmentSummary> {
  const report = await coverageReport(s, orgId, now, { groupBy: "period", provider: q.provider, months: q.months });
  const status = new Map(report.months.map((m) => [m.month, m.status]));
  const byMonth = new Map<string, CoverageAcc>();
  for (const r of report.rows) {
    const id = JSON.stringify([r.month, r.currency]);
    let acc = byMonth.get(id);
    if (!acc) byMonth.set(id, (acc = { month: r.month, provider: "", currency: r.currency, key: r.month, account_name: null, cents: zeroCents() }));
    for (const m of COVERAGE_MONEY) acc.cents[m] += r.cents[m];
  }
  const rows = [...byMonth.values()]
    .sort((x, y) => x.month.localeCompare(y.month) || x.currency.localeCompare(y.currency))
    .map((r) => ({ month: r.month, status: status.get(r.month) ?? "no_data", currency: r.currency, ...summaryFigures(r.cents) }));
  return {
    from: q.months[0]!,
    to: q.months[q.months.length - 1]!,
    provider: q.provider ?? null,
    months: report.months,
    rows,
    totals: centsByCurrency(report.rows).map((t) => ({ currency: t.currency, ...summaryFigures(t.cents) })),
    lock_in: await commitmentLockIn(s.db, orgId, now, q.provider),
  };
}
