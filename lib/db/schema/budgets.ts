import { sql } from "drizzle-orm";
import { date, index, integer, jsonb, numeric, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";
import { events } from "./events.ts";

/**
 * A monthly spend budget of an organization (lib/budgets): an amount in one billing currency for
 * the whole org or the cost matching `filter`, with thresholds on the month's actual and forecast
 * spend. `filter` and `thresholds` hold the API's own shapes (lib/budgets/model.ts).
 */
export const budgets = pgTable(
  "budgets",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    amount: numeric("amount", { precision: 17, scale: 2 }).notNull(),
    /** ISO 4217 (FOCUS BillingCurrency): only cost billed in this currency counts. */
    currency: text("currency").notNull(),
    /** `{provider?, billing_account_id?, account_id?, service?, tag?: {key, value}}`; `{}` = the whole org. */
    filter: jsonb("filter").notNull().default(sql`'{}'::jsonb`),
    /** `[{percent, basis}]`, sorted by basis then percent. */
    thresholds: jsonb("thresholds").notNull(),
    /** Bumped by every change: an evaluation computed on an older definition is not recorded. */
    version: integer("version").notNull().default(1),
    /**
     * The daily evaluation: due from this time. The job claims a budget by moving it a lease ahead,
     * and to the next UTC day once evaluated (a replica that died mid-way leaves it due again).
     */
    nextEvaluationAt: timestamp("next_evaluation_at", { withTimezone: true }).notNull().defaultNow(),
    lastEvaluatedAt: timestamp("last_evaluated_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("budgets_org_name_uq").on(t.orgId, sql`lower(${t.name})`),
    index("budgets_org_created_idx").on(t.orgId, t.createdAt, t.id),
    index("budgets_due_idx").on(t.nextEvaluationAt),
  ],
);

/**
 * A budget's figures for one month, as of its latest evaluation (the status and the history):
 * month-to-date actual and month-end forecast in the budget's currency, against the amount the
 * budget had then.
 */
export const budgetMonths = pgTable(
  "budget_months",
  {
    budgetId: uuid("budget_id").notNull().references(() => budgets.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    /** First day of the month (UTC). */
    month: date("month", { mode: "string" }).notNull(),
    amount: numeric("amount", { precision: 17, scale: 2 }).notNull(),
    currency: text("currency").notNull(),
    actual: numeric("actual", { precision: 20, scale: 2 }).notNull(),
    /** Null: no complete day of history to forecast from. */
    forecast: numeric("forecast", { precision: 20, scale: 2 }),
    /** The last complete day of billing data the forecast was made on. */
    lastCompleteDate: date("last_complete_date", { mode: "string" }),
    computedAt: timestamp("computed_at", { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.budgetId, t.month] }), index("budget_months_org_idx").on(t.orgId, t.month)],
);

/**
 * A threshold a budget crossed in a month: recorded once (the key), in the transaction that
 * writes its `budget.threshold_crossed` event, so each threshold fires once per month.
 */
export const budgetThresholdCrossings = pgTable(
  "budget_threshold_crossings",
  {
    budgetId: uuid("budget_id").notNull().references(() => budgets.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    month: date("month", { mode: "string" }).notNull(),
    basis: text("basis", { enum: ["actual", "forecast"] }).notNull(),
    percent: integer("percent").notNull(),
    /** The actual or forecast spend that crossed it. */
    value: numeric("value", { precision: 20, scale: 2 }).notNull(),
    crossedAt: timestamp("crossed_at", { withTimezone: true }).notNull(),
    /** The event written (null when its dedupe key had already been used). */
    eventId: uuid("event_id").references(() => events.id, { onDelete: "set null" }),
  },
  (t) => [primaryKey({ columns: [t.budgetId, t.month, t.basis, t.percent] })],
);
