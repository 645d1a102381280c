import { sql } from "drizzle-orm";
import { bigint, boolean, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";
import { billingImports } from "./billing.ts";

/** A provider export the org's billing data is pulled from (DESIGN §13). */
export const billingConnections = pgTable(
  "billing_connections",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["aws_data_exports", "azure_cost_exports", "gcp_bigquery_focus"] }).notNull(),
    /** The kind's non-secret fields, shown back to the user. */
    config: jsonb("config").notNull(),
    /** The kind's secret fields as one AES-256-GCM ciphertext (lib/secrets), null when there are none. */
    secretCiphertext: text("secret_ciphertext"),
    secretKeyId: text("secret_key_id"),
    /** Names of the secret fields set (not secret themselves: shown so users see what is configured). */
    secretFields: text("secret_fields").array().notNull().default(sql`'{}'::text[]`),
    enabled: boolean("enabled").notNull().default(true),
    /** ok | error (after repeated failures) | pending (never synced). */
    status: text("status", { enum: ["pending", "ok", "error"] }).notNull().default("pending"),
    lastError: text("last_error"),
    lastErrorCause: text("last_error_cause"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    lastSyncedAt: timestamp("last_synced_at", { withTimezone: true }),
    nextSyncAt: timestamp("next_sync_at", { withTimezone: true }).notNull().defaultNow(),
    /** The replica running its sync now, until when (a crashed replica's claim lapses). */
    claimedBy: text("claimed_by"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("billing_connections_org_name_uq").on(t.orgId, sql`lower(${t.name})`),
    index("billing_connections_due_idx").on(t.nextSyncAt),
  ],
);

/** One sync of a connection: what it saw and imported, or why it failed. */
export const billingConnectionRuns = pgTable(
  "billing_connection_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    connectionId: uuid("connection_id").notNull().references(() => billingConnections.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    trigger: text("trigger", { enum: ["manual", "schedule"] }).notNull(),
    status: text("status", { enum: ["queued", "running", "succeeded", "failed"] }).notNull().default("queued"),
    periodsSeen: integer("periods_seen").notNull().default(0),
    periodsImported: integer("periods_imported").notNull().default(0),
    periodsUnchanged: integer("periods_unchanged").notNull().default(0),
    rowsImported: bigint("rows_imported", { mode: "number" }).notNull().default(0),
    bytesRead: bigint("bytes_read", { mode: "number" }).notNull().default(0),
    errorCause: text("error_cause"),
    error: text("error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp("started_at", { withTimezone: true }),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (t) => [
    index("billing_connection_runs_connection_idx").on(t.connectionId, t.createdAt),
    // At most one waiting run per connection: a repeated "sync now" joins the one already queued.
    uniqueIndex("billing_connection_runs_one_queued_uq").on(t.connectionId).where(sql`status = 'queued'`),
  ],
);

/** The version of each period last imported from a connection (written in the import's transaction). */
export const billingConnectionPeriods = pgTable(
  "billing_connection_periods",
  {
    connectionId: uuid("connection_id").notNull().references(() => billingConnections.id, { onDelete: "cascade" }),
    /** First day of the month. */
    month: date("month").notNull(),
    fingerprint: text("fingerprint").notNull(),
    importId: uuid("import_id").references(() => billingImports.id, { onDelete: "set null" }),
    rows: bigint("rows", { mode: "number" }).notNull().default(0),
    importedAt: timestamp("imported_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.month] })],
);
