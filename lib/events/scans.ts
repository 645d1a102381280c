/**
 * Scans for events that no change in the database triggers (time passing: a commitment nearing
 * its end, a connection with no new data, a day of unusual spend). Each job scans org by org;
 * an org is claimed for a period (a UTC day or hour) in `event_scans`, so on any number of
 * replicas each org is scanned once per period: the period is marked done in the transaction
 * that writes the org's events, and a claim whose holder died lapses after the lease. The events
 * carry dedupe keys as well, so a scan repeated anyway (a lapsed lease, a manual run) writes
 * nothing twice.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Db, Tx } from "../db/index.ts";
import { queryRows } from "../billing/sql.ts";
import { errorForLog } from "../log.ts";
import type { Services } from "../services.ts";

/** How long an org's claim holds: far beyond one org's scan (a few queries). */
const LEASE_SECONDS = 600;

/** The UTC day of `now` (YYYY-MM-DD): a daily scan's period. */
export const dayPeriod = (now: Date) => now.toISOString().slice(0, 10);
/** The UTC hour of `now` (YYYY-MM-DDTHH): an hourly scan's period. */
export const hourPeriod = (now: Date) => now.toISOString().slice(0, 13);

/** Claims (job, org) for `period` unless that period is done or another holder's claim is live. */
export async function claimScan(db: Db, job: string, orgId: string, period: string, holder: string, now: Date): Promise<boolean> {
  const until = new Date(now.getTime() + LEASE_SECONDS * 1000).toISOString();
  const rows = await queryRows(
    db,
    `INSERT INTO event_scans (job, org_id, claimed_by, claimed_until, updated_at) VALUES ($1, $2::uuid, $3, $4::timestamptz, $5::timestamptz)
     ON CONFLICT (job, org_id) DO UPDATE SET claimed_by = EXCLUDED.claimed_by, claimed_until = EXCLUDED.claimed_until, updated_at = EXCLUDED.updated_at
       WHERE (event_scans.done_for IS NULL OR event_scans.done_for < $6)
         AND (event_scans.claimed_until IS NULL OR event_scans.claimed_until < $5::timestamptz)
     RETURNING 1`,
    [job, orgId, holder, until, now.toISOString(), period],
  );
  return rows.length === 1;
}

/** Marks the period done (in the transaction that wrote the scan's events); false when the claim was lost. */
async function finishScan(tx: Tx, job: string, orgId: string, period: string, holder: string): Promise<boolean> {
  const rows = await queryRows(
    tx,
    `UPDATE event_scans SET done_for = $3, claimed_by = NULL, claimed_until = NULL WHERE job = $1 AND org_id = $2::uuid AND claimed_by = $4 RETURNING 1`,
    [job, orgId, period, holder],
  );
  return rows.length === 1;
}

async function releaseScan(db: Db, job: string, orgId: string, holder: string): Promise<void> {
  await queryRows(db, `UPDATE event_scans SET claimed_by = NULL, claimed_until = NULL WHERE job = $1 AND org_id = $2::uuid AND claimed_by = $3`, [job, orgId, holder]);
}

/** Thrown inside a scan's transaction when its claim was taken over: its events are rolled back (the new holder writes them). */
class ScanClaimLost extends Error {}

export interface ScanJob {
  /** The job's name (its claims' key). */
  job: string;
  /** The period of a run at `now` (dayPeriod / hourPeriod): an org is scanned once per period. */
  period(now: Date): string;
  /** The orgs that may have something to tell (cheap: one query). */
  candidates(s: Services, now: Date): Promise<string[]>;
  /** Scans one org and writes its events in `tx`; returns how many were written. */
  scan(s: Services, tx: Tx, orgId: string, now: Date): Promise<number>;
}

/**
 * Runs a scan over its candidate orgs at `s.now()`: each org claimed for the period, scanned in
 * one transaction with the period's mark, released when its scan failed (retried next run).
 */
export async function runScan(s: Services, scan: ScanJob): Promise<{ orgs: number; events: number }> {
  const now = s.now();
  const period = scan.period(now);
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let orgs = 0;
  let events = 0;
  for (const orgId of await scan.candidates(s, now)) {
    // A stopping process claims no more organizations (lib/shutdown); the next run scans them.
    if (s.shutdown.stopRequested()) break;
    if (!(await claimScan(s.db, scan.job, orgId, period, holder, now))) continue;
    try {
      events += await s.db.transaction(async (tx) => {
        const n = await scan.scan(s, tx, orgId, now);
        if (!(await finishScan(tx, scan.job, orgId, period, holder))) throw new ScanClaimLost();
        return n;
      });
      orgs++;
    } catch (e) {
      if (!(e instanceof ScanClaimLost)) s.log.error("event scan failed", { job: scan.job, org_id: orgId, error: errorForLog(e) });
      await releaseScan(s.db, scan.job, orgId, holder).catch(() => {});
    }
  }
  if (events) s.log.info("event scan", { job: scan.job, period, orgs, events });
  return { orgs, events };
}
