/** period.finalized, written in the transaction that freezes the period's reports (lib/reports/periods.ts). */
import type { DbOrTx } from "../db/index.ts";
import { queryRows, type Provider } from "../billing/sql.ts";
import type { PeriodFinalizedData } from "./data/billing.ts";
import { emitEvent } from "./emit.ts";
import { reportMonthLinks } from "./links.ts";

/** The report the links open: the bill by account, unless the org hides it. */
const LINKED_REPORTS = ["cloud_bill_by_account", "cloud_bill_by_service", "commitment_cost_by_account"];

export async function emitPeriodFinalized(
  tx: DbOrTx,
  p: { orgId: string; provider: Provider; month: string; closedAt: Date | null; frozenAt: Date; reports: string[] },
): Promise<void> {
  const [year, month] = p.month.split("-").map(Number) as [number, number];
  // The org's hidden reports are not named (they answer 404); read here, not through lib/reports/service.ts, which imports the freeze.
  const hidden = new Set((await queryRows<{ report_type: string }>(tx, `SELECT report_type FROM org_report_settings WHERE org_id = $1::uuid AND hidden`, [p.orgId])).map((r) => r.report_type));
  const linked = [...LINKED_REPORTS, ...p.reports].find((r) => p.reports.includes(r) && !hidden.has(r));
  const data: PeriodFinalizedData = {
    provider: p.provider,
    period: p.month.slice(0, 7),
    year,
    month,
    closed_at: p.closedAt?.toISOString() ?? null,
    finalized_at: p.frozenAt.toISOString(),
    reports: p.reports.filter((r) => !hidden.has(r)),
  };
  await emitEvent(tx, {
    orgId: p.orgId,
    type: "period.finalized",
    occurredAt: p.frozenAt,
    data,
    ...(linked ? reportMonthLinks(p.orgId, linked, year, month) : { resourcePath: `/beta/v1/org/${p.orgId}/allocation-reports`, consolePath: "/app/reports" }),
    dedupeKey: `period_finalized:${p.provider}:${p.month.slice(0, 7)}`,
  });
}
