import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

/**
 * The organization's event log (GET /events), append-only, written in the transaction of the
 * change it tells of (lib/events/emit.ts). `dedupe_key` makes "once" events (a commitment's
 * 30-day notice, a budget threshold in one month) idempotent across replicas and retries.
 */
export const events = pgTable(
  "events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** Ordering within the log (and per endpoint, with occurred_at). */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    /** Version of the `data` document of this type (lib/events/catalog.ts). */
    dataVersion: integer("data_version").notNull().default(1),
    occurredAt: timestamp("occurred_at", { withTimezone: true }).notNull(),
    data: jsonb("data").notNull(),
    /** The API path of the resource the event is about (relative to the public URL), if any. */
    resourcePath: text("resource_path"),
    /** The console page of that resource (relative to the public URL), if any. */
    consolePath: text("console_path"),
    dedupeKey: text("dedupe_key"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("events_org_dedupe_uq").on(t.orgId, t.dedupeKey).where(sql`dedupe_key IS NOT NULL`),
    index("events_org_time_idx").on(t.orgId, t.occurredAt, t.seq),
    index("events_org_type_time_idx").on(t.orgId, t.type, t.occurredAt),
  ],
);

/**
 * Where an organization's events go: a Standard Webhooks receiver (`kind` webhook) or a Slack
 * incoming webhook (`kind` slack). `org_id` null: a process-wide compatibility endpoint from
 * PURCHASE_WEBHOOK_URL / SUPPORT_WEBHOOK_URL (deprecated; `legacy_key` names which).
 * The signing secret is sealed (lib/secrets); the previous one signs too until its expiry.
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").references(() => organizations.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["webhook", "slack"] }).notNull().default("webhook"),
    url: text("url").notNull(),
    eventTypes: text("event_types").array().notNull(),
    description: text("description"),
    enabled: boolean("enabled").notNull().default(true),
    disabledReason: text("disabled_reason"),
    disabledAt: timestamp("disabled_at", { withTimezone: true }),
    legacyKey: text("legacy_key"),
    secretCiphertext: text("secret_ciphertext"),
    secretKeyId: text("secret_key_id"),
    previousSecretCiphertext: text("previous_secret_ciphertext"),
    previousSecretKeyId: text("previous_secret_key_id"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at", { withTimezone: true }),
    /** Delivery scheduling is per endpoint (one request in flight, in event order). */
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    failingSince: timestamp("failing_since", { withTimezone: true }),
    leaseToken: uuid("lease_token"),
    leaseUntil: timestamp("lease_until", { withTimezone: true }),
    createdBy: uuid("created_by"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("webhook_endpoints_org_idx").on(t.orgId, t.createdAt),
    uniqueIndex("webhook_endpoints_legacy_uq").on(t.legacyKey).where(sql`legacy_key IS NOT NULL`),
  ],
);

/** One event to one endpoint: recorded once (unique), delivered at least once with the event's id as `webhook-id`. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").references(() => organizations.id, { onDelete: "cascade" }),
    endpointId: uuid("endpoint_id").notNull().references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: uuid("event_id").notNull().references(() => events.id, { onDelete: "cascade" }),
    eventSeq: bigint("event_seq", { mode: "number" }).notNull(),
    eventOccurredAt: timestamp("event_occurred_at", { withTimezone: true }).notNull(),
    /** pending → succeeded | failed (given up: its endpoint was disabled after persistent failure or a 410). */
    status: text("status", { enum: ["pending", "succeeded", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    lastStatusCode: integer("last_status_code"),
    lastLatencyMs: integer("last_latency_ms"),
    lastResponseExcerpt: text("last_response_excerpt"),
    lastError: text("last_error"),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
    /** Set by a manual redelivery (POST …/redeliver) until its attempt is recorded (that attempt is `manual`). */
    redeliverRequestedAt: timestamp("redeliver_requested_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_endpoint_event_uq").on(t.endpointId, t.eventId),
    index("webhook_deliveries_pending_idx").on(t.endpointId, t.eventOccurredAt, t.eventSeq).where(sql`status = 'pending'`),
    index("webhook_deliveries_endpoint_time_idx").on(t.endpointId, t.createdAt),
  ],
);

/** Every attempt of a delivery: the endpoint's delivery log (status, latency, response excerpt). */
export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    deliveryId: uuid("delivery_id").notNull().references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    endpointId: uuid("endpoint_id").notNull().references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    at: timestamp("at", { withTimezone: true }).notNull(),
    statusCode: integer("status_code"),
    latencyMs: integer("latency_ms").notNull(),
    responseExcerpt: text("response_excerpt"),
    error: text("error"),
    /** A manual redelivery (POST …/redeliver) rather than the schedule. */
    manual: boolean("manual").notNull().default(false),
  },
  (t) => [index("webhook_attempts_endpoint_at_idx").on(t.endpointId, t.at), index("webhook_attempts_delivery_idx").on(t.deliveryId, t.attempt)],
);
