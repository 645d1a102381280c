/**
 * Billing sync: each due connection is claimed by one replica (a lease in its row, renewed while
 * it runs), its export's periods are listed, and each period whose fingerprint differs from the
 * one last imported goes through the FOCUS import — one transaction that replaces the period and
 * records the new fingerprint, so a failed or killed sync leaves the previous data in place (and
 * closes the periods the provider invoiced, as any import does).
 * Failures are recorded on the run, retried with backoff, and after repeated ones the connection
 * shows `status: error`.
 */
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { Services } from "../services.ts";
import type { Tx } from "../db/index.ts";
import { queryRows } from "../billing/sql.ts";
import { FocusFileError, FocusImportRejected, importFocus, NotFocusError } from "../billing/focus.ts";
import { CsvSyntaxError } from "../billing/csvReader.ts";
import { errorForLog } from "../log.ts";
import { secretBoxOf } from "../secrets/index.ts";
import { getConnectionRow, runView, settingsOf, type ConnectionRow, type RunRow, type RunView } from "./service.ts";
import { readerFor } from "./readers/index.ts";
import { ConnectionFailure, type ExportReader, type FailureCause, type SourcePeriod } from "./source.ts";
import { joinTables } from "./tables.ts";
import { billingConnectionRuns, billingConnections } from "../db/schema/index.ts";
import { and, eq, sql } from "drizzle-orm";
import { ConflictError } from "../errors.ts";
import { evaluateBudgetsAfterImport } from "../budgets/evaluate.ts";
import { emitSyncFinished } from "../events/billingSync.ts";
import { notifyAnomaliesAfterImport } from "../events/anomalies.ts";
import { WorkAbandoned } from "../shutdown/index.ts";

/** This process, as named in the claims it takes. */
export const WORKER_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** Failures in a row before a connection shows `status: error`. */
export const FAILURES_BEFORE_ERROR = 3;
const FIRST_RETRY_MINUTES = 5;

export interface SyncOptions {
  /** How long a claim holds without renewal (a crashed replica's connection is free again after it). */
  leaseSeconds?: number;
  workerId?: string;
  /** Connections synced by this call at most. */
  limit?: number;
  /** Only this connection (the CLI's `connections sync`). */
  connectionId?: string;
}

const DEFAULT_LEASE_SECONDS = 300;

class PeriodAlreadyCurrent extends Error {}
/** The process is stopping: the periods imported so far are kept, the next ones are left to the replica that takes the connection next. */
class SyncStopped extends Error {}

/** Queues a manual sync (joining one already queued) and makes the connection due now. */
export async function requestSync(s: Services, orgId: string, connectionId: string): Promise<RunView> {
  const now = s.now();
  return s.db.transaction(async (tx) => {
    const c = await getConnectionRow(tx, orgId, connectionId);
    const [fresh] = await tx
      .insert(billingConnectionRuns)
      .values({ connectionId: c.id, orgId, trigger: "manual", status: "queued", createdAt: now })
      .onConflictDoNothing()
      .returning();
    const run = fresh ?? (await tx.select().from(billingConnectionRuns).where(and(eq(billingConnectionRuns.connectionId, c.id), eq(billingConnectionRuns.status, "queued"))))[0];
    if (!run) throw new ConflictError("A sync of this connection was just queued by another request; retry.", "sync_busy");
    await tx.update(billingConnections).set({ nextSyncAt: now }).where(eq(billingConnections.id, c.id));
    return runView(run);
  });
}

/** Claims the next due connection for this worker, or null. Due: enabled and its time has come, or a sync was asked for. */
async function claimDue(s: Services, workerId: string, leaseSeconds: number, connectionId?: string): Promise<ConnectionRow | null> {
  const now = s.now();
  const [claimed] = await s.db
    .update(billingConnections)
    .set({ claimedBy: workerId, claimedUntil: new Date(now.getTime() + leaseSeconds * 1000) })
    .where(
      eq(
        billingConnections.id,
        sql`(SELECT c.id FROM billing_connections c
             WHERE (c.claimed_until IS NULL OR c.claimed_until < ${now.toISOString()}::timestamptz)
               AND (${connectionId ?? null}::uuid IS NULL OR c.id = ${connectionId ?? null}::uuid)
               AND ((c.enabled AND c.next_sync_at <= ${now.toISOString()}::timestamptz)
                    OR EXISTS (SELECT 1 FROM billing_connection_runs r WHERE r.connection_id = c.id AND r.status = 'queued'))
             ORDER BY c.next_sync_at, c.id
             LIMIT 1
             FOR UPDATE SKIP LOCKED)`,
      ),
    )
    .returning();
  return claimed ?? null;
}

/** Syncs due connections one after another until none is due (or `limit` were synced). */
export async function runDueSyncs(s: Services, opts: SyncOptions = {}): Promise<RunView[]> {
  const workerId = opts.workerId ?? WORKER_ID;
  const leaseSeconds = opts.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  const done: RunView[] = [];
  // A stopping process claims nothing more (lib/shutdown).
  while (done.length < (opts.limit ?? Infinity) && !s.shutdown.stopRequested()) {
    const c = await claimDue(s, workerId, leaseSeconds, opts.connectionId);
    if (!c) break;
    done.push(await syncClaimed(s, c, workerId, leaseSeconds));
  }
  return done;
}

/** Starts the run of a claimed connection: the queued manual one, else a scheduled one; runs a dead replica left `running` are closed as interrupted. */
async function startRun(s: Services, c: ConnectionRow): Promise<RunRow> {
  const now = s.now();
  await s.db
    .update(billingConnectionRuns)
    .set({ status: "failed", errorCause: "interrupted", error: "The sync was interrupted (the replica running it stopped); nothing of it was kept.", finishedAt: now })
    .where(and(eq(billingConnectionRuns.connectionId, c.id), eq(billingConnectionRuns.status, "running")));
  const [queued] = await s.db
    .update(billingConnectionRuns)
    .set({ status: "running", startedAt: now })
    .where(eq(billingConnectionRuns.id, sql`(SELECT id FROM billing_connection_runs WHERE connection_id = ${c.id} AND status = 'queued' ORDER BY created_at LIMIT 1)`))
    .returning();
  if (queued) return queued;
  const [run] = await s.db.insert(billingConnectionRuns).values({ connectionId: c.id, orgId: c.orgId, trigger: "schedule", status: "running", createdAt: now, startedAt: now }).returning();
  return run!;
}

interface RunTotals {
  periodsSeen: number;
  periodsImported: number;
  periodsUnchanged: number;
  rowsImported: number;
  bytesRead: number;
}

/** Gives this worker's claim of a connection back (a stopping process): another replica may take it at once. */
async function releaseClaim(s: Services, connectionId: string, workerId: string): Promise<void> {
  await s.db
    .update(billingConnections)
    .set({ claimedBy: null, claimedUntil: null })
    .where(and(eq(billingConnections.id, connectionId), eq(billingConnections.claimedBy, workerId)));
}

async function syncClaimed(s: Services, c: ConnectionRow, workerId: string, leaseSeconds: number): Promise<RunView> {
  // Released by the shutdown if this sync cannot record its own end (lib/shutdown); the end below releases it otherwise.
  const held = s.shutdown.holdUntilReleased(`billing connection ${c.id}`, () => releaseClaim(s, c.id, workerId));
  try {
    return await syncHeld(s, c, workerId, leaseSeconds);
  } finally {
    held();
  }
}

async function syncHeld(s: Services, c: ConnectionRow, workerId: string, leaseSeconds: number): Promise<RunView> {
  const run = await startRun(s, c);
  const totals: RunTotals = { periodsSeen: 0, periodsImported: 0, periodsUnchanged: 0, rowsImported: 0, bytesRead: 0 };
  // A long import must not lose its claim to another replica: renew the lease while it runs.
  const renew = setInterval(() => {
    const until = new Date(s.now().getTime() + leaseSeconds * 1000);
    s.db
      .update(billingConnections)
      .set({ claimedUntil: until })
      .where(and(eq(billingConnections.id, c.id), eq(billingConnections.claimedBy, workerId)))
      .catch(() => {});
  }, Math.max(1000, (leaseSeconds * 1000) / 3));
  let reader: ExportReader | null = null;
  let failure: { cause: string; message: string } | null = null;
  let stopped = false;
  const monthsImported: string[] = [];
  try {
    reader = await readerFor(settingsOf(secretBoxOf(s.config), c), { allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints });
    await syncPeriods(s, c, reader, totals, monthsImported);
  } catch (e) {
    // Stopped by the process's shutdown (before a period, or abandoned mid-import at the grace's
    // end, whatever error that surfaced as): no failure of the connection's.
    stopped = e instanceof SyncStopped || e instanceof WorkAbandoned || s.shutdown.abandoned;
    if (!stopped) {
      failure = describeFailure(reader ? (reader.explain?.(e) ?? e) : e);
      if (failure.cause === "internal") s.log.error("billing sync failed", { connection_id: c.id, org_id: c.orgId, error: errorForLog(e) });
    }
  } finally {
    clearInterval(renew);
    // Abandoned at its process's shutdown: the reader's sockets end with the process. Closed
    // now, a download still arriving would fail on a stream nobody reads any more (an uncaught
    // "aborted" logged as an error).
    if (!s.shutdown.abandoned) await Promise.resolve(reader?.close?.()).catch(() => {});
  }
  // Periods imported (even by a sync that failed later): the budgets see the new data before the run
  // is told finished. Never fails the sync.
  if (totals.periodsImported > 0 && !s.shutdown.abandoned) await evaluateBudgetsAfterImport(s, c.orgId);
  if (stopped) return interrupted(s, c, run, totals, workerId, s.shutdown.abandoned);
  const now = s.now();
  const failures = failure ? c.consecutiveFailures + 1 : 0;
  const retryMinutes = Math.min(s.config.billingSyncIntervalMinutes, FIRST_RETRY_MINUTES * 2 ** Math.max(0, failures - 1));
  const nextSyncAt = new Date(now.getTime() + (failure ? retryMinutes : s.config.billingSyncIntervalMinutes) * 60_000);
  // The run's end, the connection's state and the event telling of them commit together.
  const finished = await s.db.transaction(async (tx) => {
    const [finished] = await tx
      .update(billingConnectionRuns)
      .set({ ...totals, status: failure ? "failed" : "succeeded", errorCause: failure?.cause ?? null, error: failure?.message ?? null, finishedAt: now })
      .where(eq(billingConnectionRuns.id, run.id))
      .returning();
    await tx
      .update(billingConnections)
      .set({
        claimedBy: null,
        claimedUntil: null,
        consecutiveFailures: failures,
        ...(failure
          ? {
              lastError: failure.message,
              lastErrorCause: failure.cause,
              nextSyncAt,
              ...(failures >= FAILURES_BEFORE_ERROR ? { status: "error" as const } : {}),
            }
          : { status: "ok" as const, lastError: null, lastErrorCause: null, lastSyncedAt: now, nextSyncAt }),
      })
      .where(and(eq(billingConnections.id, c.id), eq(billingConnections.claimedBy, workerId)));
    const status = failure ? (failures >= FAILURES_BEFORE_ERROR ? "error" : c.status) : "ok";
    await emitSyncFinished(tx, { connection: c, run: finished!, failures, failure, periodsImported: totals.periodsImported, monthsImported, status, nextSyncAt, failuresBeforeError: FAILURES_BEFORE_ERROR });
    return finished!;
  });
  // New data: unusual spend among its days is told now rather than at the daily scan. Never fails the sync.
  if (totals.periodsImported > 0) await notifyAnomaliesAfterImport(s, c.orgId);
  if (failure) s.log.warn("billing sync failed", { connection_id: c.id, org_id: c.orgId, cause: failure.cause, consecutive_failures: failures });
  else s.log.info("billing sync done", { connection_id: c.id, org_id: c.orgId, periods_imported: totals.periodsImported, periods_unchanged: totals.periodsUnchanged, rows: totals.rowsImported });
  return runView(finished);
}

/**
 * The end of a sync stopped by its process's shutdown: the run is closed as interrupted with what
 * it did (periods imported before the stop are committed and kept; the one in progress was rolled
 * back), and the claim is given back while the connection stays due (its failures and next sync
 * time untouched), so the replica that looks next syncs it at once. No event: nothing failed.
 */
async function interrupted(s: Services, c: ConnectionRow, run: RunRow, totals: RunTotals, workerId: string, abandoned: boolean): Promise<RunView> {
  const now = s.now();
  const finished = await s.db.transaction(async (tx) => {
    const [finished] = await tx
      .update(billingConnectionRuns)
      .set({
        ...totals,
        status: "failed",
        errorCause: "interrupted",
        error: `The sync was stopped because the replica running it shut down${totals.periodsImported ? `; the ${totals.periodsImported} period(s) imported before are kept` : ""}${abandoned ? "; the period in progress was rolled back" : ""}. Another replica syncs the connection next.`,
        finishedAt: now,
      })
      .where(eq(billingConnectionRuns.id, run.id))
      .returning();
    await tx
      .update(billingConnections)
      .set({ claimedBy: null, claimedUntil: null })
      .where(and(eq(billingConnections.id, c.id), eq(billingConnections.claimedBy, workerId)));
    return finished!;
  });
  s.log.info("billing sync stopped by shutdown; connection released", { connection_id: c.id, org_id: c.orgId, periods_imported: totals.periodsImported, period_rolled_back: abandoned });
  return runView(finished);
}

async function syncPeriods(s: Services, c: ConnectionRow, reader: ExportReader, totals: RunTotals, monthsImported: string[] = []): Promise<void> {
  const periods = await reader.periods();
  totals.periodsSeen = periods.length;
  const known = new Map(
    (await queryRows<{ month: string; fingerprint: string }>(s.db, `SELECT to_char(month, 'YYYY-MM') AS month, fingerprint FROM billing_connection_periods WHERE connection_id = $1::uuid`, [c.id])).map((r) => [r.month, r.fingerprint]),
  );
  for (const period of periods) {
    if (known.get(period.month) === period.fingerprint) {
      totals.periodsUnchanged++;
      continue;
    }
    // A safe point: the periods before are committed; a stopping process starts no other.
    if (s.shutdown.stopRequested()) throw new SyncStopped();
    const rows = await importPeriod(s, c, period);
    if (rows === null) totals.periodsUnchanged++;
    else {
      totals.periodsImported++;
      monthsImported.push(period.month);
      totals.rowsImported += rows;
      totals.bytesRead += period.bytes;
    }
  }
}

/** Imports one period in one transaction; null when another replica had already imported this version. */
async function importPeriod(s: Services, c: ConnectionRow, period: SourcePeriod): Promise<number | null> {
  try {
    // Read until the stopping process's grace ends; then the import's transaction rolls back.
    const result = await importFocus(s.db, c.orgId, { records: s.shutdown.abandonable(joinTables(period.tables())) }, {
      fileName: `${c.name} ${period.month} (${period.files.length} file${period.files.length === 1 ? "" : "s"})`.slice(0, 500),
      now: s.now(),
      beforeCommit: async (tx: Tx, result) => {
        const recorded = await queryRows(
          tx,
          `INSERT INTO billing_connection_periods (connection_id, month, fingerprint, import_id, rows, imported_at)
           VALUES ($1::uuid, $2::date, $3, $4::uuid, $5, $6::timestamptz)
           ON CONFLICT (connection_id, month) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, import_id = EXCLUDED.import_id,
             rows = EXCLUDED.rows, imported_at = EXCLUDED.imported_at
           WHERE billing_connection_periods.fingerprint IS DISTINCT FROM EXCLUDED.fingerprint
           RETURNING 1`,
          [c.id, `${period.month}-01`, period.fingerprint, result.import_id, result.rows_imported, s.now().toISOString()],
        );
        // Imports of an org run one at a time; the one before this one already brought this version.
        if (!recorded.length) throw new PeriodAlreadyCurrent();
      },
    });
    return result.rows_imported;
  } catch (e) {
    if (e instanceof PeriodAlreadyCurrent) return null;
    throw e;
  }
}

/** A failure's cause and a message fit for the user (never a credential, never a stack). */
export function describeFailure(e: unknown): { cause: FailureCause | "internal"; message: string } {
  if (e instanceof ConnectionFailure) return { cause: e.cause, message: e.message };
  if (e instanceof FocusFileError) return { cause: e instanceof NotFocusError ? "not_focus" : "format", message: e.message };
  if (e instanceof FocusImportRejected) {
    // A sync keeps all rows of a period or none (it has no skip-invalid): the export is what to fix.
    const message = `${e.rowsRejected} row(s) of the export violate the FOCUS specification, so the period was not imported and its previous data is kept. Correct the rows at the source of the export; the next sync imports the period again. ${e.firstRejects}`;
    return { cause: "format", message: message.slice(0, 2000) };
  }
  if (e instanceof CsvSyntaxError) return { cause: "format", message: `A file of the export is not valid CSV: ${e.message}.` };
  const code = (e as { code?: string })?.code;
  if (typeof code === "string" && /^Z_/.test(code)) return { cause: "format", message: "A file of the export is not valid gzip (truncated or corrupt); the previous data is kept." };
  return { cause: "internal", message: "The sync failed on our side; the error has been logged and the sync will be retried." };
}
