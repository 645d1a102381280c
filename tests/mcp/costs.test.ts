/**
 * The cost tools (query_costs, list_dimension_values, compare_periods) through the SDK's own
 * MCP client against the real app, both drivers, on FOCUS rows imported with importFocus.
 */
import { beforeAll, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { importFocus } from "../../lib/billing/focus.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { connectMcp } from "./fixtures.ts";

const NOW = new Date("2026-06-17T12:00:00Z");

type Row = Record<string, string | number | null>;

/** FOCUS CSV of rows (columns: the union of the rows' keys over required defaults). */
function csv(rows: Row[]): string {
  const base: Row = {
    ProviderName: "AWS", BillingAccountId: "payer-1", BillingAccountName: "Payer", SubAccountId: "111", SubAccountName: "Prod", BillingCurrency: "USD",
    ChargeCategory: "Usage", ChargeFrequency: "Usage-Based", PricingCategory: "Standard", ServiceName: "EC2", ServiceCategory: "Compute",
    BilledCost: 0, EffectiveCost: 0, ListCost: null, ContractedCost: null, RegionId: null, ResourceId: null, Tags: null,
    CommitmentDiscountId: null, CommitmentDiscountStatus: null, CommitmentDiscountCategory: null, CommitmentDiscountType: null,
  };
  const full = rows.map((r) => ({ ...base, ...r }));
  const cols = [...new Set(full.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | null | undefined) => (v === null || v === undefined ? "" : /[",\r\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return [cols.join(","), ...full.map((r) => cols.map((c) => cell(r[c])).join(","))].join("\n") + "\n";
}

interface Charge {
  month: "2026-04" | "2026-05";
  account: string;
  service: string;
  resource: string | null;
  cost: number;
  team?: string;
  env?: string;
  currency?: "USD" | "EUR";
  category?: string;
  commitment?: string;
}

/** The charges (whole cents, so the expected sums below are plain sums of the data). */
const CHARGES: Charge[] = [
  { month: "2026-04", account: "111", service: "EC2", resource: "i-1", cost: 100, team: "web", env: "prod" },
  { month: "2026-04", account: "222", service: "RDS", resource: "db-1", cost: 60, team: "data", env: "dev" },
  { month: "2026-04", account: "111", service: "EC2", resource: "i-1", cost: 12.5, team: "web", env: "prod", commitment: "sp-1" },
  { month: "2026-05", account: "111", service: "EC2", resource: "i-1", cost: 150.25, team: "web", env: "prod" },
  { month: "2026-05", account: "222", service: "RDS", resource: "db-1", cost: 45, team: "data", env: "dev" },
  { month: "2026-05", account: "222", service: "S3", resource: "bucket-1", cost: 9.75, team: "data" },
  { month: "2026-05", account: "111", service: "EC2", resource: "i-2", cost: 30, team: "ml", env: "prod", commitment: "sp-1" },
  { month: "2026-05", account: "111", service: "Tax", resource: null, cost: 4, category: "Tax" },
  { month: "2026-05", account: "eur-sub", service: "Virtual Machines", resource: "vm-1", cost: 70.4, team: "web", env: "prod", currency: "EUR" },
];

function rowOf(ch: Charge, i: number): Row {
  const next = ch.month === "2026-04" ? "2026-05" : "2026-06";
  const day = `${ch.month}-${String(10 + (i % 10)).padStart(2, "0")}`;
  const t = { ...(ch.team ? { team: ch.team } : {}), ...(ch.env ? { env: ch.env } : {}) };
  const eur = ch.currency === "EUR";
  return {
    ...(eur ? { ProviderName: "Microsoft", BillingAccountId: "eur-ba", BillingCurrency: "EUR" } : {}),
    BillingPeriodStart: `${ch.month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${day}T23:00:00Z`,
    SubAccountId: ch.account, ServiceName: ch.service, ResourceId: ch.resource, RegionId: eur ? "westeurope" : "us-east-1",
    ChargeCategory: ch.category ?? "Usage", BilledCost: ch.commitment ? 0 : ch.cost, EffectiveCost: ch.cost, ListCost: ch.cost, ContractedCost: ch.cost,
    Tags: Object.keys(t).length ? JSON.stringify(t) : null,
    ...(ch.commitment ? { CommitmentDiscountId: ch.commitment, CommitmentDiscountStatus: "Used", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" } : {}),
  };
}

const cents = (v: number) => Math.round(v * 100);
const sum = (pick: (c: Charge) => boolean) => CHARGES.filter(pick).reduce((a, c) => a + cents(c.cost), 0);
const usd = (c: Charge) => (c.currency ?? "USD") === "USD";

describeEachDb("mcp cost tools", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let client: Client;

  const raw = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<any>;
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await raw(name, args);
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return r.structuredContent;
  };

  beforeAll(async () => {
    const r = await importFocus(t.s.db, t.org.id, Readable.from([csv(CHARGES.map(rowOf))]), { fileName: "costs.csv", now: NOW });
    expect(r.rows_rejected).toBe(0);
    client = await connectMcp(t, t.org.key);
  }, 60_000);

  test("listed for a connection with assistant:read only, read-only, with schemas", async () => {
    const other = await t.newOrg("Reader", ["assistant:read"]);
    const reader = await connectMcp(t, other.key);
    const { tools } = await reader.listTools();
    for (const name of ["query_costs", "list_dimension_values", "compare_periods"]) {
      const tool = tools.find((x) => x.name === name)!;
      expect(tool.annotations?.readOnlyHint).toBe(true);
      expect(tool.outputSchema?.type).toBe("object");
      expect(tool.description!).toContain("currenc");
    }
    const empty = await reader.callTool({ name: "query_costs", arguments: { group_by: ["service"] } });
    expect((empty as any).structuredContent).toMatchObject({ rows: [], total_rows: 0, totals: [] });
    await reader.close();
  });

  test("query_costs by tag with the split: per currency, EUR never added to USD, rows add up", async () => {
    const r = await call("query_costs", { start_date: "2026-05-01", end_date: "2026-06-01", group_by: ["tag:team"], metric: "split" });
    expect(r.window).toEqual({ start_date: "2026-05-01", end_date: "2026-06-01" });
    const row = (team: string | null, cur: string) => r.rows.find((x: any) => x.keys["tag:team"] === team && x.currency === cur);
    for (const team of ["web", "data", "ml"]) expect(cents(row(team, "USD").effective_cost)).toBe(sum((c) => c.month === "2026-05" && usd(c) && c.team === team));
    expect(cents(row(null, "USD").other_cost)).toBe(400);
    expect(row("web", "EUR")).toEqual({ currency: "EUR", keys: { "tag:team": "web" }, effective_cost: 70.4, ondemand_cost: 70.4, commitment_cost: 0, other_cost: 0 });
    expect(row("ml", "USD").commitment_cost).toBe(30);
    expect(r.rows[0]).not.toHaveProperty("billed_cost");
    expect(r.totals).toEqual([
      { currency: "EUR", rows: 1, effective_cost: 70.4, ondemand_cost: 70.4, commitment_cost: 0, other_cost: 0 },
      expect.objectContaining({ currency: "USD", rows: 4, effective_cost: sum((c) => c.month === "2026-05" && usd(c)) / 100 }),
    ]);
    const usdRows = r.rows.filter((x: any) => x.currency === "USD");
    expect(usdRows.reduce((a: number, x: any) => a + cents(x.effective_cost), 0)).toBe(cents(r.totals[1].effective_cost));
  });

  test("query_costs: filters with several values, limit and truncation with totals over every row", async () => {
    const r = await call("query_costs", { start_date: "2026-04-01", end_date: "2026-06-01", group_by: ["month", "service"], filters: { "tag:team": ["web", "ml"], provider: "aws" }, metric: "effective_cost" });
    expect(r.totals).toEqual([{ currency: "USD", rows: 2, effective_cost: sum((c) => usd(c) && (c.team === "web" || c.team === "ml")) / 100 }]);
    expect(r.rows.map((x: any) => [x.keys.month, x.keys.service])).toEqual([["2026-05", "EC2"], ["2026-04", "EC2"]]);

    const all = await call("query_costs", { start_date: "2026-05-01", end_date: "2026-06-01", group_by: ["resource"] });
    const top = await call("query_costs", { start_date: "2026-05-01", end_date: "2026-06-01", group_by: ["resource"], limit: 2 });
    // Each currency's largest resource (ranked within its currency), shown by currency.
    expect(top.rows).toEqual([...new Set(all.rows.map((x: any) => x.currency))].map((cur) => all.rows.find((x: any) => x.currency === cur)));
    expect(top.rows.find((x: any) => x.currency === "USD").keys.resource).toBe("i-1");
    expect(top).toMatchObject({ total_rows: all.total_rows, truncated: true });
    expect(all.truncated).toBe(false);
    expect(top.totals).toEqual(all.totals);
  });

  test("list_dimension_values: tag keys, a tag's values by prefix, regions per currency", async () => {
    const keys = await call("list_dimension_values", { dimension: "tag_keys", start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(keys.values.map((v: any) => v.value).sort()).toEqual(["env", "team"]);
    const team = keys.values.find((v: any) => v.value === "team");
    expect(team.costs).toEqual([
      { currency: "USD", effective_cost: sum((c) => c.month === "2026-05" && usd(c) && !!c.team) / 100 },
      { currency: "EUR", effective_cost: 70.4 },
    ]);
    const env = await call("list_dimension_values", { dimension: "tag:env", prefix: "PR", start_date: "2026-04-01", end_date: "2026-06-01" });
    expect(env.values.map((v: any) => v.value)).toEqual(["prod"]);
    const regions = await call("list_dimension_values", { dimension: "region", start_date: "2026-05-01", end_date: "2026-06-01", limit: 1 });
    expect(regions).toMatchObject({ total_values: 2, truncated: true });
    expect(regions.values).toEqual([{ value: "us-east-1", costs: [{ currency: "USD", effective_cost: sum((c) => c.month === "2026-05" && usd(c)) / 100 }] }]);
    expect(regions.totals).toEqual([
      { currency: "EUR", effective_cost: 70.4 },
      { currency: "USD", effective_cost: sum((c) => c.month === "2026-05" && usd(c)) / 100 },
    ]);
  });

  test("compare_periods: last complete month vs the month before, drivers adding up to the change", async () => {
    const r = await call("compare_periods", { top: 2 });
    expect(r.current).toEqual({ start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(r.baseline).toEqual({ start_date: "2026-04-01", end_date: "2026-05-01" });
    const usdChange = sum((c) => c.month === "2026-05" && usd(c)) - sum((c) => c.month === "2026-04" && usd(c));
    expect(r.totals).toEqual([
      { currency: "EUR", baseline: 0, current: 70.4, change: 70.4, change_ratio: null },
      expect.objectContaining({ currency: "USD", baseline: sum((c) => c.month === "2026-04" && usd(c)) / 100, change: usdChange / 100 }),
    ]);
    for (const dim of ["accounts", "services", "resources", "commitments"]) {
      const d = r.drivers[dim];
      const u = d.by_currency.find((x: any) => x.currency === "USD");
      expect(cents(u.change)).toBe(usdChange);
      expect(cents(u.top_change) + cents(u.rest_change)).toBe(usdChange);
      expect(u.explained_share).toBeCloseTo(u.top_change / u.change, 5);
      const top = d.top.filter((x: any) => x.currency === "USD");
      expect(top.length).toBe(2);
      expect(top.reduce((a: number, x: any) => a + cents(x.change), 0)).toBe(cents(u.top_change));
      for (const x of top) expect(x.share_of_change).toBeCloseTo(x.change / u.change, 5);
    }
    const acct = r.drivers.accounts.top.find((x: any) => x.key === "111");
    expect(cents(acct.change)).toBe(sum((c) => c.month === "2026-05" && c.account === "111") - sum((c) => c.month === "2026-04" && c.account === "111"));
    const sp = r.drivers.commitments.top.find((x: any) => x.key === "sp-1");
    expect(sp).toMatchObject({ baseline: 12.5, current: 30, change: 17.5 });

    // Explicit periods, billed cost: a commitment's covered usage is billed 0.
    const billed = await call("compare_periods", { metric: "billed_cost", current_start_date: "2026-05-01", current_end_date: "2026-06-01", baseline_start_date: "2026-04-01", baseline_end_date: "2026-05-01", top: 50 });
    expect(billed.drivers.commitments.top.find((x: any) => x.key === "sp-1")).toMatchObject({ baseline: 0, current: 0, change: 0 });
    const half: any = await raw("compare_periods", { current_start_date: "2026-05-01" });
    expect(half.isError).toBe(true);
    expect(half.content[0].text).toContain("current_end_date");
  });

  test("SQL in tag keys and values is plain text; unknown dimensions are tool errors", async () => {
    const attack = "team') OR 1=1; DROP TABLE billing_line_items; --";
    const r = await call("query_costs", { start_date: "2026-05-01", end_date: "2026-06-01", group_by: [`tag:${attack}`], filters: { "tag:team": "x' OR '1'='1" } });
    expect(r).toMatchObject({ rows: [], total_rows: 0, totals: [] });
    const values = await call("list_dimension_values", { dimension: `tag:${attack}`, start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(values.values).toEqual([{ value: null, costs: expect.any(Array) }]);
    const still = await call("query_costs", { start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(still.total_rows).toBe(2);

    const bad: any = await raw("query_costs", { group_by: ["colour"] });
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toContain("tag:<key>");
    for (const args of [{ filters: { nope: "x" } }, { group_by: ["service", "region", "account", "day"] }, { group_by: [`tag:${"k".repeat(129)}`] }, { limit: 5000 }]) {
      const e: any = await raw("query_costs", args);
      expect(e.isError).toBe(true);
    }
    const badValues: any = await raw("list_dimension_values", { dimension: "team" });
    expect(badValues.isError).toBe(true);
  });
});
