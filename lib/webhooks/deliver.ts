/**
 * The delivery worker: at least once per endpoint and event, recorded once, in event order per
 * endpoint, whatever the number of replicas and whenever one dies.
 *
 * Scheduling is per endpoint (its row: next_attempt_at, consecutive_failures, failing_since,
 * lease). A pass claims due endpoints that have pending deliveries (FOR NO KEY UPDATE SKIP
 * LOCKED, then a random lease token with an expiry), and serves each claimed endpoint on its
 * own, concurrently with the others: its pending deliveries in order of (event time, event seq),
 * one request at a time, until one fails or the claim's budget is spent. Before each send the
 * lease is renewed (lost: stop, send nothing); each attempt is recorded (attempt row, the
 * delivery's last_* fields, the endpoint's failure state) in one transaction that first checks
 * the lease is still this worker's, so an attempt is recorded by its holder only.
 *
 * A worker killed between the receiver's 2xx and its record leaves the delivery pending; when
 * its lease lapses another worker sends it again with the same `webhook-id` (the event's id),
 * which the receiver dedupes. A failure blocks the endpoint (later events wait behind it, so
 * order holds) for an exponential backoff with full jitter; an endpoint failing for 3 days, or
 * answering 410 Gone, is disabled in the transaction that records the failure: its pending
 * deliveries fail and a `webhook_endpoint.disabled` event is written.
 */
import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import { events, webhookAttempts, webhookDeliveries, webhookEndpoints } from "../db/schema/events.ts";
import { openEgress, type Egress } from "../egress.ts";
import { emitEvent } from "../events/emit.ts";
import { errorForLog } from "../log.ts";
import { secretBoxOf } from "../secrets/index.ts";
import type { Services } from "../services.ts";
import { isLegacy } from "./legacy.ts";
import { messageFor, type EventRow } from "./payload.ts";
import { openEndpointSecret, signingSecretsOf, type EndpointRow } from "./secrets.ts";
import { failureText, postBounded, SEND_TIMEOUT_MS, type SendResult } from "./send.ts";
import { safeTarget } from "./target.ts";
import { rowsOf } from "../billing/sql.ts";
import { webhookEndpointLinks } from "../events/links.ts";

/** How long a claimed endpoint stays with its worker without a renewal: far longer than one send. */
export const LEASE_MS = 60_000;
/** An endpoint failing without a success for this long is disabled. */
export const DISABLE_AFTER_MS = 3 * 86_400_000;
const BASE_BACKOFF_MS = 5_000;
const MAX_BACKOFF_MS = 60 * 60_000;
const MIN_BACKOFF_MS = 1_000;
/** Endpoints one process serves at once (each has at most one request in flight). */
const MAX_IN_FLIGHT_PER_PROCESS = 64;

/** The longest wait after `failures` consecutive failures: 5 s · 2^(n−1), capped at 1 h. */
export function backoffCeilingMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.min(Math.max(failures - 1, 0), 20));
}

/** The wait after `failures` consecutive failures: full jitter under the ceiling (at least 1 s), so endpoints that failed together do not retry together. */
export function backoffMs(failures: number, random: () => number = Math.random): number {
  return Math.max(MIN_BACKOFF_MS, Math.floor(random() * backoffCeilingMs(failures)));
}

export interface DeliveryHooks {
  /** After the receiver answered, before the attempt is recorded (crash tests). */
  afterSend?(d: { endpointId: string; deliveryId: string; eventId: string }): Promise<void> | void;
}

export interface DeliverOptions {
  /** Endpoints claimed by this pass at most (default 16; fewer when the process is busy). */
  maxEndpoints?: number;
  /** Deliveries sent per claimed endpoint at most (default 1000; the time budget usually ends a claim first). */
  maxPerClaim?: number;
  /** Time one claim may spend sending before it lets go (default 20 s). */
  claimBudgetMs?: number;
  leaseMs?: number;
  /** Per-request deadline (default 10 s). */
  timeoutMs?: number;
  /** Jitter source (tests). */
  random?: () => number;
  hooks?: DeliveryHooks;
  /** Only this endpoint. */
  endpointId?: string;
}

export interface DeliverReport {
  endpoints: number;
  delivered: number;
  failed: number;
  disabled: number;
}

interface Slots {
  inFlight: number;
}

function slotsOf(s: Services): Slots {
  return ((s.extras.webhookDeliverySlots as Slots | undefined) ??= { inFlight: 0 });
}

/**
 * One delivery pass: claims due endpoints and serves them concurrently; resolves when each has
 * finished its claim. Passes may overlap (the job starts one every second): a slow receiver
 * holds only its own endpoint, and the next pass claims the others.
 */
export async function deliverWebhooks(s: Services, opts: DeliverOptions = {}): Promise<DeliverReport> {
  const report: DeliverReport = { endpoints: 0, delivered: 0, failed: 0, disabled: 0 };
  const slots = slotsOf(s);
  const room = Math.min(opts.maxEndpoints ?? 16, MAX_IN_FLIGHT_PER_PROCESS - slots.inFlight);
  // A stopping process claims no endpoint (lib/shutdown).
  if (room <= 0 || s.shutdown.stopRequested()) return report;
  slots.inFlight += room;
  let claimed: EndpointRow[] = [];
  try {
    claimed = await claimEndpoints(s, room, opts);
  } finally {
    slots.inFlight -= room - claimed.length;
  }
  report.endpoints = claimed.length;
  await Promise.all(
    claimed.map((endpoint) =>
      serveEndpoint(s, endpoint, opts, report)
        .catch((e) => s.log.error("webhook endpoint delivery failed", { endpoint_id: endpoint.id, error: errorForLog(e) }))
        .finally(() => {
          slots.inFlight--;
        }),
    ),
  );
  return report;
}

async function claimEndpoints(s: Services, limit: number, opts: DeliverOptions): Promise<EndpointRow[]> {
  const now = s.now();
  const e = webhookEndpoints;
  const due = s.db
    .select({ id: e.id })
    .from(e)
    .where(
      and(
        eq(e.enabled, true),
        lte(e.nextAttemptAt, now),
        or(isNull(e.leaseUntil), lt(e.leaseUntil, now)),
        opts.endpointId ? eq(e.id, opts.endpointId) : undefined,
        sql`EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = ${e.id} AND d.status = 'pending')`,
      ),
    )
    .orderBy(asc(e.nextAttemptAt))
    .limit(limit)
    .for("no key update", { skipLocked: true });
  return s.db
    .update(e)
    .set({ leaseToken: sql`gen_random_uuid()`, leaseUntil: new Date(now.getTime() + (opts.leaseMs ?? LEASE_MS)) })
    .where(inArray(e.id, due))
    .returning();
}

/** Extends this worker's lease; null when it is no longer this worker's (expired and taken, or cleared by a change). */
async function renewLease(s: Services, endpoint: EndpointRow, leaseMs: number): Promise<boolean> {
  const now = s.now();
  const held = await s.db
    .update(webhookEndpoints)
    .set({ leaseUntil: new Date(now.getTime() + leaseMs) })
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.leaseToken, endpoint.leaseToken!), eq(webhookEndpoints.enabled, true)))
    .returning({ id: webhookEndpoints.id });
  return held.length > 0;
}

async function releaseLease(s: Services, endpoint: EndpointRow): Promise<void> {
  await s.db
    .update(webhookEndpoints)
    .set({ leaseToken: null, leaseUntil: null })
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.leaseToken, endpoint.leaseToken!)));
}

interface PendingDelivery {
  delivery: typeof webhookDeliveries.$inferSelect;
  event: EventRow;
}

async function nextPending(s: Services, endpointId: string, limit: number): Promise<PendingDelivery[]> {
  return s.db
    .select({ delivery: webhookDeliveries, event: events })
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, "pending")))
    .orderBy(asc(webhookDeliveries.eventOccurredAt), asc(webhookDeliveries.eventSeq))
    .limit(limit);
}

/** Where the endpoint's requests go, and the agents that may reach it (checked now: SSRF rule at every claim). */
export interface Target {
  url: string;
  egress: Egress;
}

export async function openTarget(s: Services, endpoint: EndpointRow): Promise<Target> {
  const url = endpoint.kind === "slack" ? openEndpointSecret(secretBoxOf(s.config), endpoint) : endpoint.url;
  if (!url) throw new Error("the endpoint has no URL");
  // The operator's own compatibility endpoints may be internal; an org's follow the connections' rule.
  const egress = await openEgress([url], isLegacy(endpoint) || s.config.connectionsAllowPrivateEndpoints);
  return { url, egress };
}

async function serveEndpoint(s: Services, endpoint: EndpointRow, opts: DeliverOptions, report: DeliverReport): Promise<void> {
  const leaseMs = opts.leaseMs ?? LEASE_MS;
  const maxPerClaim = opts.maxPerClaim ?? 1000;
  const budgetMs = opts.claimBudgetMs ?? 20_000;
  const started = Date.now();
  // Opened at the first send of the claim: resolved and checked once, its sockets reused.
  const claim: { target: Target | null } = { target: null };
  // The claim itself set the lease a moment ago.
  const lease = { renewedAt: started };
  let sent = 0;
  try {
    while (sent < maxPerClaim && Date.now() - started < budgetMs) {
      const batch = await nextPending(s, endpoint.id, Math.min(25, maxPerClaim - sent));
      if (!batch.length) return;
      for (const pending of batch) {
        // A stopping process sends nothing more: the lease is given back below and another
        // replica goes on at once. A send under way is recorded first (it never is given back
        // mid-send: a second replica would send it again while the first answer is coming).
        if (s.shutdown.stopRequested()) return;
        // Each recorded success renews the lease; renew here only when that was too long ago
        // for this send to end inside it (a claim's first send, or after a slow receiver).
        if (Date.now() - lease.renewedAt > leaseMs / 2) {
          if (!(await renewLease(s, endpoint, leaseMs))) return;
          lease.renewedAt = Date.now();
        }
        const result = await attempt(s, endpoint, pending, claim, opts);
        await opts.hooks?.afterSend?.({ endpointId: endpoint.id, deliveryId: pending.delivery.id, eventId: pending.event.id });
        const outcome = result.ok ? await recordSuccess(s, endpoint, pending, result, leaseMs, lease) : await record(s, endpoint, pending, result, opts);
        sent++;
        if (outcome === "lost") return;
        if (outcome === "delivered") report.delivered++;
        else {
          report.failed++;
          if (outcome === "disabled") report.disabled++;
          // The endpoint waits out its backoff; the events behind this one wait with it.
          return;
        }
        if (sent >= maxPerClaim || Date.now() - started >= budgetMs) return;
      }
    }
  } finally {
    claim.target?.egress.close();
    await releaseLease(s, endpoint).catch(() => {});
  }
}

/** Builds, signs and sends one delivery; a failure to get that far is a failed attempt like any other. */
async function attempt(
  s: Services,
  endpoint: EndpointRow,
  pending: PendingDelivery,
  claim: { target: Target | null },
  opts: DeliverOptions,
): Promise<SendResult> {
  const timeoutMs = opts.timeoutMs ?? SEND_TIMEOUT_MS;
  let target: Target;
  try {
    target = claim.target ??= await openTarget(s, endpoint);
  } catch (e) {
    return { statusCode: null, ok: false, latencyMs: 0, excerpt: null, error: failureText(e, timeoutMs) };
  }
  let message;
  try {
    const secrets = signingSecretsOf(secretBoxOf(s.config), endpoint, s.now());
    message = await messageFor(s, endpoint, pending.event, secrets, pending.delivery.attempts + 1);
  } catch (e) {
    s.log.error("webhook message could not be built", { endpoint_id: endpoint.id, event_id: pending.event.id, error: errorForLog(e) });
    return { statusCode: null, ok: false, latencyMs: 0, excerpt: null, error: "the message could not be built (logged on the server)" };
  }
  const result = await postBounded(target.egress, target.url, message.headers, message.body, timeoutMs);
  if (!result.ok) s.log.warn("webhook delivery failed", { endpoint_id: endpoint.id, event_id: pending.event.id, target: safeTarget(target.url), status: result.statusCode, error: result.error });
  return result;
}

type Outcome = "delivered" | "failed" | "disabled" | "lost";

/**
 * Records a success in one statement (the common path: one round trip per delivery): only while
 * this worker holds the lease, which it renews; the endpoint's failure state is cleared; the
 * delivery is marked succeeded and its attempt logged.
 */
async function recordSuccess(s: Services, endpoint: EndpointRow, pending: PendingDelivery, result: SendResult, leaseMs: number, lease: { renewedAt: number }): Promise<Outcome> {
  const at = s.now();
  const d = pending.delivery;
  const rows = rowsOf<{ attempts: number | null }>(
    await s.db.execute(sql`
      WITH held AS (
        UPDATE webhook_endpoints SET lease_until = ${new Date(at.getTime() + leaseMs).toISOString()}::timestamptz, consecutive_failures = 0, failing_since = NULL
        WHERE id = ${endpoint.id}::uuid AND lease_token = ${endpoint.leaseToken}::uuid AND enabled
        RETURNING id
      ), delivered AS (
        UPDATE webhook_deliveries
        SET attempts = attempts + 1, status = 'succeeded', last_attempt_at = ${at.toISOString()}::timestamptz,
            last_status_code = ${result.statusCode}, last_latency_ms = ${result.latencyMs}, last_response_excerpt = ${result.excerpt},
            last_error = NULL, delivered_at = ${at.toISOString()}::timestamptz, redeliver_requested_at = NULL
        WHERE id = ${d.id}::uuid AND status = 'pending' AND EXISTS (SELECT 1 FROM held)
        RETURNING id, attempts
      ), logged AS (
        INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempt, at, status_code, latency_ms, response_excerpt, error, manual)
        SELECT id, ${endpoint.id}::uuid, attempts, ${at.toISOString()}::timestamptz, ${result.statusCode}, ${result.latencyMs}, ${result.excerpt}, NULL, ${d.redeliverRequestedAt !== null}
        FROM delivered
      )
      SELECT (SELECT attempts FROM delivered) AS attempts`),
  );
  // Lost: the lease (taken over after expiry, or cleared by a change), or the delivery (deleted endpoint, a disable).
  if (rows[0]?.attempts == null) return "lost";
  lease.renewedAt = Date.now();
  return "delivered";
}

/** Records one attempt, if this worker still holds the endpoint's lease. */
async function record(s: Services, endpoint: EndpointRow, pending: PendingDelivery, result: SendResult, opts: DeliverOptions): Promise<Outcome> {
  const at = s.now();
  const d = pending.delivery;
  return s.db.transaction(async (tx) => {
    const [held] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.leaseToken, endpoint.leaseToken!)))
      .for("no key update");
    if (!held) return "lost";
    const [updated] = await tx
      .update(webhookDeliveries)
      .set({
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        status: result.ok ? "succeeded" : "pending",
        lastAttemptAt: at,
        lastStatusCode: result.statusCode,
        lastLatencyMs: result.latencyMs,
        lastResponseExcerpt: result.excerpt,
        lastError: result.error,
        deliveredAt: result.ok ? at : null,
        redeliverRequestedAt: null,
      })
      .where(and(eq(webhookDeliveries.id, d.id), eq(webhookDeliveries.status, "pending")))
      .returning({ attempts: webhookDeliveries.attempts });
    // Gone meanwhile (the endpoint was deleted, or a disable failed it): nothing to record.
    if (!updated) return "lost";
    await tx.insert(webhookAttempts).values({
      deliveryId: d.id,
      endpointId: endpoint.id,
      attempt: updated.attempts,
      at,
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      responseExcerpt: result.excerpt,
      error: result.error,
      manual: d.redeliverRequestedAt !== null,
    });
    if (result.ok) {
      if (held.consecutiveFailures > 0 || held.failingSince) {
        await tx.update(webhookEndpoints).set({ consecutiveFailures: 0, failingSince: null }).where(eq(webhookEndpoints.id, endpoint.id));
      }
      return "delivered";
    }
    const failures = held.consecutiveFailures + 1;
    const failingSince = held.failingSince ?? at;
    const gone = result.statusCode === 410;
    if (!isLegacy(held) && (gone || at.getTime() - failingSince.getTime() >= DISABLE_AFTER_MS)) {
      const reason = gone
        ? "The receiver answered 410 Gone: it asked not to be sent anything more."
        : `Every delivery failed for 3 days (since ${failingSince.toISOString()}, ${failures} attempts; last: ${result.error}).`;
      await tx
        .update(webhookEndpoints)
        .set({ enabled: false, disabledAt: at, disabledReason: reason, consecutiveFailures: failures, failingSince, leaseToken: null, leaseUntil: null, updatedAt: at })
        .where(eq(webhookEndpoints.id, endpoint.id));
      const abandoned = await tx
        .update(webhookDeliveries)
        .set({ status: "failed" })
        .where(and(eq(webhookDeliveries.endpointId, endpoint.id), eq(webhookDeliveries.status, "pending")))
        .returning({ id: webhookDeliveries.id });
      if (held.orgId) {
        await emitEvent(tx, {
          orgId: held.orgId,
          type: "webhook_endpoint.disabled",
          occurredAt: at,
          data: {
            endpoint_id: held.id,
            kind: held.kind,
            // Scheme and host only: the log is readable by every member (events:read), and a path or query may hold a token.
            url: held.kind === "slack" ? held.url : safeTarget(held.url),
            description: held.description,
            reason: gone ? "gone" : "failing",
            disabled_reason: reason,
            failing_since: failingSince.toISOString(),
            consecutive_failures: failures,
            last_status_code: result.statusCode,
            last_error: result.error,
            failed_deliveries: abandoned.length,
          },
          ...webhookEndpointLinks(held.orgId, held.id),
          dedupeKey: `webhook_endpoint.disabled:${held.id}:${at.toISOString()}`,
        });
      }
      s.log.warn("webhook endpoint disabled", { endpoint_id: held.id, org_id: held.orgId, reason: gone ? "gone" : "failing" });
      return "disabled";
    }
    await tx
      .update(webhookEndpoints)
      .set({ consecutiveFailures: failures, failingSince, nextAttemptAt: new Date(at.getTime() + backoffMs(failures, opts.random)), leaseToken: null, leaseUntil: null })
      .where(eq(webhookEndpoints.id, endpoint.id));
    return "failed";
  });
}
