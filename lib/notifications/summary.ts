/**
 * What a person is told of an event, in plain words: a title, a headline with the figure that
 * matters, the details, and what the console link does. Slack (slack.ts) and email (render.ts)
 * render this same summary, each escaping it for its own format. Read defensively: a data
 * document of another version, or a field missing, drops that line rather than the message.
 */
import type { EventView } from "../events/view.ts";

export interface SummaryField {
  label: string;
  value: string;
}

export interface EventSummary {
  /** "Purchase waiting for approval" */
  title: string;
  /** One line with the event's headline figure (the email subject, Slack's first line). */
  headline: string;
  /** Longer words from the data (a message, an error), if any. */
  detail: string | null;
  fields: SummaryField[];
  /** Label of the link to the console page. */
  action: string;
  /** Someone has to act (an approval): shown as the primary button. */
  urgent: boolean;
}

type Data = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Data => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Data) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** An amount in its currency ("$1,234.50", "€12.00"); a code Intl does not know is written after the figure. */
export function money(amount: unknown, currency: unknown): string | null {
  const a = num(amount);
  if (a === null) return null;
  const c = str(currency);
  if (c && /^[A-Za-z]{3}$/.test(c)) {
    try {
      return new Intl.NumberFormat("en-US", { style: "currency", currency: c.toUpperCase() }).format(a);
    } catch {
      // An unknown code: the plain figure below.
    }
  }
  const figure = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(a);
  return c ? `${figure} ${c}` : figure;
}

function percent(v: unknown): string | null {
  const p = num(v);
  return p === null ? null : `${new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 }).format(p)}%`;
}

function count(v: unknown): string | null {
  const n = num(v);
  return n === null ? null : new Intl.NumberFormat("en-US").format(n);
}

/** An ISO instant as "2025-03-01 14:05 UTC"; a date or anything else as it is. */
function when(v: unknown): string | null {
  const s = str(v);
  if (!s) return null;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(s);
  return m ? `${m[1]} ${m[2]} UTC` : s;
}

const plural = (n: number | null, one: string, many = `${one}s`) => (n === 1 ? one : many);

function fields(...pairs: [string, string | null | undefined][]): SummaryField[] {
  return pairs.filter((p): p is [string, string] => typeof p[1] === "string" && p[1] !== "").map(([label, value]) => ({ label, value }));
}

const PURCHASE_TITLES: Record<string, string> = {
  "purchase.pending_approval": "Purchase waiting for approval",
  "purchase.approved": "Purchase approved",
  "purchase.rejected": "Purchase rejected",
  "purchase.confirmed": "Purchase confirmed",
  "purchase.failed": "Purchase failed",
  "purchase.dry_run": "Dry-run purchase checked",
};

function purchase(type: string, d: Data): EventSummary {
  const status = str(d.status);
  let title = PURCHASE_TITLES[type] ?? "Purchase update";
  if (type === "purchase.rejected" && status === "expired") title = "Purchase approval lapsed";
  if (type === "purchase.failed" && status === "partially_failed") title = "Purchase partially failed";
  const upfront = money(d.total_upfront_cost, d.currency);
  const savings = money(d.monthly_net_savings, d.currency);
  const items = num(d.item_count);
  const figures = [upfront && `${upfront} upfront`, savings && `${savings}/month net savings`, items !== null && `${items} ${plural(items, "item")}`].filter(Boolean);
  const provider = str(d.provider)?.toUpperCase();
  const headline = figures.length ? `${provider ? `${provider}: ` : ""}${figures.join(", ")}` : (str(d.message) ?? title);
  const pending = type === "purchase.pending_approval";
  return {
    title,
    headline,
    detail: str(d.message),
    fields: fields(
      ["Upfront", upfront],
      ["Monthly net savings", savings],
      ["Items", count(d.item_count)],
      ["Provider", [provider, str(d.purchaser)].filter(Boolean).join(" · ") || null],
      ["Execution date", str(d.execution_date)],
      ["Approval expires", pending ? when(d.approval_expires_at) : null],
      ["Decided by", str(d.decided_by)],
      ["Decided at", when(d.decided_at)],
      ["Dry run", d.dry_run === true ? "yes: checked at the provider, nothing bought" : null],
    ),
    action: pending ? "Review and approve" : "Open the purchase",
    urgent: pending,
  };
}

function connectionName(d: Data): string {
  const c = obj(d.connection);
  return str(c.name) ?? "A billing connection";
}

function connectionField(d: Data): [string, string | null] {
  const c = obj(d.connection);
  const kind = [str(c.provider)?.toUpperCase(), str(c.kind)].filter(Boolean).join(" · ");
  return ["Connection", str(c.name) ? `${str(c.name)}${kind ? ` (${kind})` : ""}` : kind || null];
}

function billingSync(type: string, d: Data): EventSummary {
  const name = connectionName(d);
  if (type === "billing_sync.failed") {
    const error = obj(d.error);
    const failures = num(d.consecutive_failures);
    const cause = str(error.cause);
    return {
      title: "Billing sync failed",
      headline: `${name}: ${cause ?? "failed"}${failures !== null && failures > 1 ? ` (${failures} failures in a row)` : ""}`,
      detail: str(error.message),
      fields: fields(
        connectionField(d),
        ["Cause", cause],
        ["Failures in a row", count(d.consecutive_failures)],
        ["Connection status", str(d.connection_status)],
        ["Next attempt", when(d.next_attempt_at)],
        ["Periods imported before the failure", count(d.periods_imported)],
      ),
      action: "Open the connection",
      urgent: false,
    };
  }
  if (type === "billing_sync.stale") {
    const days = num(d.days_without_new_data);
    return {
      title: "No new billing data",
      headline: days === null ? `${name}: no new data` : `${name}: no new data for ${days} ${plural(days, "day")}`,
      detail: null,
      fields: fields(
        connectionField(d),
        ["Days without new data", count(d.days_without_new_data)],
        ["Newest month", str(d.newest_month)],
        ["Last new data", when(d.last_new_data_at) ?? (d.last_new_data_at === null ? "never" : null)],
        ["Last successful sync", when(d.last_synced_at)],
        ["Connection status", str(d.connection_status)],
        ["Last failure", str(d.last_error_cause)],
      ),
      action: "Open the connection",
      urgent: false,
    };
  }
  const rows = num(d.rows_imported);
  const months = list(d.months_imported).map(str).filter((m): m is string => !!m);
  const recovered = d.recovered === true;
  const imported = rows !== null ? `${count(rows)} ${plural(rows, "row")} imported${months.length ? ` (${months.join(", ")})` : ""}` : null;
  return {
    title: recovered ? "Billing sync recovered" : "Billing data imported",
    headline: `${name}: ${imported ?? (recovered ? "syncing again" : "sync succeeded")}`,
    detail: recovered ? "The connection syncs again after failed runs." : null,
    fields: fields(
      connectionField(d),
      ["Rows imported", count(d.rows_imported)],
      ["Months imported", months.length ? months.join(", ") : null],
      ["Periods imported", count(d.periods_imported)],
      ["Periods unchanged", count(d.periods_unchanged)],
      ["Finished", when(d.finished_at)],
    ),
    action: "Open the connection",
    urgent: false,
  };
}

function periodFinalized(d: Data): EventSummary {
  const provider = str(d.provider)?.toUpperCase();
  const period = str(d.period);
  const reports = list(d.reports).map(str).filter(Boolean) as string[];
  return {
    title: "Billing period finalized",
    headline: `${[provider, period].filter(Boolean).join(" ") || "A billing period"}: invoice closed, reports frozen`,
    detail: null,
    fields: fields(["Provider", provider], ["Period", period], ["Invoice closed", when(d.closed_at)], ["Finalized", when(d.finalized_at)], ["Reports", reports.length ? reports.join(", ") : null]),
    action: "Open the reports",
    urgent: false,
  };
}

function commitmentExpiring(d: Data): EventSummary {
  const c = obj(d.commitment);
  const name = str(c.name) ?? str(c.provider_commitment_id) ?? "A commitment";
  const days = num(d.days_left);
  const monthly = money(d.monthly_commitment, d.currency);
  return {
    title: "Commitment expiring",
    headline: `${name} ends in ${days ?? "?"} ${plural(days, "day")}${monthly ? ` (${monthly}/month)` : ""}`,
    detail: null,
    fields: fields(
      ["Commitment", str(c.provider_commitment_id)],
      ["Type", [str(c.commitment_type), str(c.contract_term), str(c.payment_option)].filter(Boolean).join(" · ") || null],
      ["Provider", [str(c.provider)?.toUpperCase(), str(c.region)].filter(Boolean).join(" · ") || null],
      ["Instance type", str(c.instance_type)],
      ["Ends", when(c.ends_at)],
      ["Days left", count(d.days_left)],
      ["Monthly commitment", monthly],
      ["Hourly commitment", money(d.hourly_commitment, d.currency)],
      ["Account", str(c.holding_account_id)],
    ),
    action: "Open expiring commitments",
    urgent: false,
  };
}

function anomaly(d: Data): EventSummary {
  const dimension = str(d.dimension) === "service" ? "Service" : "Account";
  const series = str(d.name) ?? str(d.key) ?? `(no ${dimension.toLowerCase()})`;
  const actual = money(d.actual, d.currency);
  const expected = money(d.expected, d.currency);
  const impact = num(d.impact);
  const spike = str(d.direction) !== "drop";
  const impactText = impact === null ? null : `${impact >= 0 ? "+" : "−"}${money(Math.abs(impact), d.currency)}`;
  return {
    title: spike ? "Spend spike detected" : "Spend drop detected",
    headline: `${series}: ${actual ?? "?"} on ${str(d.date) ?? "?"}, expected ${expected ?? "?"}${impactText ? ` (${impactText})` : ""}`,
    detail: null,
    fields: fields(
      [dimension, str(d.name) && str(d.key) ? `${str(d.name)} (${str(d.key)})` : series],
      ["Provider", str(d.provider)?.toUpperCase()],
      ["Day", [str(d.date), str(d.weekday)].filter(Boolean).join(", ") || null],
      ["Actual", actual],
      ["Expected", expected],
      ["Difference", impactText],
      ["Score", num(d.score) === null ? null : new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 }).format(num(d.score)!)],
    ),
    action: "Open in the cost explorer",
    urgent: false,
  };
}

function budget(d: Data): EventSummary {
  const forecastBasis = str(d.basis) === "forecast";
  const used = forecastBasis ? percent(d.forecast_percent_used) : percent(d.percent_used);
  const amount = money(d.amount, d.currency);
  const name = str(d.budget_name) ?? "A budget";
  const threshold = percent(d.threshold_percent);
  return {
    title: forecastBasis ? "Budget forecast over threshold" : "Budget threshold crossed",
    headline: `${name}: ${forecastBasis ? "forecast at" : "spent"} ${used ?? "?"} of ${amount ?? "its amount"}${str(d.month) ? ` in ${str(d.month)}` : ""}`,
    detail: threshold ? `The ${forecastBasis ? "month-end forecast" : "month-to-date actual"} crossed the ${threshold} threshold.` : null,
    fields: fields(
      ["Budget", name],
      ["Month", str(d.month)],
      ["Threshold", threshold ? `${threshold} of the amount (${forecastBasis ? "forecast" : "actual"})${money(d.threshold_amount, d.currency) ? `: ${money(d.threshold_amount, d.currency)}` : ""}` : null],
      ["Amount", amount],
      ["Actual", money(d.actual, d.currency) ? `${money(d.actual, d.currency)}${percent(d.percent_used) ? ` (${percent(d.percent_used)})` : ""}` : null],
      ["Forecast", money(d.forecast, d.currency) ? `${money(d.forecast, d.currency)}${percent(d.forecast_percent_used) ? ` (${percent(d.forecast_percent_used)})` : ""}` : null],
    ),
    action: "Open the budget",
    urgent: false,
  };
}

function catalogRefresh(d: Data): EventSummary {
  const failed = num(d.feeds_failed);
  const refreshed = num(d.feeds_refreshed);
  const failures = list(d.failures)
    .map(obj)
    .slice(0, 5)
    .map((f) => `${[str(f.provider)?.toUpperCase(), str(f.feed)].filter(Boolean).join(" ")}: ${str(f.error) ?? "failed"}`);
  return {
    title: str(d.status) === "partial" ? "Price catalog refresh partly failed" : "Price catalog refresh failed",
    headline: `${failed ?? "Some"} ${plural(failed, "price feed")} failed${refreshed !== null ? `, ${refreshed} refreshed` : ""}${str(d.day) ? ` on ${str(d.day)}` : ""}`,
    detail: failures.length ? failures.join("\n") : null,
    fields: fields(["Day", str(d.day)], ["Feeds failed", count(d.feeds_failed)], ["Feeds refreshed", count(d.feeds_refreshed)], ["Prices", d.prices_kept === true ? "the failed feeds keep their previous prices" : null]),
    action: "Open estimates",
    urgent: false,
  };
}

function supportTicket(d: Data): EventSummary {
  const key = str(d.ticket_key);
  const summary = str(d.summary);
  return {
    title: str(d.kind) === "feature" ? "Feature request filed" : "Support ticket filed",
    headline: [key, summary].filter(Boolean).join(": ") || "A support ticket was filed",
    detail: null,
    fields: fields(["Ticket", key], ["Kind", str(d.kind)], ["Provider", str(d.provider)?.toUpperCase()], ["Filed with", str(obj(d.filed_by).credential_kind)]),
    action: "Open support",
    urgent: false,
  };
}

function endpointDisabled(d: Data): EventSummary {
  const endpoint = str(d.description) ?? str(d.url) ?? "A webhook endpoint";
  const status = num(d.last_status_code);
  return {
    title: "Webhook endpoint disabled",
    headline: `${endpoint}: ${str(d.reason) === "gone" ? "the receiver answered 410 Gone" : "every delivery failed for 3 days"}`,
    detail: str(d.disabled_reason),
    fields: fields(
      ["Endpoint", str(d.url)],
      ["Kind", str(d.kind)],
      ["Failing since", when(d.failing_since)],
      ["Failures in a row", count(d.consecutive_failures)],
      ["Last answer", status === null ? (d.last_status_code === null ? "none (no answer)" : null) : `HTTP ${status}`],
      ["Last error", str(d.last_error)],
      ["Deliveries given up", count(d.failed_deliveries)],
    ),
    action: "Open webhook settings",
    urgent: false,
  };
}

/** The summary of any event; an unknown type still gets its type and message. */
export function summarizeEvent(view: Pick<EventView, "type" | "data">): EventSummary {
  const d = obj(view.data);
  const type = view.type;
  if (type.startsWith("purchase.")) return purchase(type, d);
  if (type.startsWith("billing_sync.")) return billingSync(type, d);
  switch (type) {
    case "period.finalized":
      return periodFinalized(d);
    case "commitment.expiring":
      return commitmentExpiring(d);
    case "anomaly.detected":
      return anomaly(d);
    case "budget.threshold_crossed":
      return budget(d);
    case "catalog.refresh_failed":
      return catalogRefresh(d);
    case "support.ticket_created":
      return supportTicket(d);
    case "webhook_endpoint.disabled":
      return endpointDisabled(d);
  }
  return { title: `commitops: ${type}`, headline: str(d.message) ?? type, detail: null, fields: [], action: "Open commitops", urgent: false };
}

/** One line, at most `max` code points (subjects, Slack header and fallback text). */
export function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, " ").trim();
  const points = [...flat];
  return points.length <= max ? flat : `${points.slice(0, max - 1).join("")}…`;
}
