import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { TestContext } from "../helpers/app.ts";
import { billingLineItems, cloudAccounts, commitments } from "../../lib/db/schema/index.ts";
import type { Db } from "../../lib/db/index.ts";

const DAY = 86_400_000;

/** Fixed clock of the MCP suites: mid-month, so windows and month-end figures are stable. */
export const NOW = new Date("2026-06-17T12:00:00Z");

export interface SeededOrg {
  /** Daily amounts the rows were built from (per org: scaled by `scale`). */
  ondemandPerDay: (d: Date) => number;
  usedPerDay: number;
  unusedPerDay: number;
  listOfUsedPerDay: number;
  days: number;
  accountIds: string[];
  spArn: string;
  riId: string;
  expiredId: string;
}

/**
 * One org's aws billing data for the `days` days before NOW's day: two linked accounts, a
 * compute savings plan (expires in 20 days) covering part of the EC2 usage, an RI running for
 * 200 more days, an expired RI; on-demand usage with a weekday/weekend pattern.
 * `scale` and `tag` make each org's figures and ids distinct (isolation tests).
 */
export async function seedOrgBilling(db: Db, orgId: string, opts: { scale: number; tag: string; days?: number }): Promise<SeededOrg> {
  const days = opts.days ?? 60;
  const k = opts.scale;
  const accountIds = [`${opts.tag}1111111111`, `${opts.tag}2222222222`];
  const payer = `${opts.tag}0000000000`;
  await db.insert(cloudAccounts).values(accountIds.map((a, i) => ({ orgId, provider: "aws" as const, accountId: a, name: `${opts.tag}-account-${i + 1}`, billingAccountId: payer, billingAccountName: `${opts.tag}-payer` })));
  const spArn = `arn:aws:savingsplans::${payer}:savingsplan/sp-${opts.tag}`;
  const riId = `ri-${opts.tag}-long`;
  const expiredId = `ri-${opts.tag}-old`;
  await db.insert(commitments).values([
    {
      orgId, provider: "aws", providerCommitmentId: spArn, name: `${opts.tag} compute SP`, commitmentType: "compute_savings_plan", category: "Spend",
      contractTerm: "one_year", paymentOption: "no_upfront", startsAt: new Date(NOW.getTime() - 345 * DAY), endsAt: new Date(NOW.getTime() + 20 * DAY),
      amount: String(0.4166 * k), upfrontCost: "0", recurringHourlyCost: String(0.4166 * k), holdingAccountId: accountIds[0],
    },
    {
      orgId, provider: "aws", providerCommitmentId: riId, name: `${opts.tag} m5 RI`, commitmentType: "reserved_instance", category: "Usage",
      contractTerm: "three_year", paymentOption: "all_upfront", offeringClass: "standard", region: "us-east-1", instanceType: "m5.large", instanceFamily: "m5",
      startsAt: new Date(NOW.getTime() - 500 * DAY), endsAt: new Date(NOW.getTime() + 200 * DAY), amount: String(2 * k), upfrontCost: String(1051.2 * 2 * k), recurringHourlyCost: "0", holdingAccountId: accountIds[1],
    },
    {
      orgId, provider: "aws", providerCommitmentId: expiredId, name: `${opts.tag} old RI`, commitmentType: "reserved_instance", category: "Usage",
      contractTerm: "one_year", paymentOption: "no_upfront", startsAt: new Date(NOW.getTime() - 400 * DAY), endsAt: new Date(NOW.getTime() - 35 * DAY), amount: "1", upfrontCost: "0", recurringHourlyCost: "0.062", holdingAccountId: accountIds[1],
    },
  ]);

  const ondemandPerDay = (d: Date) => k * ([0, 6].includes(d.getUTCDay()) ? 60 : 100);
  const usedPerDay = 8 * k;
  const unusedPerDay = 2 * k;
  const listOfUsedPerDay = 12 * k;
  const today = Date.UTC(NOW.getUTCFullYear(), NOW.getUTCMonth(), NOW.getUTCDate());
  const rows = [];
  for (let i = days; i >= 1; i--) {
    const s = new Date(today - i * DAY);
    const base = {
      orgId, provider: "aws" as const, billingAccountId: payer, billingPeriod: `${s.toISOString().slice(0, 7)}-01`,
      chargePeriodStart: s, chargePeriodEnd: new Date(s.getTime() + DAY), chargeCategory: "Usage", regionId: "us-east-1", serviceName: "AmazonEC2", pricingCategory: "Standard",
    };
    const od = ondemandPerDay(s).toFixed(4);
    rows.push({ ...base, subAccountId: accountIds[0], billedCost: od, effectiveCost: od, listCost: od, instanceType: "m5.large" });
    rows.push({
      ...base, subAccountId: accountIds[1], billedCost: "0", effectiveCost: usedPerDay.toFixed(4), listCost: listOfUsedPerDay.toFixed(4), pricingCategory: "Committed",
      commitmentDiscountId: spArn, commitmentDiscountCategory: "Spend", commitmentDiscountType: "Compute Savings Plans", commitmentDiscountStatus: "Used", instanceType: "m5.large",
    });
    rows.push({
      ...base, subAccountId: accountIds[0], billedCost: "0", effectiveCost: unusedPerDay.toFixed(4), listCost: "0", pricingCategory: "Committed",
      commitmentDiscountId: spArn, commitmentDiscountCategory: "Spend", commitmentDiscountType: "Compute Savings Plans", commitmentDiscountStatus: "Unused",
    });
  }
  await db.insert(billingLineItems).values(rows);
  return { ondemandPerDay, usedPerDay, unusedPerDay, listOfUsedPerDay, days, accountIds, spArn, riId, expiredId };
}

/** Headers of a JSON-RPC POST to /mcp. */
export function mcpHeaders(key: string | null, extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream", ...extra };
  if (key) h.authorization = `Bearer ${key}`;
  return h;
}

export const initializeBody = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1.0.0" } } };

/** The SDK's own client over Streamable HTTP, with a fetch that calls the real app. */
export async function connectMcp(t: TestContext, key: string, name = "commitops-test"): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), {
    fetch: (url, init) => t.app.handle(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return client;
}
