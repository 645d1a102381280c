/**
 * Billing periods (invoice months per org and provider) and the freeze of closed periods into
 * report_snapshots. A period is `open` until its invoice closes (CLI `periods close`, FOCUS
 * BillingPeriodStatus=Closed or an InvoiceId in the data, or automatically once it is two months
 * old); the freeze (the CLI right after closing, else the freeze job) then snapshots every report
 * of that (org, provider, month) in one transaction that also sets frozen_at, claiming the period
 * with a row lock so one replica does it, and a crash leaves either nothing or everything.
 * Reports call a month `finalized` only once it is frozen (lib/reports/service.ts): closing alone
 * changes nothing a client sees, so late rows between the close and the freeze are in the
 * finalized figures and nothing after the freeze can change them.
 */
import type { Db, DbOrTx } from "../db/index.ts";
import { isProvider, monthStart, queryRows, type Provider } from "../billing/sql.ts";
import { REPORTS, reportSqlOf } from "./catalog.ts";
import { summaryDetailOf } from "./rowCache.ts";
import { emitPeriodFinalized } from "../events/periods.ts";

export interface PeriodState {
  provider: Provider;
  /** YYYY-MM-01 */
  month: string;
  status: "open" | "closed";
  closed_at: string | null;
  frozen_at: string | null;
  /** The report types the freeze snapshotted; null for a period frozen before they were recorded (all but the static ones). */
  frozen_reports: string[] | null;
}

export async function listBillingPeriods(db: DbOrTx, orgId: string, provider?: Provider): Promise<PeriodState[]> {
  const params: unknown[] = [orgId];
  const extra = provider ? ` AND provider = $${params.push(provider)}` : "";
  const rows = await queryRows<any>(
    db,
    `SELECT provider, to_char(month, 'YYYY-MM-DD') AS month, status, closed_at, frozen_at, frozen_reports FROM billing_periods WHERE org_id = $1::uuid${extra} ORDER BY month DESC, provider`,
    params,
  );
  return rows.map((r) => ({
    provider: r.provider,
    month: r.month,
    status: r.status,
    closed_at: r.closed_at ? new Date(r.closed_at).toISOString() : null,
    frozen_at: r.frozen_at ? new Date(r.frozen_at).toISOString() : null,
    frozen_reports: frozenReportsOf(r.frozen_reports),
  }));
}

/** Marks an invoice closed (idempotent). Returns the period. */
export async function closeBillingPeriod(db: DbOrTx, orgId: string, provider: Provider, month: string, now: Date): Promise<PeriodState> {
  if (!isProvider(provider)) throw new Error(`unknown provider ${provider}`);
  const m = monthStart(month);
  await queryRows(
    db,
    `INSERT INTO billing_periods (org_id, provider, month, status, closed_at) VALUES ($1::uuid, $2, $3::date, 'closed', $4::timestamptz)
     ON CONFLICT (org_id, provider, month) DO UPDATE SET status = 'closed', closed_at = COALESCE(billing_periods.closed_at, EXCLUDED.closed_at)`,
    [orgId, provider, m, now.toISOString()],
  );
  const [p] = (await listBillingPeriods(db, orgId, provider)).filter((x) => x.month === m);
  return p!;
}

/** Invoices are issued within days after month end: periods older than the previous month close by themselves. */
export async function autoCloseOldPeriods(db: DbOrTx, now: Date): Promise<number> {
  const rows = await queryRows(
    db,
    `UPDATE billing_periods SET status = 'closed', closed_at = $1::timestamptz
     WHERE status = 'open' AND month < (date_trunc('month', $1::timestamptz AT TIME ZONE 'UTC') - interval '1 month')::date
     RETURNING 1`,
    [now.toISOString()],
  );
  return rows.length;
}

/** The live SQL of a report for one provider, as frozen. */
function snapshotInsertSql(sql: string, orderBy: string[]): string {
  return `INSERT INTO report_snapshots (org_id, report_type, provider, month, seq, row)
    SELECT $1::uuid, $4::text, $3::text, $2::date, row_number() OVER (ORDER BY ${orderBy.map((c) => `q.${c} NULLS FIRST`).join(", ")}), to_jsonb(q)
    FROM (${sql}) q`;
}

/**
 * Freezes closed, unfrozen periods of months that have ended (all orgs, or one
 * org/provider/month). Each period is claimed with FOR UPDATE SKIP LOCKED, so concurrent runs
 * split the work and never freeze one twice.
 */
export async function freezeClosedPeriods(db: Db, now: Date, only?: { orgId: string; provider?: Provider; month?: string }): Promise<{ org_id: string; provider: Provider; month: string; snapshot_rows: number }[]> {
  const done: { org_id: string; provider: Provider; month: string; snapshot_rows: number }[] = [];
  for (;;) {
    const r = await db.transaction(async (tx) => {
      const params: unknown[] = [];
      // A month still running is never frozen, whatever its data says: it stays in progress.
      const where = ["status = 'closed'", "frozen_at IS NULL", `month < $${params.push(monthStart(now))}::date`];
      if (only) {
        where.push(`org_id = $${params.push(only.orgId)}::uuid`);
        if (only.provider) where.push(`provider = $${params.push(only.provider)}`);
        if (only.month) where.push(`month = $${params.push(monthStart(only.month))}::date`);
      }
      const [p] = await queryRows<{ org_id: string; provider: Provider; month: string; closed_at: string | Date | null }>(
        tx,
        `SELECT org_id, provider, to_char(month, 'YYYY-MM-DD') AS month, closed_at FROM billing_periods WHERE ${where.join(" AND ")}
         ORDER BY month, org_id, provider LIMIT 1 FOR UPDATE SKIP LOCKED`,
        params,
      );
      if (!p) return null;
      await queryRows(tx, `DELETE FROM report_snapshots WHERE org_id = $1::uuid AND provider = $2 AND month = $3::date`, [p.org_id, p.provider, p.month]);
      let n = 0;
      const detail = (await summaryDetailOf(tx, p.org_id, p.month, p.provider)).complete;
      for (const rep of REPORTS) {
        const ins = await queryRows(tx, `WITH ins AS (${snapshotInsertSql(reportSqlOf(rep, detail).sql, rep.orderBy)} RETURNING 1) SELECT count(*)::int AS n FROM ins`, [p.org_id, p.month, p.provider, rep.report_type]);
        n += Number((ins[0] as any)?.n ?? 0);
      }
      await queryRows(tx, `UPDATE billing_periods SET frozen_at = $4::timestamptz, frozen_reports = string_to_array($5, ',') WHERE org_id = $1::uuid AND provider = $2 AND month = $3::date`, [
        p.org_id,
        p.provider,
        p.month,
        now.toISOString(),
        REPORTS.map((rep) => rep.report_type).join(","),
      ]);
      // The month's figures are final from this commit on: period.finalized commits with them.
      await emitPeriodFinalized(tx, { orgId: p.org_id, provider: p.provider, month: p.month, closedAt: p.closed_at ? new Date(p.closed_at) : null, frozenAt: now, reports: REPORTS.map((rep) => rep.report_type) });
      return { org_id: p.org_id, provider: p.provider, month: p.month, snapshot_rows: n };
    });
    if (!r) break;
    done.push(r);
  }
  return done;
}

/** A text[] as either driver returns it (an array, or PGlite/postgres.js text form `{a,b}`). */
function frozenReportsOf(v: unknown): string[] | null {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(String);
  const text = String(v);
  return text === "{}" ? [] : text.slice(1, -1).split(",");
}
