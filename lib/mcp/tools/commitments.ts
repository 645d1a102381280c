/** Commitment management: the inventory (reserved instances, savings plans, CUDs, insured commitments). */
import * as z from "zod";
import { commitmentPerformance, commitmentShown, findCommitment, findCommitments, lapsingRecurringHourlyCost } from "../../billing/commitmentViews.ts";
import { defineTool, providerEnum } from "./common.ts";

const commitmentOut = z.looseObject({
  id: z.string(),
  provider: z.string(),
  provider_commitment_id: z.string(),
  name: z.string().nullable(),
  commitment_type: z.string(),
  contract_term: z.string().nullable(),
  payment_option: z.string().nullable(),
  region: z.string().nullable(),
  instance_type: z.string().nullable(),
  starts_at: z.string().nullable(),
  ends_at: z.string().nullable(),
  days_until_expiry: z.number().nullable(),
  amount: z.number().nullable(),
  upfront_cost: z.number().nullable(),
  recurring_hourly_cost: z.number().nullable(),
  holding_account_id: z.string().nullable(),
  insured: z.boolean(),
  status: z.enum(["active", "expired", "not_started"]),
});

export const listCommitmentsTool = defineTool({
  name: "list_commitments",
  title: "List commitments",
  description:
    "Lists the organization's commitment inventory (reserved instances, savings plans, Azure reservations, GCP committed use discounts and insured `_gris` commitments) with term, payment option, amount, cost and expiry. Filter by provider, status, commitment type, insured flag, holding account or expiry horizon.",
  scopes: [],
  input: {
    provider: providerEnum.optional().describe("Only this cloud provider."),
    status: z.enum(["active", "expired", "all"]).default("active").describe("active (running now, the default), expired, or all."),
    commitment_type: z.string().max(64).optional().describe("e.g. reserved_instance, compute_savings_plan, reservation, savings_plan, resource_cud, spend_cud."),
    insured: z.boolean().optional().describe("true: only insured commitments; false: only native ones."),
    holding_account_id: z.string().max(128).optional().describe("Only commitments held by this account."),
    expiring_within_days: z.number().int().min(0).max(3650).optional().describe("Only commitments ending within this many days."),
    limit: z.number().int().min(1).max(500).default(100).describe("Maximum number of commitments returned (1-500)."),
  },
  output: {
    as_of: z.string(),
    total_count: z.number().int(),
    returned_count: z.number().int(),
    truncated: z.boolean(),
    commitments: z.array(commitmentOut),
  },
  async run(ctx, a) {
    const rows = await findCommitments(ctx.s.db, ctx.orgId, ctx.now, {
      provider: a.provider,
      status: a.status,
      insured: a.insured,
      commitmentType: a.commitment_type,
      holdingAccountId: a.holding_account_id,
      expiringWithinDays: a.expiring_within_days,
    });
    const out = rows.slice(0, a.limit).map((c) => commitmentShown(c, ctx.now));
    return {
      structured: { as_of: ctx.now.toISOString(), total_count: rows.length, returned_count: out.length, truncated: rows.length > out.length, commitments: out },
      summary: `${rows.length} ${a.status === "all" ? "" : `${a.status} `}commitment(s)${rows.length > out.length ? `, first ${out.length} shown` : ""}.`,
    };
  },
});

export const getCommitmentTool = defineTool({
  name: "get_commitment",
  title: "Get one commitment",
  description:
    "Details of one commitment, by its id or the provider's commitment id (ARN, reservation id…), with its utilization, covered on-demand cost and savings over the last N complete days (default 30) from the billing data.",
  scopes: [],
  input: {
    commitment_id: z.string().min(1).max(2048).describe("The commitment's id (UUID) or its provider commitment id."),
    lookback_days: z.number().int().min(1).max(365).default(30).describe("Days of billing data for the utilization figures."),
  },
  output: {
    commitment: commitmentOut,
    performance: z.object({
      start_date: z.string(),
      end_date: z.string(),
      used_cost: z.number(),
      unused_cost: z.number(),
      utilization: z.number().nullable(),
      covered_ondemand_cost: z.number(),
      savings: z.number(),
    }),
  },
  async run(ctx, a) {
    const c = await findCommitment(ctx.s.db, ctx.orgId, a.commitment_id, ctx.now);
    const performance = await commitmentPerformance(ctx.s.db, ctx.orgId, c, ctx.now, a.lookback_days);
    return {
      structured: { commitment: commitmentShown(c, ctx.now), performance },
      summary: `${c.commitment_type} ${c.provider_commitment_id}${performance.utilization !== null ? `: ${(performance.utilization * 100).toFixed(1)}% utilized over the last ${a.lookback_days} days` : ": no billing activity in the window"}.`,
    };
  },
});

export const expiringCommitmentsTool = defineTool({
  name: "list_expiring_commitments",
  title: "Commitments expiring soon",
  description:
    "Active commitments that end within the next N days (default 60), soonest first, with the hourly commitment that will lapse: the renewal worklist. Insured commitments also show when their lock-in ends.",
  scopes: [],
  input: {
    within_days: z.number().int().min(1).max(365).default(60).describe("Horizon in days."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
  },
  output: {
    as_of: z.string(),
    within_days: z.number().int(),
    count: z.number().int(),
    lapsing_recurring_hourly_cost: z.number(),
    commitments: z.array(commitmentOut),
  },
  async run(ctx, a) {
    const rows = await findCommitments(ctx.s.db, ctx.orgId, ctx.now, { provider: a.provider, status: "active", expiringWithinDays: a.within_days, soonestFirst: true });
    return {
      structured: {
        as_of: ctx.now.toISOString(),
        within_days: a.within_days,
        count: rows.length,
        lapsing_recurring_hourly_cost: lapsingRecurringHourlyCost(rows),
        commitments: rows.map((c) => commitmentShown(c, ctx.now)),
      },
      summary: rows.length ? `${rows.length} commitment(s) expire within ${a.within_days} days; the first on ${rows[0]!.ends_at!.slice(0, 10)}.` : `No commitment expires within ${a.within_days} days.`,
    };
  },
});

export const commitmentTools = [listCommitmentsTool, getCommitmentTool, expiringCommitmentsTool];
