/**
 * anomaly.detected: the assistant's spend-anomaly method (lib/billing/anomalyScan.ts) run over the
 * recent days of every account and service series, after a sync that imported data and once a
 * day; each (series, day) is told once (its dedupe key).
 *
 * Only recent days are told: the days of the last RECENT_DAYS before today (anomalies are news
 * while someone can still act on them, and a first import of a year of history must not flood
 * the org's receivers), up to MAX_PER_SCAN a scan, largest |impact| first.
 */
import { createHash } from "node:crypto";
import type { Tx } from "../db/index.ts";
import { ANOMALY_DEFAULTS, addDaysIso } from "../billing/anomalies.ts";
import { scanSpendAnomalies } from "../billing/anomalyScan.ts";
import { ymd } from "../billing/costExplorer.ts";
import { queryRows } from "../billing/sql.ts";
import { errorForLog } from "../log.ts";
import type { Services } from "../services.ts";
import type { AnomalyDetectedData } from "./data/billing.ts";
import { emitEvent } from "./emit.ts";
import { anomalyLinks } from "./links.ts";
import { dayPeriod, type ScanJob } from "./scans.ts";

/** Days before today whose anomalies are told. */
export const RECENT_DAYS = 7;
/** Anomalies told by one scan of an org at most (largest |impact| first); the rest stay in the assistant's tool. */
export const MAX_PER_SCAN = 50;
/** Days of the series the links show, the anomaly's included. */
const LINK_WINDOW_DAYS = 28;

const DIMENSIONS = ["account", "service"] as const;

/** The key of one series' day: bounded whatever the account id or service name. */
function dedupeKey(dimension: string, a: { provider: string; currency: string; key: string | null; date: string }): string {
  const series = createHash("sha256").update(JSON.stringify([dimension, a.provider, a.currency, a.key])).digest("hex").slice(0, 32);
  return `anomaly:${a.date}:${series}`;
}

/** Scans the org's recent days and writes an event per anomaly not told yet; returns how many were written. */
export async function emitRecentAnomalies(tx: Tx, orgId: string, now: Date): Promise<number> {
  const today = ymd(now);
  const start = addDaysIso(today, -RECENT_DAYS);
  const found: AnomalyDetectedData[] = [];
  for (const dimension of DIMENSIONS) {
    const scan = await scanSpendAnomalies(tx, orgId, now, { dimension, start, end: today, direction: "both", minImpact: ANOMALY_DEFAULTS.minImpact });
    for (const a of scan.found) found.push({ dimension, ...a, provider: a.provider as AnomalyDetectedData["provider"] });
  }
  found.sort((x, y) => Math.abs(y.impact) - Math.abs(x.impact) || x.date.localeCompare(y.date) || x.dimension.localeCompare(y.dimension) || (x.key ?? "").localeCompare(y.key ?? ""));
  let n = 0;
  for (const a of found.slice(0, MAX_PER_SCAN)) {
    const links = anomalyLinks(orgId, { dimension: a.dimension, provider: a.provider, key: a.key, date: a.date, windowStart: addDaysIso(a.date, 1 - LINK_WINDOW_DAYS), windowEnd: addDaysIso(a.date, 1) });
    const emitted = await emitEvent(tx, {
      orgId,
      type: "anomaly.detected",
      occurredAt: now,
      data: a,
      ...links,
      dedupeKey: dedupeKey(a.dimension, a),
    });
    if (emitted) n++;
  }
  return n;
}

/** After an import: the org's recent anomalies, in one transaction; a failure is logged, never thrown (the import stands). */
export async function notifyAnomaliesAfterImport(s: Services, orgId: string): Promise<void> {
  try {
    await s.db.transaction((tx) => emitRecentAnomalies(tx, orgId, s.now()));
  } catch (e) {
    s.log.error("anomaly events after import failed", { org_id: orgId, error: errorForLog(e) });
  }
}

/** The daily scan: orgs with billing rows in the recent months (their summaries: a small table). */
export const anomalyScan: ScanJob = {
  job: "anomaly-scan",
  period: dayPeriod,
  async candidates(s, now) {
    const since = addDaysIso(ymd(now), -(RECENT_DAYS + 31));
    const rows = await queryRows<{ org_id: string }>(s.db, `SELECT DISTINCT org_id::text AS org_id FROM billing_cost_summaries WHERE month >= date_trunc('month', $1::date)::date ORDER BY 1`, [since]);
    return rows.map((r) => r.org_id);
  },
  scan: (_s, tx, orgId, now) => emitRecentAnomalies(tx, orgId, now),
};
