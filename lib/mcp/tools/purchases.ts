/**
 * Purchase history, read only: the orders (lib/purchasing/orders.ts, REST /purchases) with what
 * was bought, approved, rejected, expired or failed, and the auto-purchase runs
 * (lib/purchasing/runs.ts, REST /purchase-runs) with what each scheduled slot decided. Money
 * as the REST documents show it: cents, an order's totals summed from its items' shown cents.
 * Plans and orders are priced in USD (the catalog's currency; purchasers refuse other prices);
 * a bought item's actual price carries the currency the provider charged.
 */
import * as z from "zod";
import { MAX_PAGE_SIZE } from "../../http/paging.ts";
import { getPurchase, pagePurchases, PURCHASE_STATUSES, type PurchaseSummaryView } from "../../purchasing/orders.ts";
import { pageRuns, RUN_STATUSES, type RunView } from "../../purchasing/runs.ts";
import { shownItemMoneyOf } from "../../planning/plans.ts";
import { planTotals } from "../../pricing/display.ts";
import { ValidationError } from "../../errors.ts";
import { defineTool, isoDate, moneyText, providerEnum, totalsByCurrency } from "./common.ts";
import { CATALOG_CURRENCY } from "../../catalog/model.ts";
import { templateNamesOf } from "../../templates/service.ts";

/** At most this many rows are read to answer one call (orgs hold one order per template and day at most). */
const MAX_SCAN = 20_000;

const STATUS_MEANING: Record<(typeof PURCHASE_STATUSES)[number], string> = {
  pending_approval: "waiting for an admin's approval: nothing bought yet",
  approved: "approved, being bought at the provider",
  confirmed: "bought (every item confirmed by the provider, or recorded in the ledger)",
  partially_failed: "partly bought: some items confirmed, others failed",
  failed: "not bought: every item failed at the provider",
  rejected: "rejected by an admin: nothing bought",
  expired: "not approved in time or superseded by a newer plan: nothing bought",
  dry_run: "dry run: priced and checked at the provider, nothing bought",
};

const OUTCOME_MEANING: Record<string, string> = {
  purchased: "the plan was ordered",
  disabled: "auto-purchase is disabled: the plan was stored, not bought",
  below_min_monthly_savings: "the plan saved less than the template's min_monthly_savings: not bought",
  nothing_to_buy: "the plan had nothing to buy",
  superseded: "an older slot caught up by a later run: skipped",
  schedule_removed: "the template's schedule was removed before the run",
  purchase_in_progress: "an earlier order of the template was still being bought: skipped",
};

function window(a: { start_date?: string; end_date?: string }) {
  const from = a.start_date ? new Date(`${a.start_date}T00:00:00Z`) : null;
  const to = a.end_date ? new Date(`${a.end_date}T00:00:00Z`) : null;
  for (const [k, d, s] of [["start_date", from, a.start_date], ["end_date", to, a.end_date]] as const) {
    if (d && (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s)) throw new ValidationError(`${k} ${s} is not a calendar date.`, { [k]: ["is not a calendar date"] });
  }
  if (from && to && to <= from) throw new ValidationError("end_date must be after start_date.", { end_date: ["must be after start_date"] });
  return { from, to, start_date: a.start_date ?? null, end_date: a.end_date ?? null };
}

const purchaseOut = z.object({
  id: z.string(),
  provider: z.string(),
  status: z.enum(PURCHASE_STATUSES),
  status_meaning: z.string(),
  purchaser: z.string(),
  dry_run: z.boolean(),
  template_id: z.string().nullable(),
  template_name: z.string().nullable(),
  execution_date: z.string().nullable(),
  plan_id: z.string(),
  item_count: z.number().int(),
  currency: z.string(),
  total_upfront_cost: z.number(),
  monthly_net_savings: z.number(),
  requires_approval: z.boolean(),
  approval_expires_at: z.string().nullable(),
  decided_by: z.string().nullable(),
  decided_at: z.string().nullable(),
  decision_note: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const itemOut = z.object({
  id: z.string(),
  position: z.number().int(),
  status: z.string(),
  commitment_type: z.string(),
  contract_term: z.string(),
  payment_option: z.string(),
  region: z.string().nullable(),
  instance_type: z.string().nullable(),
  instance_family: z.string().nullable(),
  amount: z.number(),
  currency: z.string(),
  planned_upfront_cost: z.number(),
  planned_hourly_cost: z.number(),
  monthly_net_savings: z.number(),
  actual_currency: z.string().nullable(),
  actual_upfront_cost: z.number().nullable(),
  actual_hourly_cost: z.number().nullable(),
  provider_purchase_id: z.string().nullable(),
  commitment_id: z.string().nullable(),
  starts_at: z.string().nullable(),
  ends_at: z.string().nullable(),
  failure_cause: z.string().nullable(),
  failure_message: z.string().nullable(),
  finished_at: z.string().nullable(),
});

function purchaseView(p: PurchaseSummaryView, names: Map<string, string>) {
  return {
    id: p.id,
    provider: p.provider,
    status: p.status,
    status_meaning: STATUS_MEANING[p.status],
    purchaser: p.purchaser,
    dry_run: p.dry_run,
    template_id: p.template_id,
    template_name: p.template_id ? (names.get(p.template_id) ?? null) : null,
    execution_date: p.execution_date,
    plan_id: p.plan_id,
    item_count: p.item_count,
    currency: CATALOG_CURRENCY,
    total_upfront_cost: p.total_upfront_cost,
    monthly_net_savings: p.monthly_net_savings,
    requires_approval: p.requires_approval,
    approval_expires_at: p.approval_expires_at,
    decided_by: p.decided_by,
    decided_at: p.decided_at,
    decision_note: p.decision_note,
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

function itemView(i: Awaited<ReturnType<typeof getPurchase>>["items"][number]) {
  return {
    id: i.id,
    position: i.position,
    status: i.status,
    commitment_type: i.commitment_type,
    contract_term: i.contract_term,
    payment_option: i.payment_option,
    region: i.region,
    instance_type: i.instance_type,
    instance_family: i.instance_family,
    amount: i.amount,
    currency: CATALOG_CURRENCY,
    planned_upfront_cost: i.planned_upfront_cost,
    planned_hourly_cost: i.planned_hourly_cost,
    monthly_net_savings: i.monthly_net_savings,
    actual_currency: i.currency,
    actual_upfront_cost: i.actual_upfront_cost,
    actual_hourly_cost: i.actual_hourly_cost,
    provider_purchase_id: i.provider_purchase_id,
    commitment_id: i.commitment_id,
    starts_at: i.starts_at,
    ends_at: i.ends_at,
    failure_cause: i.failure_cause,
    failure_message: i.failure_message,
    finished_at: i.finished_at,
  };
}

const moneyTotals = z.object({ currency: z.string(), count: z.number().int(), total_upfront_cost: z.number(), monthly_net_savings: z.number() });

/** Totals per currency (and per status) of the shown orders, in cents: count + the two money fields. */
function orderTotals(rows: { currency: string; status?: string; total_upfront_cost: number; monthly_net_savings: number }[]) {
  const sums = totalsByCurrency(rows, ["total_upfront_cost", "monthly_net_savings"] as const);
  return sums.map((t) => ({ currency: t.currency, count: rows.filter((r) => r.currency === t.currency).length, total_upfront_cost: t.total_upfront_cost, monthly_net_savings: t.monthly_net_savings }));
}

export const listPurchasesTool = defineTool({
  name: "list_purchases",
  title: "Commitment purchases",
  description:
    "The organization's commitment purchases (orders placed from plans by auto-purchase), newest first, as REST GET /purchases shows them: status (pending_approval, approved, confirmed = bought, partially_failed, failed, rejected, expired, dry_run) with its meaning, provider, template, plan, who decided and when, total upfront cost and monthly net savings (USD, cents: the sums of the order's items as shown). Filter by status, provider and creation date window; `totals` and `by_status` cover every matching order (also those past the limit). With include_items each order's items are listed: what was bought (commitment type, term, payment, region, instance type, amount), planned and actual prices (actual in the currency the provider charged) and why an item failed. Use get_purchase for one order's full story.",
  scopes: ["purchases:read"],
  input: {
    status: z.enum(PURCHASE_STATUSES).optional().describe("Only orders in this status (confirmed = bought)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    start_date: isoDate.optional().describe("Only orders created on or after this day (YYYY-MM-DD, UTC)."),
    end_date: isoDate.optional().describe("Only orders created before this day (YYYY-MM-DD, UTC, exclusive)."),
    limit: z.number().int().min(1).max(200).default(50).describe("Maximum orders listed (1-200)."),
    include_items: z.boolean().default(false).describe("List each returned order's items (at most 50 orders then)."),
  },
  output: {
    window: z.object({ start_date: z.string().nullable(), end_date: z.string().nullable() }),
    total_count: z.number().int(),
    returned_count: z.number().int(),
    truncated: z.boolean(),
    totals: z.array(moneyTotals),
    by_status: z.array(moneyTotals.extend({ status: z.string() })),
    purchases: z.array(purchaseOut.extend({ items: z.array(itemOut).optional() })),
  },
  async run(ctx, a) {
    const w = window(a);
    if (a.include_items && a.limit > 50) throw new ValidationError("With include_items, limit is at most 50.", { limit: ["is at most 50 with include_items"] });
    // REST's list (newest first, status filter) page by page; provider and dates are filtered here.
    const matching: PurchaseSummaryView[] = [];
    for (let offset = 0; offset < MAX_SCAN; offset += MAX_PAGE_SIZE) {
      const page = await pagePurchases(ctx.s.db, ctx.orgId, { status: a.status }, { offset, limit: MAX_PAGE_SIZE });
      let older = false;
      for (const p of page.items) {
        const at = new Date(p.created_at);
        if (w.from && at < w.from) {
          older = true;
          continue;
        }
        if (w.to && at >= w.to) continue;
        if (a.provider && p.provider !== a.provider) continue;
        matching.push(p);
      }
      if (older || offset + MAX_PAGE_SIZE >= page.total) break;
    }
    const names = await templateNamesOf(ctx.s.db, ctx.orgId, matching.map((p) => p.template_id));
    const all = matching.map((p) => purchaseView(p, names));
    const shown = all.slice(0, a.limit);
    const out = [];
    for (const p of shown) out.push(a.include_items ? { ...p, items: (await getPurchase(ctx.s.db, ctx.orgId, p.id)).items.map(itemView) } : p);
    const totals = orderTotals(all);
    const statuses = [...new Set(all.map((p) => p.status))].sort();
    const by_status = statuses.flatMap((s) => orderTotals(all.filter((p) => p.status === s)).map((t) => ({ status: s, ...t })));
    return {
      structured: { window: { start_date: w.start_date, end_date: w.end_date }, total_count: all.length, returned_count: out.length, truncated: out.length < all.length, totals, by_status, purchases: out },
      summary: all.length
        ? `${all.length} purchase(s)${a.status ? ` ${a.status}` : ""}${w.start_date || w.end_date ? ` created ${w.start_date ? `from ${w.start_date}` : ""}${w.end_date ? ` before ${w.end_date}` : ""}` : ""}: ${by_status.map((b) => `${b.count} ${b.status}`).join(", ")}; upfront ${moneyText(totals, "total_upfront_cost")}, monthly net savings ${moneyText(totals, "monthly_net_savings")}.`
        : "No purchases match.",
    };
  },
});

export const getPurchaseTool = defineTool({
  name: "get_purchase",
  title: "One commitment purchase",
  description:
    "One purchase (order) with its items and its story, as REST GET /purchases/{id}: status and meaning, who approved or rejected it and why, each item's commitment (type, term, payment, region, instance type, amount), planned price (USD, cents) and actual price charged (with the provider's currency), the provider's purchase id, the inventory commitment it added, and why an item failed; then the events in order.",
  scopes: ["purchases:read"],
  input: { purchase_id: z.string().uuid().describe("The purchase's id (from list_purchases or list_purchase_runs).") },
  output: {
    purchase: purchaseOut.extend({ items: z.array(itemOut) }),
    events: z.array(z.object({ at: z.string(), event: z.string(), item_id: z.string().nullable(), message: z.string() })),
  },
  async run(ctx, a) {
    const p = await getPurchase(ctx.s.db, ctx.orgId, a.purchase_id.toLowerCase());
    const names = await templateNamesOf(ctx.s.db, ctx.orgId, [p.template_id]);
    const view = { ...purchaseView(p, names), items: p.items.map(itemView) };
    const failed = view.items.filter((i) => i.status === "failed");
    return {
      structured: { purchase: view, events: p.events.map((e) => ({ at: e.at, event: e.event, item_id: e.item_id, message: e.message })) },
      summary: `${p.provider} purchase ${p.status} (${view.status_meaning}), ${p.item_count} item(s), upfront ${CATALOG_CURRENCY} ${p.total_upfront_cost}, monthly net savings ${CATALOG_CURRENCY} ${p.monthly_net_savings}${failed.length ? `; ${failed.length} failed: ${failed.map((i) => i.failure_message ?? i.failure_cause).join("; ")}` : ""}.`,
    };
  },
});

export const listPurchaseRunsTool = defineTool({
  name: "list_purchase_runs",
  title: "Auto-purchase runs",
  description:
    "The auto-purchase runs (one per template and scheduled date), latest execution date first, as REST GET /purchase-runs: status (pending, done, failed) and outcome with its meaning (purchased, disabled, below_min_monthly_savings, nothing_to_buy, superseded, schedule_removed, purchase_in_progress), the plan it stored with that plan's monthly net savings and upfront (USD, cents, summed from the plan's items as GET /commitment-plans shows them) and the purchase it placed. Filter by template, status, outcome and execution date window. Use it to answer 'did the schedule buy anything, and if not why?'.",
  scopes: ["purchases:read"],
  input: {
    template_id: z.string().uuid().optional().describe("Only the runs of this template."),
    status: z.enum(RUN_STATUSES).optional().describe("pending, done or failed (given up after repeated errors)."),
    outcome: z.enum(Object.keys(OUTCOME_MEANING) as [string, ...string[]]).optional().describe("Only runs with this outcome."),
    start_date: isoDate.optional().describe("Only runs scheduled on or after this day (YYYY-MM-DD)."),
    end_date: isoDate.optional().describe("Only runs scheduled before this day (YYYY-MM-DD, exclusive)."),
    limit: z.number().int().min(1).max(200).default(50).describe("Maximum runs listed (1-200)."),
  },
  output: {
    total_count: z.number().int(),
    returned_count: z.number().int(),
    truncated: z.boolean(),
    runs: z.array(
      z.object({
        id: z.string(),
        template_id: z.string(),
        template_name: z.string().nullable(),
        execution_date: z.string(),
        status: z.enum(RUN_STATUSES),
        outcome: z.string().nullable(),
        outcome_meaning: z.string().nullable(),
        plan_id: z.string().nullable(),
        purchase_id: z.string().nullable(),
        currency: z.string(),
        plan_monthly_net_savings: z.number().nullable(),
        plan_total_upfront_cost: z.number().nullable(),
        attempts: z.number().int(),
        last_attempt_failed: z.boolean(),
        created_at: z.string(),
        completed_at: z.string().nullable(),
      }),
    ),
  },
  async run(ctx, a) {
    const w = window(a);
    const matching: RunView[] = [];
    for (let offset = 0; offset < MAX_SCAN; offset += MAX_PAGE_SIZE) {
      const page = await pageRuns(ctx.s.db, ctx.orgId, { templateId: a.template_id, status: a.status }, { offset, limit: MAX_PAGE_SIZE });
      let older = false;
      for (const r of page.items) {
        if (w.start_date && r.execution_date < w.start_date) {
          older = true;
          continue;
        }
        if (w.end_date && r.execution_date >= w.end_date) continue;
        if (a.outcome && r.outcome !== a.outcome) continue;
        matching.push(r);
      }
      if (older || offset + MAX_PAGE_SIZE >= page.total) break;
    }
    const shown = matching.slice(0, a.limit);
    const names = await templateNamesOf(ctx.s.db, ctx.orgId, shown.map((r) => r.template_id));
    const money = await shownItemMoneyOf(ctx.s.db, ctx.orgId, shown.flatMap((r) => (r.plan_id ? [r.plan_id] : [])));
    const runs = shown.map((r) => {
      const plan = r.plan_id ? planTotals(money.get(r.plan_id) ?? []) : null;
      return {
        id: r.id,
        template_id: r.template_id,
        template_name: names.get(r.template_id) ?? null,
        execution_date: r.execution_date,
        status: r.status,
        outcome: r.outcome,
        outcome_meaning: r.outcome ? (OUTCOME_MEANING[r.outcome] ?? null) : null,
        plan_id: r.plan_id,
        purchase_id: r.purchase_id,
        currency: CATALOG_CURRENCY,
        plan_monthly_net_savings: plan ? plan.monthly_net_savings : null,
        plan_total_upfront_cost: plan ? plan.total_upfront_cost : null,
        attempts: r.attempts,
        last_attempt_failed: r.last_attempt_failed,
        created_at: r.created_at,
        completed_at: r.completed_at,
      };
    });
    const outcomes = new Map<string, number>();
    for (const r of matching) outcomes.set(r.outcome ?? r.status, (outcomes.get(r.outcome ?? r.status) ?? 0) + 1);
    return {
      structured: { total_count: matching.length, returned_count: runs.length, truncated: runs.length < matching.length, runs },
      summary: matching.length ? `${matching.length} run(s): ${[...outcomes].map(([k, n]) => `${n} ${k}`).join(", ")}.` : "No auto-purchase runs match.",
    };
  },
});

export const purchaseTools = [listPurchasesTool, getPurchaseTool, listPurchaseRunsTool];
