/**
 * The assistant's prompts: the reviews a FinOps analyst runs every month, written as the
 * instructions a model needs to answer them with this server's tools. Each names the tools by
 * their registered names (tests/mcp/prompts.test.ts keeps them in step with the registry).
 */
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

export interface PromptArgument {
  name: string;
  description: string;
  required: boolean;
}

export interface PromptDef {
  name: string;
  title: string;
  description: string;
  arguments: PromptArgument[];
  /** Tools the prompt's text tells the model to call. */
  tools: string[];
  text(args: { month: string; previousMonth: string; provider: string | null }): string;
}

const monthArg: PromptArgument = { name: "month", description: "Month to review, YYYY-MM (default: the last complete month).", required: false };
const providerArg: PromptArgument = { name: "provider", description: "aws, azure or gcp (default: all providers).", required: false };

const scopeOf = (provider: string | null) => (provider ? ` Pass provider="${provider}" wherever a tool takes it.` : "");

export const PROMPTS: PromptDef[] = [
  {
    name: "monthly_commitment_review",
    title: "Monthly commitment review",
    description: "Review a month's commitments: utilization and waste, coverage gaps, unused cost by account, what expires soon and what to buy next.",
    arguments: [monthArg, providerArg],
    tools: ["get_coverage_and_utilization", "get_allocation_report", "list_expiring_commitments", "get_recommendations", "get_billing_data_freshness"],
    text: ({ month, provider }) =>
      `Run the monthly commitment review for ${month}.${scopeOf(provider)}
1. Call get_billing_data_freshness and say whether ${month}'s billing data is complete (closed) or still changing.
2. Call get_coverage_and_utilization with start_month="${month}", end_month="${month}" and group_by="account", then group_by="service". Report coverage and utilization per currency, the accounts with the most unused commitment cost, and the services running on demand with no commitment.
3. Call get_allocation_report for commitment_cost_by_account (year and month of ${month}) and name the accounts whose commitment cost is mostly unused allocation.
4. Call list_expiring_commitments with within_days=60: what lapses, when, and its hourly commitment.
5. Call get_recommendations for each provider concerned and summarise the Recommended, Balanced and High Savings plans (upfront, monthly net savings); when a plan buys nothing, give its reason.
Keep every amount in its currency (never add currencies), quote figures to the cent as the tools return them, and end with three concrete actions.`,
  },
  {
    name: "explain_monthly_bill",
    title: "Explain this month's bill",
    description: "Explain a month's cloud bill: the total per currency, what drove the change from the month before, unusual days, and where the month is heading.",
    arguments: [monthArg, providerArg],
    tools: ["get_spend", "compare_periods", "query_costs", "detect_spend_anomalies", "forecast_spend"],
    text: ({ month, previousMonth, provider }) =>
      `Explain the cloud bill of ${month}.${scopeOf(provider)}
1. Call get_spend with group_by="month" over ${previousMonth} and ${month}: the billed (invoice) and effective (amortized) totals per currency, and the on-demand / commitment / other split.
2. Call compare_periods for ${month} against ${previousMonth}: name the accounts, services, resources and commitment changes that explain the difference, with the share of the change each explains.
3. Call query_costs grouped by service (and by tag:team or tag:env when the organization tags its resources) for ${month} to show where the money went.
4. Call detect_spend_anomalies over ${month} and explain any unusual day (expected vs actual).
5. If ${month} is the current month, call forecast_spend and give the projected month-end total with its interval.
Keep every amount in its currency (never add currencies) and quote figures to the cent as the tools return them.`,
  },
];

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

function monthBefore(month: string): string {
  const [y, m] = month.split("-").map(Number) as [number, number];
  const d = new Date(Date.UTC(y, m - 2, 1));
  return d.toISOString().slice(0, 7);
}

/** One of `available` (the prompts this caller may use), filled in with its arguments. */
export function getPrompt(available: readonly PromptDef[], name: string, args: Record<string, string>, now: Date) {
  const p = available.find((x) => x.name === name);
  if (!p) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name.slice(0, 100)}. Prompts: ${available.map((x) => x.name).join(", ") || "none for this connection's scopes"}.`);
  const unknown = Object.keys(args).filter((k) => !p.arguments.some((a) => a.name === k));
  if (unknown.length) throw new McpError(ErrorCode.InvalidParams, `Unknown argument(s) for ${name}: ${unknown.join(", ").slice(0, 200)}.`);
  const lastComplete = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
  const month = args.month?.trim() || lastComplete;
  if (!MONTH.test(month)) throw new McpError(ErrorCode.InvalidParams, "month must be YYYY-MM.");
  const provider = args.provider?.trim() || null;
  if (provider !== null && !["aws", "azure", "gcp"].includes(provider)) throw new McpError(ErrorCode.InvalidParams, "provider must be aws, azure or gcp.");
  return {
    description: p.description,
    messages: [{ role: "user" as const, content: { type: "text" as const, text: p.text({ month, previousMonth: monthBefore(month), provider }) } }],
  };
}
