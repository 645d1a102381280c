/**
 * commitment.expiring: the org's active commitments as GET /commitments?expiring_within_days=90
 * lists them (lib/billing/commitmentViews.ts), each told 90, 30 and 7 days before its end. A scan
 * sends only the nearest notice due (one first seen 20 days before its end gets the 30-day notice,
 * never the 90-day one afterwards; one first seen 5 days before gets only the 7-day one), each
 * once: its dedupe key is the commitment's provider id (stable across re-imports, unlike the
 * row's id) and the notice.
 */
import type { Tx } from "../db/index.ts";
import { commitmentShown, findCommitments } from "../billing/commitmentViews.ts";
import type { CommitmentView } from "../billing/queries.ts";
import { queryRows } from "../billing/sql.ts";
import { amortizedHourlyRate, cents, HOURS_PER_MONTH } from "../pricing/index.ts";
import { rate6 } from "../pricing/display.ts";
import type { Services } from "../services.ts";
import { NOTICE_DAYS, type CommitmentExpiringData } from "./data/billing.ts";
import { emitEvent } from "./emit.ts";
import { commitmentLinks } from "./links.ts";
import { dayPeriod, type ScanJob } from "./scans.ts";

const DAY = 86_400_000;
const HORIZON_DAYS = Math.max(...NOTICE_DAYS);

/** The nearest notice due for a commitment `daysLeft` days from its end (none past 90 or once ended). */
export function noticeDue(daysLeft: number): (typeof NOTICE_DAYS)[number] | null {
  if (daysLeft <= 0) return null;
  return [...NOTICE_DAYS].sort((a, b) => a - b).find((d) => daysLeft <= d) ?? null;
}

/** What the commitment costs per hour: its recurring charge plus the upfront amortized over its term. */
function hourlyCommitment(c: CommitmentView): number | null {
  if (c.recurring_hourly_cost === null && c.upfront_cost === null) return null;
  const term = c.starts_at && c.ends_at ? (Date.parse(c.ends_at) - Date.parse(c.starts_at)) / 1000 : 0;
  return amortizedHourlyRate(c.recurring_hourly_cost ?? 0, c.upfront_cost ?? 0, term);
}

/** Each commitment's billing currency (its own usage rows, else the newest of its provider's bill). */
async function currencies(tx: Tx, orgId: string, rows: CommitmentView[]): Promise<(c: CommitmentView) => string | null> {
  const own = await queryRows<{ provider: string; commitment_id: string; currency: string }>(
    tx,
    `SELECT DISTINCT ON (provider, commitment_id) provider, commitment_id, currency FROM commitment_usage_summaries
     WHERE org_id = $1::uuid AND commitment_id IN (SELECT jsonb_array_elements_text($2::jsonb))
     ORDER BY provider, commitment_id, month DESC`,
    [orgId, JSON.stringify([...new Set(rows.map((c) => c.provider_commitment_id))])],
  );
  const byProvider = await queryRows<{ provider: string; currency: string }>(
    tx,
    `SELECT DISTINCT ON (provider) provider, currency FROM billing_cost_summaries WHERE org_id = $1::uuid ORDER BY provider, month DESC, currency`,
    [orgId],
  );
  const ownMap = new Map(own.map((r) => [`${r.provider}\u0000${r.commitment_id}`, r.currency]));
  const providerMap = new Map(byProvider.map((r) => [r.provider, r.currency]));
  return (c) => ownMap.get(`${c.provider}\u0000${c.provider_commitment_id}`) ?? providerMap.get(c.provider) ?? null;
}

/** Writes the notices due at `now` for the org's commitments; returns how many were written. */
export async function emitExpiringCommitments(tx: Tx, orgId: string, now: Date): Promise<number> {
  const rows = await findCommitments(tx, orgId, now, { status: "active", expiringWithinDays: HORIZON_DAYS, soonestFirst: true });
  if (!rows.length) return 0;
  const currencyOf = await currencies(tx, orgId, rows);
  let n = 0;
  for (const c of rows) {
    const shown = commitmentShown(c, now);
    const daysLeft = shown.days_until_expiry ?? 0;
    const notice = noticeDue(daysLeft);
    if (notice === null || !c.ends_at) continue;
    const hourly = hourlyCommitment(c);
    const data: CommitmentExpiringData = {
      commitment: {
        id: c.id,
        provider: c.provider,
        provider_commitment_id: c.provider_commitment_id,
        name: c.name,
        commitment_type: c.commitment_type,
        contract_term: c.contract_term,
        payment_option: c.payment_option,
        region: c.region,
        instance_type: c.instance_type,
        holding_account_id: c.holding_account_id,
        insured: c.insured,
        starts_at: c.starts_at,
        ends_at: c.ends_at,
      },
      notice_days: notice,
      days_left: daysLeft,
      amount: shown.amount,
      hourly_commitment: hourly === null ? null : rate6(hourly),
      monthly_commitment: hourly === null ? null : cents(hourly * HOURS_PER_MONTH),
      upfront_cost: shown.upfront_cost,
      currency: currencyOf(c),
    };
    const emitted = await emitEvent(tx, {
      orgId,
      type: "commitment.expiring",
      occurredAt: now,
      data,
      ...commitmentLinks(orgId, c.id),
      dedupeKey: `commitment:${c.provider}:${c.provider_commitment_id}:${notice}`,
    });
    if (emitted) n++;
  }
  return n;
}

/** The daily scan: orgs with an active commitment ending within 90 days. */
export const expiringCommitmentsScan: ScanJob = {
  job: "commitment-expiry",
  period: dayPeriod,
  async candidates(s: Services, now: Date) {
    const rows = await queryRows<{ org_id: string }>(
      s.db,
      `SELECT DISTINCT org_id::text AS org_id FROM commitments WHERE ends_at > $1::timestamptz AND ends_at <= $2::timestamptz ORDER BY 1`,
      [now.toISOString(), new Date(now.getTime() + HORIZON_DAYS * DAY).toISOString()],
    );
    return rows.map((r) => r.org_id);
  },
  scan: (_s, tx, orgId, now) => emitExpiringCommitments(tx, orgId, now),
};
