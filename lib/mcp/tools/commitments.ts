/** Commitment management: the inventory (reserved instances, savings plans, CUDs, insured commitments). */
import * as z from "zod";
import { coverageAndUtilization, listCommitments, type CommitmentView } from "../../billing/queries.ts";
import { NotFoundError } from "../../errors.ts";
import { cents, centsOrNull, defineTool, providerEnum, ratio, ymd, type ToolContext } from "./common.ts";
import { rate6 } from "../../pricing/display.ts";

const DAY = 86_400_000;

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

function view(c: CommitmentView, now: Date) {
  const ends = c.ends_at ? new Date(c.ends_at) : null;
  const starts = c.starts_at ? new Date(c.starts_at) : null;
  const status = ends && ends <= now ? "expired" : starts && starts > now ? "not_started" : "active";
  return {
    ...c,
    amount: c.amount === null ? null : rate6(c.amount),
    recurring_hourly_cost: c.recurring_hourly_cost === null ? null : rate6(c.recurring_hourly_cost),
    upfront_cost: centsOrNull(c.upfront_cost),
    days_until_expiry: ends ? Math.max(0, Math.ceil((ends.getTime() - now.getTime()) / DAY)) : null,
    status: status as "active" | "expired" | "not_started",
  };
}

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
    let rows = await listCommitments(ctx.s.db, ctx.orgId, { provider: a.provider, status: a.status, insured: a.insured, commitmentType: a.commitment_type, at: ctx.now });
    if (a.holding_account_id) rows = rows.filter((c) => c.holding_account_id === a.holding_account_id);
    if (a.expiring_within_days !== undefined) {
      const horizon = ctx.now.getTime() + a.expiring_within_days * DAY;
      rows = rows.filter((c) => c.ends_at && new Date(c.ends_at).getTime() <= horizon);
    }
    const out = rows.slice(0, a.limit).map((c) => view(c, ctx.now));
    return {
      structured: { as_of: ctx.now.toISOString(), total_count: rows.length, returned_count: out.length, truncated: rows.length > out.length, commitments: out },
      summary: `${rows.length} ${a.status === "all" ? "" : `${a.status} `}commitment(s)${rows.length > out.length ? `, first ${out.length} shown` : ""}.`,
    };
  },
});

async function findCommitment(ctx: ToolContext, id: string): Promise<CommitmentView> {
  const all = await listCommitments(ctx.s.db, ctx.orgId, { status: "all", at: ctx.now });
  const key = id.toLowerCase();
  const c = all.find((x) => x.id === key || x.provider_commitment_id.toLowerCase() === key);
  if (!c) throw new NotFoundError(`No commitment ${id} in this organization.`);
  return c;
}

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
    const c = await findCommitment(ctx, a.commitment_id);
    // The last N complete UTC days (today is still being billed).
    const to = new Date(Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth(), ctx.now.getUTCDate()));
    const from = new Date(to.getTime() - a.lookback_days * DAY);
    const rows = await coverageAndUtilization(ctx.s.db, ctx.orgId, { provider: c.provider, from, to, groupBy: "commitment" });
    const r = rows.find((x) => x.key === c.provider_commitment_id);
    const used = r?.used_cost ?? 0;
    const unused = r?.unused_cost ?? 0;
    return {
      structured: {
        commitment: view(c, ctx.now),
        performance: {
          start_date: ymd(from),
          end_date: ymd(to),
          used_cost: cents(used),
          unused_cost: cents(unused),
          utilization: ratio(r?.utilization ?? null),
          covered_ondemand_cost: cents(r?.covered_ondemand_cost),
          savings: cents(r?.savings),
        },
      },
      summary: `${c.commitment_type} ${c.provider_commitment_id}${r?.utilization != null ? `: ${(r.utilization * 100).toFixed(1)}% utilized over the last ${a.lookback_days} days` : ": no billing activity in the window"}.`,
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
    const horizon = ctx.now.getTime() + a.within_days * DAY;
    const rows = (await listCommitments(ctx.s.db, ctx.orgId, { provider: a.provider, status: "active", at: ctx.now }))
      .filter((c) => c.ends_at && new Date(c.ends_at).getTime() <= horizon)
      .sort((x, y) => new Date(x.ends_at!).getTime() - new Date(y.ends_at!).getTime());
    const lapsing = rows.reduce((acc, c) => acc + (c.recurring_hourly_cost ?? 0), 0);
    return {
      structured: {
        as_of: ctx.now.toISOString(),
        within_days: a.within_days,
        count: rows.length,
        lapsing_recurring_hourly_cost: rate6(lapsing),
        commitments: rows.map((c) => view(c, ctx.now)),
      },
      summary: rows.length ? `${rows.length} commitment(s) expire within ${a.within_days} days; the first on ${rows[0]!.ends_at!.slice(0, 10)}.` : `No commitment expires within ${a.within_days} days.`,
    };
  },
});

export const commitmentTools = [listCommitmentsTool, getCommitmentTool, expiringCommitmentsTool];
