/**
 * billing_sync.succeeded / billing_sync.failed, written in the transaction that records a sync's
 * end (lib/connections/sync.ts), and billing_sync.stale, found by an hourly scan.
 *
 * Not every run is news: a scheduled sync that found nothing new says nothing, and a connection
 * retrying with backoff on the same cause says it once (then again when it turns `error`, or
 * when the cause changes); a manual sync always tells how it ended.
 */
import type { Tx } from "../db/index.ts";
import { queryRows } from "../billing/sql.ts";
import type { ConnectionRow, RunRow } from "../connections/service.ts";
import { KIND_PROVIDER } from "../connections/kinds.ts";
import type { ConnectionKind } from "../connections/source.ts";
import type { Services } from "../services.ts";
import type { BillingSyncFailedData, BillingSyncStaleData, BillingSyncSucceededData, SYNC_ERROR_CAUSES } from "./data/billing.ts";
import { emitEvent } from "./emit.ts";
import { billingConnectionLinks } from "./links.ts";
import { hourPeriod, type ScanJob } from "./scans.ts";

const DAY = 86_400_000;

type SyncErrorCause = (typeof SYNC_ERROR_CAUSES)[number];

/**
 * What each cause means, in words any reader of the org's events may see. The run's own message
 * names the bucket, container or table (GET …/runs, connections:read); viewers read events too.
 */
const CAUSE_MESSAGES: Record<SyncErrorCause, string> = {
  credentials: "The provider refused the connection's credentials. Update them in the connection's settings.",
  not_found: "The export's bucket, container, dataset or table was not found. Check the connection's settings.",
  permission: "The credentials may not read the export. Grant read access to the export's location.",
  no_export: "No FOCUS export was found at the configured location. Check the export's name and prefix, or wait for its first delivery.",
  not_focus: "The export is not a FOCUS export. Point the connection at a FOCUS 1.x export.",
  format: "A file of the export could not be read or violates the FOCUS specification; the previous data is kept. The run shows which.",
  unreachable: "The provider's endpoint could not be reached. Check the endpoint and network access.",
  internal: "The sync failed on our side; it is retried automatically.",
};

const connectionRef = (c: ConnectionRow) => ({ id: c.id, name: c.name, kind: c.kind, provider: KIND_PROVIDER[c.kind as ConnectionKind] });

export interface SyncOutcome {
  connection: ConnectionRow;
  run: RunRow;
  /** Failed runs in a row after this one (0 when it succeeded). */
  failures: number;
  failure: { cause: string; message: string } | null;
  periodsImported: number;
  monthsImported: string[];
  /** The connection's status after this run. */
  status: "pending" | "ok" | "error";
  nextSyncAt: Date;
  /** Failures in a row before the connection shows `error`. */
  failuresBeforeError: number;
}

/** The event of a finished sync (in the transaction recording its end), or nothing when it is not news. */
export async function emitSyncFinished(tx: Tx, o: SyncOutcome): Promise<void> {
  const { connection: c, run } = o;
  const links = billingConnectionLinks(c.orgId, c.id);
  const base = { connection: connectionRef(c), run_id: run.id, trigger: run.trigger, started_at: run.startedAt?.toISOString() ?? null, finished_at: (run.finishedAt ?? new Date()).toISOString() };
  const occurredAt = run.finishedAt ?? new Date();
  const manual = run.trigger === "manual";
  if (!o.failure) {
    const recovered = c.consecutiveFailures > 0;
    if (o.periodsImported === 0 && !recovered && !manual) return;
    const data: BillingSyncSucceededData = {
      ...base,
      periods_seen: run.periodsSeen,
      periods_imported: run.periodsImported,
      periods_unchanged: run.periodsUnchanged,
      rows_imported: Number(run.rowsImported),
      months_imported: [...o.monthsImported].sort(),
      recovered,
    };
    await emitEvent(tx, { orgId: c.orgId, type: "billing_sync.succeeded", occurredAt, data, ...links, dedupeKey: `billing_sync:${run.id}` });
    return;
  }
  const cause = (o.failure.cause in CAUSE_MESSAGES ? o.failure.cause : "internal") as SyncErrorCause;
  const news = manual || o.failures === 1 || o.failures === o.failuresBeforeError || c.lastErrorCause !== cause;
  if (!news) return;
  const data: BillingSyncFailedData = {
    ...base,
    error: { cause, message: CAUSE_MESSAGES[cause] },
    consecutive_failures: o.failures,
    connection_status: o.status,
    next_attempt_at: o.nextSyncAt.toISOString(),
    periods_imported: o.periodsImported,
  };
  await emitEvent(tx, { orgId: c.orgId, type: "billing_sync.failed", occurredAt, data, ...links, dedupeKey: `billing_sync:${run.id}` });
}

/**
 * billing_sync.stale: enabled connections whose newest import of a period (or, never having
 * imported, their creation) is BILLING_STALE_DAYS or more ago. Once per episode: the dedupe key
 * holds the time of that newest import, so new data starts a new episode.
 */
export const staleConnectionsScan: ScanJob = {
  job: "billing-stale",
  period: hourPeriod,
  async candidates(s) {
    const rows = await queryRows<{ org_id: string }>(s.db, `SELECT DISTINCT org_id::text AS org_id FROM billing_connections WHERE enabled ORDER BY 1`);
    return rows.map((r) => r.org_id);
  },
  async scan(s: Services, tx: Tx, orgId: string, now: Date) {
    const staleDays = s.config.billingStaleDays;
    const rows = await queryRows<{
      id: string; name: string; kind: string; status: "pending" | "ok" | "error"; created_at: string; last_synced_at: string | null; last_error_cause: string | null;
      last_import: string | null; newest_month: string | null;
    }>(
      tx,
      `SELECT c.id::text AS id, c.name, c.kind, c.status, c.created_at, c.last_synced_at, c.last_error_cause,
              (SELECT max(p.imported_at) FROM billing_connection_periods p WHERE p.connection_id = c.id) AS last_import,
              (SELECT to_char(max(p.month), 'YYYY-MM') FROM billing_connection_periods p WHERE p.connection_id = c.id) AS newest_month
       FROM billing_connections c
       WHERE c.org_id = $1::uuid AND c.enabled
       ORDER BY c.created_at, c.id`,
      [orgId],
    );
    let n = 0;
    for (const r of rows) {
      const lastImport = r.last_import ? new Date(r.last_import) : null;
      const since = lastImport ?? new Date(r.created_at);
      const days = Math.floor((now.getTime() - since.getTime()) / DAY);
      if (days < staleDays) continue;
      const data: BillingSyncStaleData = {
        connection: { id: r.id, name: r.name, kind: r.kind as ConnectionKind, provider: KIND_PROVIDER[r.kind as ConnectionKind] },
        last_new_data_at: lastImport?.toISOString() ?? null,
        newest_month: r.newest_month,
        days_without_new_data: days,
        stale_after_days: staleDays,
        last_synced_at: r.last_synced_at ? new Date(r.last_synced_at).toISOString() : null,
        connection_status: r.status,
        last_error_cause: r.last_error_cause,
      };
      const emitted = await emitEvent(tx, {
        orgId,
        type: "billing_sync.stale",
        occurredAt: now,
        data,
        ...billingConnectionLinks(orgId, r.id),
        dedupeKey: `billing_sync_stale:${r.id}:${lastImport?.toISOString() ?? "never"}`,
      });
      if (emitted) n++;
    }
    return n;
  },
};
