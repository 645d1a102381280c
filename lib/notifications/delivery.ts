/**
 * Sends the email outbox (rows written by queueEventEmailsSql with the events' transactions).
 *
 * Each batch is claimed in one statement: due pending rows whose lease is free are selected
 * `FOR UPDATE SKIP LOCKED` and given this run's lease token, so replicas and overlapping runs
 * never take the same row. Sending happens outside any transaction; only the holder of the
 * lease records the outcome. A crash between the server's acceptance and the record means the
 * row is sent again once its lease runs out, with the same Message-ID (event and recipient) and
 * `X-Commitops-Event-Id`, so the resend is recognisable (mail clients thread or drop it).
 *
 * A failure (the server down, a 4xx answer, a timeout) is retried with exponential backoff and
 * full jitter for 3 days from the event, then the row is given up (`failed`). A 5xx refusal of
 * the recipient is final at once. Without SMTP_URL nothing is sent: rows wait (they are sent if
 * a mail server is configured within 3 days of their event) and are given up after 3 days.
 */
import { randomUUID } from "node:crypto";
import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import { emailNotifications, events, memberships, organizations } from "../db/schema/index.ts";
import type { Services } from "../services.ts";
import { errorForLog } from "../log.ts";
import { eventView } from "../events/view.ts";
import { createMailer, MailError, type Mailer } from "./mailer.ts";
import { renderEventEmail } from "./render.ts";
import { ALWAYS_EMAILED_TO_ADMINS } from "./preferences.ts";

const HOUR = 3_600_000;
/** How long an email is tried, from when it was queued (with its event). */
export const EMAIL_RETRY_WINDOW_MS = 3 * 24 * HOUR;
/** How long a claimed row stays ours: longer than a send can take (the timeout). */
export const EMAIL_LEASE_MS = 120_000;
const SEND_TIMEOUT_MS = 30_000;
const MIN_BACKOFF_MS = 5_000;
/** Emails sent at once by one run (each on its own SMTP connection). */
const SEND_CONCURRENCY = 4;

/** The retry ceiling after `attempts` failed sends: 30 s · 2^(n−1), at most an hour. */
export function emailBackoffCeilingMs(attempts: number): number {
  return Math.min(30_000 * 2 ** Math.max(0, Math.min(attempts - 1, 20)), HOUR);
}

/** Full jitter below the ceiling, never under 5 s (replicas retrying one server spread out). */
export function emailBackoffMs(attempts: number, random: () => number = Math.random): number {
  return Math.max(MIN_BACKOFF_MS, Math.floor(random() * emailBackoffCeilingMs(attempts)));
}

export interface EmailDeliveryHooks {
  /** Runs after the server accepted an email, before it is recorded; throwing = the process died there (nothing recorded). */
  afterSend?(n: { id: string; eventId: string; userId: string }): Promise<void> | void;
}

export interface EmailDeliveryOptions {
  now?: Date;
  batchSize?: number;
  maxBatches?: number;
  /** Per-email timeout; kept well under the lease. */
  timeoutMs?: number;
  leaseMs?: number;
  random?: () => number;
  hooks?: EmailDeliveryHooks;
}

export interface EmailDeliveryReport {
  sent: number;
  /** Failed this time, retried later. */
  retried: number;
  /** Given up: refused for good, no longer a member, or past the 3-day window. */
  failed: number;
}

/** The Message-ID of one event's email to one member: the same on every attempt. */
export function emailMessageId(eventId: string, userId: string, publicUrl: string): string {
  let host = "commitops.invalid";
  try {
    host = new URL(publicUrl).hostname || host;
  } catch {
    // PUBLIC_URL is checked elsewhere; the placeholder domain keeps the id well-formed.
  }
  return `<${eventId}.${userId}@${host}>`;
}

type Claimed = { id: string; eventId: string; userId: string; attempts: number; createdAt: Date };

export async function deliverEmails(s: Services, opts: EmailDeliveryOptions = {}): Promise<EmailDeliveryReport> {
  const report: EmailDeliveryReport = { sent: 0, retried: 0, failed: 0 };
  const now0 = opts.now ?? s.now();
  report.failed += await giveUpExpired(s, now0, s.config.smtpUrl ? "not sent within 3 days of the event" : "not sent: SMTP_URL was not set within 3 days of the event");
  let mailer: Mailer | null;
  try {
    mailer = createMailer(s.config);
  } catch (e) {
    s.log.error("email delivery: the mail server cannot be used", { error: e instanceof MailError ? e.message : "invalid SMTP_URL" });
    return report;
  }
  if (!mailer) return report;
  const batchSize = opts.batchSize ?? 20;
  const maxBatches = opts.maxBatches ?? 10;
  const leaseMs = opts.leaseMs ?? EMAIL_LEASE_MS;
  const timeoutMs = Math.min(opts.timeoutMs ?? SEND_TIMEOUT_MS, leaseMs / 2);
  try {
    // A stopping process claims no batch and starts no send (lib/shutdown).
    for (let batch = 0; batch < maxBatches && !s.shutdown.stopRequested(); batch++) {
      const now = opts.now ?? s.now();
      const leaseToken = randomUUID();
      const claimed = await claim(s, now, batchSize, leaseToken, leaseMs);
      if (!claimed.length) break;
      const pending = [...claimed];
      // The rows not yet being sent are given back at shutdown; one being sent keeps its lease
      // (given back, another replica could send it again while this send completes).
      const unsent = () => releaseUnsent(s, leaseToken, pending.splice(0).map((c) => c.id));
      const held = s.shutdown.holdUntilReleased("email notifications", unsent);
      const worker = async () => {
        while (pending.length && !s.shutdown.stopRequested()) await sendOne(s, mailer!, pending.shift()!, leaseToken, timeoutMs, opts, report);
      };
      try {
        await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, claimed.length) }, worker));
      } finally {
        held();
      }
      if (pending.length) await unsent();
      if (claimed.length < batchSize) break;
    }
  } finally {
    mailer.close();
  }
  return report;
}

async function giveUpExpired(s: Services, now: Date, reason: string): Promise<number> {
  const cutoff = new Date(now.getTime() - EMAIL_RETRY_WINDOW_MS);
  const n = emailNotifications;
  const rows = await s.db
    .update(n)
    .set({ status: "failed", leaseToken: null, leaseUntil: null, lastError: sql`CASE WHEN ${n.lastError} IS NULL THEN ${reason} ELSE 'gave up after 3 days: ' || ${n.lastError} END` })
    .where(and(eq(n.status, "pending"), lte(n.nextAttemptAt, now), lt(n.createdAt, cutoff), or(isNull(n.leaseUntil), lt(n.leaseUntil, now))))
    .returning({ id: n.id });
  if (rows.length) s.log.warn("emails given up: not sent within 3 days", { count: rows.length });
  return rows.length;
}

/** Claimed rows this run did not send (a stopping process): due again at once, their attempt not counted. */
async function releaseUnsent(s: Services, leaseToken: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  const n = emailNotifications;
  await s.db
    .update(n)
    .set({ leaseToken: null, leaseUntil: null, attempts: sql`greatest(${n.attempts} - 1, 0)` })
    .where(and(inArray(n.id, ids), eq(n.leaseToken, leaseToken), eq(n.status, "pending")));
}

async function claim(s: Services, now: Date, limit: number, leaseToken: string, leaseMs: number): Promise<Claimed[]> {
  const n = emailNotifications;
  const due = s.db
    .select({ id: n.id })
    .from(n)
    .where(and(eq(n.status, "pending"), lte(n.nextAttemptAt, now), or(isNull(n.leaseUntil), lt(n.leaseUntil, now))))
    .orderBy(asc(n.nextAttemptAt))
    .limit(limit)
    .for("update", { skipLocked: true });
  return s.db
    .update(n)
    .set({ leaseToken, leaseUntil: new Date(now.getTime() + leaseMs), attempts: sql`${n.attempts} + 1` })
    .where(inArray(n.id, due))
    .returning({ id: n.id, eventId: n.eventId, userId: n.userId, attempts: n.attempts, createdAt: n.createdAt });
}

async function sendOne(s: Services, mailer: Mailer, c: Claimed, leaseToken: string, timeoutMs: number, opts: EmailDeliveryOptions, report: EmailDeliveryReport): Promise<void> {
  const n = emailNotifications;
  const mine = and(eq(n.id, c.id), eq(n.leaseToken, leaseToken));
  const [row] = await s.db
    .select({ toAddress: n.toAddress, orgId: n.orgId, event: events, orgName: organizations.name, role: memberships.role })
    .from(n)
    .innerJoin(events, eq(events.id, n.eventId))
    .innerJoin(organizations, eq(organizations.id, n.orgId))
    .leftJoin(memberships, and(eq(memberships.orgId, n.orgId), eq(memberships.userId, n.userId)))
    .where(eq(n.id, c.id));
  if (!row) return;
  if (!row.role) {
    // Removed from the organization since the event: they no longer hear of it.
    await s.db.update(n).set({ status: "failed", leaseToken: null, leaseUntil: null, lastError: "not sent: no longer a member of the organization" }).where(mine);
    report.failed++;
    return;
  }
  const view = eventView(row.event, s.config.publicUrl);
  const always = row.role === "admin" && (ALWAYS_EMAILED_TO_ADMINS as readonly string[]).includes(view.type);
  let error: MailError | null = null;
  try {
    const email = renderEventEmail(view, { publicUrl: s.config.publicUrl, orgName: row.orgName, always });
    await mailer.send(
      {
        to: row.toAddress,
        ...email,
        messageId: emailMessageId(c.eventId, c.userId, s.config.publicUrl),
        headers: { "X-Commitops-Event-Id": c.eventId, "X-Commitops-Event-Type": view.type, "X-Commitops-Org-Id": row.orgId, "Auto-Submitted": "auto-generated" },
      },
      timeoutMs,
    );
  } catch (e) {
    error = e instanceof MailError ? e : new MailError("the email could not be rendered or sent", null, false);
    if (!(e instanceof MailError)) s.log.error("email delivery: unexpected error", { notification_id: c.id, error: errorForLog(e) });
  }
  if (!error && opts.hooks?.afterSend) {
    try {
      await opts.hooks.afterSend({ id: c.id, eventId: c.eventId, userId: c.userId });
    } catch {
      return;
    }
  }
  const at = opts.now ?? s.now();
  if (!error) {
    await s.db.update(n).set({ status: "sent", sentAt: at, leaseToken: null, leaseUntil: null, lastError: null }).where(mine);
    report.sent++;
    return;
  }
  const next = new Date(at.getTime() + emailBackoffMs(c.attempts, opts.random));
  const giveUp = error.permanent || next.getTime() - c.createdAt.getTime() > EMAIL_RETRY_WINDOW_MS;
  const fields = { notification_id: c.id, event_id: c.eventId, event_type: view.type, attempt: c.attempts, response_code: error.responseCode, smtp: mailer.target, error: error.message };
  if (giveUp) {
    await s.db
      .update(n)
      .set({ status: "failed", leaseToken: null, leaseUntil: null, lastError: error.permanent ? `refused: ${error.message}` : `gave up after 3 days: ${error.message}` })
      .where(mine);
    report.failed++;
    s.log.warn("email not delivered: given up", fields);
  } else {
    await s.db.update(n).set({ nextAttemptAt: next, leaseToken: null, leaseUntil: null, lastError: error.message }).where(mine);
    report.retried++;
    s.log.warn("email delivery failed; retrying", { ...fields, next_attempt_at: next.toISOString() });
  }
}
