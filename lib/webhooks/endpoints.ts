/**
 * An organization's webhook endpoints (`/webhook-endpoints`): where its events go, a Standard
 * Webhooks receiver (`kind: webhook`, signed) or a Slack incoming webhook (`kind: slack`).
 * Secrets are sealed (lib/webhooks/secrets.ts) and shown only in the answers to create and
 * rotate. Every change that alters where or how an endpoint is delivered to clears its delivery
 * lease, so a worker in the middle of a batch stops at its next send and the next claim uses the
 * new settings.
 */
import { randomUUID } from "node:crypto";
import { and, asc, eq, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/index.ts";
import { webhookEndpoints } from "../db/schema/events.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { EVENT_TYPES, isEventType } from "../events/catalog.ts";
import type { Page, PageRequest } from "../http/paging.ts";
import { codePointLength } from "../http/text.ts";
import { secretBoxOf, SecretKeyMissing } from "../secrets/index.ts";
import type { Services } from "../services.ts";
import { sealEndpointSecret, type EndpointRow } from "./secrets.ts";
import { newSigningSecret } from "./signing.ts";
import { endpointUrlProblem, redactedUrl } from "./target.ts";

export const ENDPOINT_KINDS = ["webhook", "slack"] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];
/** Subscribes to every event type, present and future. */
export const ALL_EVENTS = "*";
export const MAX_ENDPOINTS_PER_ORG = 50;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 168;

export interface EndpointInput {
  url: string;
  event_types: string[];
  description?: string | null;
  enabled?: boolean;
  kind?: EndpointKind;
}

export interface EndpointPatch {
  url?: string;
  event_types?: string[];
  description?: string | null;
  enabled?: boolean;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An endpoint as the API shows it: never a secret (a Slack URL, the credential itself, redacted). */
export function endpointView(row: EndpointRow, now: Date) {
  return {
    id: row.id,
    kind: row.kind,
    url: row.url,
    event_types: row.eventTypes,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    disabled_at: iso(row.disabledAt),
    signed: row.kind === "webhook" && row.secretCiphertext !== null,
    previous_secret_expires_at: row.previousSecretExpiresAt && row.previousSecretExpiresAt > now ? row.previousSecretExpiresAt.toISOString() : null,
    consecutive_failures: row.consecutiveFailures,
    failing_since: iso(row.failingSince),
    next_attempt_at: row.consecutiveFailures > 0 ? iso(row.nextAttemptAt) : null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type EndpointView = ReturnType<typeof endpointView>;

const notFound = () => new NotFoundError("No webhook endpoint with this id in this organization.", "webhook_endpoint_not_found");

/** The event types as stored: known types without repeats, or `*` alone. */
function normalizedEventTypes(types: readonly string[]): string[] {
  if (!types.length) throw new ValidationError("Choose at least one event type, or `*` for all.", { event_types: ["must hold at least 1 value"] });
  const unknown = types.filter((t) => t !== ALL_EVENTS && !isEventType(t));
  if (unknown.length) throw new ValidationError("Unknown event type.", { event_types: [`must hold only event types of GET /events (${EVENT_TYPES.join(", ")}) or \`*\``] });
  if (types.includes(ALL_EVENTS)) return [ALL_EVENTS];
  return [...new Set(types)].sort();
}

function checkedDescription(d: string | null | undefined): string | null {
  if (d === undefined || d === null) return null;
  if (codePointLength(d) > MAX_DESCRIPTION_LENGTH) throw new ValidationError("The description is too long.", { description: [`must be at most ${MAX_DESCRIPTION_LENGTH} characters`] });
  return d;
}

async function checkedUrl(s: Services, url: string): Promise<string> {
  const problem = await endpointUrlProblem(url, s.config.connectionsAllowPrivateEndpoints);
  if (problem) throw new ValidationError(`The endpoint URL ${problem}.`, { url: [problem] });
  return url;
}

function sealingBox(s: Services) {
  const box = secretBoxOf(s.config);
  if (!box.canSeal) throw new SecretKeyMissing();
  return box;
}

/** The sealed columns of a new URL: a Slack URL is the credential, so it is sealed and shown redacted. */
function urlColumns(s: Services, id: string, kind: EndpointKind, url: string) {
  if (kind !== "slack") return { url };
  const sealed = sealEndpointSecret(sealingBox(s), id, url);
  return { url: redactedUrl(url), secretCiphertext: sealed.ciphertext, secretKeyId: sealed.keyId };
}

/**
 * Creates an endpoint; a webhook's answer carries its signing secret (`whsec_…`), shown this
 * once. At most MAX_ENDPOINTS_PER_ORG per organization, counted under a per-org lock.
 */
export async function createEndpoint(s: Services, orgId: string, input: EndpointInput, createdBy: string | null = null): Promise<EndpointView & { secret?: string }> {
  const kind = input.kind ?? "webhook";
  const eventTypes = normalizedEventTypes(input.event_types);
  const description = checkedDescription(input.description);
  const url = await checkedUrl(s, input.url);
  const id = randomUUID();
  const now = s.now();
  const secret = kind === "webhook" ? newSigningSecret() : undefined;
  const sealed = secret ? sealEndpointSecret(sealingBox(s), id, secret) : null;
  const row = await s.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`webhook_endpoints:${orgId}`}))`);
    const [{ n }] = (await tx.select({ n: sql<number>`count(*)::int` }).from(webhookEndpoints).where(eq(webhookEndpoints.orgId, orgId))) as [{ n: number }];
    if (Number(n) >= MAX_ENDPOINTS_PER_ORG) {
      throw new ConflictError(`This organization already has ${MAX_ENDPOINTS_PER_ORG} webhook endpoints, the most it may have; delete one first.`, "webhook_endpoint_limit_reached");
    }
    const [inserted] = await tx
      .insert(webhookEndpoints)
      .values({
        id,
        orgId,
        kind,
        ...urlColumns(s, id, kind, url),
        ...(sealed ? { secretCiphertext: sealed.ciphertext, secretKeyId: sealed.keyId } : {}),
        eventTypes,
        description,
        enabled: input.enabled ?? true,
        disabledAt: input.enabled === false ? now : null,
        disabledReason: input.enabled === false ? "Created disabled." : null,
        nextAttemptAt: now,
        createdBy,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return inserted!;
  });
  return { ...endpointView(row, now), ...(secret ? { secret } : {}) };
}

export async function getEndpointRow(db: DbOrTx, orgId: string, id: string): Promise<EndpointRow> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookEndpoints.id, id)));
  if (!row) throw notFound();
  return row;
}

export async function getEndpoint(s: Services, orgId: string, id: string): Promise<EndpointView> {
  return endpointView(await getEndpointRow(s.db, orgId, id), s.now());
}

/** The org's endpoints, oldest first (id as tiebreak). */
export async function pageEndpoints(s: Services, orgId: string, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<EndpointView>> {
  const where = eq(webhookEndpoints.orgId, orgId);
  const [counted] = await s.db.select({ n: sql<number>`count(*)::int` }).from(webhookEndpoints).where(where);
  const rows = await s.db.select().from(webhookEndpoints).where(where).orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id)).limit(p.limit).offset(p.offset);
  const now = s.now();
  return { items: rows.map((r) => endpointView(r, now)), total: Number(counted?.n ?? 0) };
}

/** The delivery state of an endpoint starting afresh: due now, no failures (re-enabled, or pointed elsewhere). */
const freshDeliveryState = (now: Date) => ({ consecutiveFailures: 0, failingSince: null, nextAttemptAt: now, disabledReason: null, disabledAt: null });
/** A worker holding the endpoint stops at its next send; the next claim reads the new settings. */
const leaseCleared = { leaseToken: null, leaseUntil: null };

/**
 * Changes an endpoint. Re-enabling a disabled one, or pointing it at another URL, resets its
 * failure state (due at once, no failures counted, no disable reason); its deliveries that
 * failed when it was disabled stay failed (redeliver them one by one).
 */
export async function updateEndpoint(s: Services, orgId: string, id: string, patch: EndpointPatch): Promise<EndpointView> {
  const eventTypes = patch.event_types === undefined ? undefined : normalizedEventTypes(patch.event_types);
  const description = patch.description === undefined ? undefined : checkedDescription(patch.description);
  const url = patch.url === undefined ? undefined : await checkedUrl(s, patch.url);
  const now = s.now();
  const row = await s.db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookEndpoints.id, id)))
      .for("no key update");
    if (!current) throw notFound();
    const set: Partial<EndpointRow> = { updatedAt: now, ...leaseCleared };
    if (eventTypes) set.eventTypes = eventTypes;
    if (description !== undefined) set.description = description;
    if (url !== undefined) Object.assign(set, urlColumns(s, id, current.kind, url), freshDeliveryState(now));
    if (patch.enabled === true && !current.enabled) Object.assign(set, { enabled: true }, freshDeliveryState(now));
    if (patch.enabled === false && current.enabled) Object.assign(set, { enabled: false, disabledAt: now, disabledReason: "Disabled through the API." });
    const [updated] = await tx.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, id)).returning();
    return updated!;
  });
  return endpointView(row, now);
}

/** Deletes an endpoint with its delivery log. */
export async function deleteEndpoint(db: Db, orgId: string, id: string): Promise<void> {
  const gone = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookEndpoints.id, id)))
    .returning({ id: webhookEndpoints.id });
  if (!gone.length) throw notFound();
}

/**
 * A new signing secret, shown in this answer only. The one it replaces keeps signing beside it
 * (both signatures in `webhook-signature`) for `overlapHours` (0: replaced at once), so
 * receivers can switch without losing a message; a secret older than that is dropped.
 */
export async function rotateEndpointSecret(s: Services, orgId: string, id: string, overlapHours = DEFAULT_OVERLAP_HOURS): Promise<EndpointView & { secret: string }> {
  if (!Number.isInteger(overlapHours) || overlapHours < 0 || overlapHours > MAX_OVERLAP_HOURS) {
    throw new ValidationError(`overlap_hours must be a whole number from 0 to ${MAX_OVERLAP_HOURS}.`, { overlap_hours: [`must be a whole number from 0 to ${MAX_OVERLAP_HOURS}`] });
  }
  const box = sealingBox(s);
  const now = s.now();
  const secret = newSigningSecret();
  const sealed = sealEndpointSecret(box, id, secret);
  const row = await s.db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookEndpoints.id, id)))
      .for("no key update");
    if (!current) throw notFound();
    if (current.kind !== "webhook") throw new ConflictError("A Slack endpoint has no signing secret: its URL is its credential (change it with PATCH).", "webhook_endpoint_unsigned");
    const keepPrevious = overlapHours > 0 && current.secretCiphertext !== null;
    const [updated] = await tx
      .update(webhookEndpoints)
      .set({
        secretCiphertext: sealed.ciphertext,
        secretKeyId: sealed.keyId,
        previousSecretCiphertext: keepPrevious ? current.secretCiphertext : null,
        previousSecretKeyId: keepPrevious ? current.secretKeyId : null,
        previousSecretExpiresAt: keepPrevious ? new Date(now.getTime() + overlapHours * 3_600_000) : null,
        updatedAt: now,
        ...leaseCleared,
      })
      .where(eq(webhookEndpoints.id, id))
      .returning();
    return updated!;
  });
  return { ...endpointView(row, now), secret };
}
