/**
 * The commitment inventory as clients see it (the REST `/commitments` routes and the assistant's
 * list_commitments / get_commitment / list_expiring_commitments tools): each commitment with its
 * status and days until expiry as of `now`, money at the edge (upfront in cents, hourly figures
 * and amounts to 6 decimals), the filters both share, and a commitment's performance over the
 * last complete days from the billing data.
 */
import type { DbOrTx } from "../db/index.ts";
import { NotFoundError } from "../errors.ts";
import { cents, centsOrNull } from "../pricing/index.ts";
import { rate6 } from "../pricing/display.ts";
import { coverageAndUtilization, listCommitments, type CommitmentView } from "./queries.ts";
import type { Provider } from "./sql.ts";

const DAY = 86_400_000;

export const COMMITMENT_STATUSES = ["active", "expired", "not_started"] as const;
export type CommitmentStatus = (typeof COMMITMENT_STATUSES)[number];

export type CommitmentShown = Omit<CommitmentView, "amount" | "recurring_hourly_cost" | "upfront_cost"> & {
  amount: number | null;
  upfront_cost: number | null;
  recurring_hourly_cost: number | null;
  days_until_expiry: number | null;
  status: CommitmentStatus;
};

/** One commitment as shown at `now`: ended → expired, not begun → not_started, else active. */
export function commitmentShown(c: CommitmentView, now: Date): CommitmentShown {
  const ends = c.ends_at ? new Date(c.ends_at) : null;
  const starts = c.starts_at ? new Date(c.starts_at) : null;
  const status: CommitmentStatus = ends && ends <= now ? "expired" : starts && starts > now ? "not_started" : "active";
  return {
    ...c,
    amount: c.amount === null ? null : rate6(c.amount),
    recurring_hourly_cost: c.recurring_hourly_cost === null ? null : rate6(c.recurring_hourly_cost),
    upfront_cost: centsOrNull(c.upfront_cost),
    days_until_expiry: ends ? Math.max(0, Math.ceil((ends.getTime() - now.getTime()) / DAY)) : null,
    status,
  };
}

export interface CommitmentListFilters {
  provider?: Provider;
  /** `active` (running at `now`), `expired` or `all`. */
  status: "active" | "expired" | "all";
  insured?: boolean;
  commitmentType?: string;
  holdingAccountId?: string;
  /** Only commitments whose end is at most this many days after `now`. */
  expiringWithinDays?: number;
  /** Soonest end first (the renewal worklist); otherwise provider, start, provider id. */
  soonestFirst?: boolean;
}

/** The org's commitments under the filters, unrounded (callers show them with `commitmentShown`). */
export async function findCommitments(db: DbOrTx, orgId: string, now: Date, f: CommitmentListFilters): Promise<CommitmentView[]> {
  let rows = await listCommitments(db, orgId, { provider: f.provider, status: f.status, insured: f.insured, commitmentType: f.commitmentType, at: now });
  if (f.holdingAccountId) rows = rows.filter((c) => c.holding_account_id === f.holdingAccountId);
  if (f.expiringWithinDays !== undefined) {
    const horizon = now.getTime() + f.expiringWithinDays * DAY;
    rows = rows.filter((c) => c.ends_at && new Date(c.ends_at).getTime() <= horizon);
  }
  if (f.soonestFirst) rows = [...rows].sort((x, y) => (x.ends_at ? new Date(x.ends_at).getTime() : Infinity) - (y.ends_at ? new Date(y.ends_at).getTime() : Infinity));
  return rows;
}

/** The recurring $/hour that lapses when these commitments end (6 decimals). */
export const lapsingRecurringHourlyCost = (rows: readonly CommitmentView[]): number => rate6(rows.reduce((acc, c) => acc + (c.recurring_hourly_cost ?? 0), 0));

/** One commitment of the org by its id (UUID) or the provider's commitment id (case-insensitive); another org's is NotFound. */
export async function findCommitment(db: DbOrTx, orgId: string, id: string, now: Date): Promise<CommitmentView> {
  const all = await listCommitments(db, orgId, { status: "all", at: now });
  const key = id.toLowerCase();
  const c = all.find((x) => x.id === key || x.provider_commitment_id.toLowerCase() === key);
  if (!c) throw new NotFoundError(`No commitment ${id} in this organization.`);
  return c;
}

export interface CommitmentPerformance {
  start_date: string;
  end_date: string;
  used_cost: number;
  unused_cost: number;
  utilization: number | null;
  covered_ondemand_cost: number;
  savings: number;
}

const ymd = (d: Date) => d.toISOString().slice(0, 10);

/** A commitment's Used/Unused cost, utilization, covered on-demand cost and savings over the last `lookbackDays` complete UTC days (today is still being billed). */
export async function commitmentPerformance(db: DbOrTx, orgId: string, c: CommitmentView, now: Date, lookbackDays: number): Promise<CommitmentPerformance> {
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const from = new Date(to.getTime() - lookbackDays * DAY);
  const rows = await coverageAndUtilization(db, orgId, { provider: c.provider, from, to, groupBy: "commitment" });
  const r = rows.find((x) => x.key === c.provider_commitment_id);
  const utilization = r?.utilization ?? null;
  return {
    start_date: ymd(from),
    end_date: ymd(to),
    used_cost: cents(r?.used_cost ?? 0),
    unused_cost: cents(r?.unused_cost ?? 0),
    utilization: utilization === null || !Number.isFinite(utilization) ? null : rate6(utilization),
    covered_ondemand_cost: cents(r?.covered_ondemand_cost),
    savings: cents(r?.savings),
  };
}
