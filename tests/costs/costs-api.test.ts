/**
 * The cost explorer on the Beta API (GET /costs, /costs/dimensions/{dimension}, format=csv):
 * the same figures as the assistant's query_costs / list_dimension_values (called through the
 * MCP endpoint), to the cent; grouping, tag:<key>, filters, CSV = JSON rows, org isolation,
 * roles and scopes, 400 on bad params. Both drivers, FOCUS rows imported with importFocus.
 */
import { beforeAll, expect, test } from "bun:test";
import { Readable } from "node:stream";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { importFocus } from "../../lib/billing/focus.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { addMember, createUser } from "../../lib/orgs/service.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { connectMcp } from "../mcp/fixtures.ts";

const NOW = new Date("2026-06-17T12:00:00Z");

type Row = Record<string, string | number | null>;

function focus(rows: Row[]): string {
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
  region?: string;
  cost: number;
  team?: string;
  currency?: "EUR";
  commitment?: boolean;
}

/** Fractions of a cent on purpose: the rounding of the explorer is what both clients must share. */
const CHARGES: Charge[] = [
  { month: "2026-04", account: "111", service: "EC2", cost: 100.004, team: "web" },
  { month: "2026-04", account: "222", service: "RDS", cost: 60.336, team: "data", region: "eu-west-1" },
  { month: "2026-04", account: "111", service: "EC2", cost: 12.5, team: "web", commitment: true },
  { month: "2026-05", account: "111", service: "EC2", cost: 150.255, team: "web" },
  { month: "2026-05", account: "111", service: "EC2", cost: 0.335, team: "ml" },
  { month: "2026-05", account: "222", service: "RDS", cost: 45.3333, team: "data", region: "eu-west-1" },
  { month: "2026-05", account: "222", service: "S3, Glacier", cost: 9.7577, team: "=1+1" },
  { month: "2026-05", account: "111", service: "EC2", cost: 30.001, team: "ml", commitment: true },
  { month: "2026-05", account: "111", service: "Tax", cost: 4 },
  { month: "2026-05", account: "eur-sub", service: "Virtual Machines", cost: 70.4049, team: "web", currency: "EUR" },
];

function rowOf(ch: Charge, i: number, scale = 1): Row {
  const next = ch.month === "2026-04" ? "2026-05" : "2026-06";
  const day = `${ch.month}-${String(10 + (i % 10)).padStart(2, "0")}`;
  const eur = ch.currency === "EUR";
  const cost = Number((ch.cost * scale).toFixed(6));
  return {
    ...(eur ? { ProviderName: "Microsoft", BillingAccountId: "eur-ba", BillingCurrency: "EUR" } : {}),
    BillingPeriodStart: `${ch.month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${day}T23:00:00Z`,
    SubAccountId: ch.account, ServiceName: ch.service, RegionId: eur ? "westeurope" : (ch.region ?? "us-east-1"),
    ChargeCategory: ch.service === "Tax" ? "Tax" : "Usage", BilledCost: ch.commitment ? 0 : cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost,
    Tags: ch.team ? JSON.stringify({ team: ch.team }) : null,
    ...(ch.commitment ? { CommitmentDiscountId: "sp-1", CommitmentDiscountStatus: "Used", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" } : {}),
  };
}

const withinCent = (shown: number, exact: number) => Math.abs(shown - exact) < 0.01 && Math.round(shown * 100) === shown * 100;

const MONEY_COLUMNS = {
  all: ["effective_cost", "billed_cost", "list_cost", "ondemand_cost", "commitment_cost", "other_cost"],
  effective_cost: ["effective_cost"],
  billed_cost: ["effective_cost", "billed_cost"],
  list_cost: ["effective_cost", "list_cost"],
  split: ["effective_cost", "ondemand_cost", "commitment_cost", "other_cost"],
};

/** Parses RFC 4180 CSV (quoted fields, CRLF). */
function parseCsv(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(cell), (cell = "");
    else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell), out.push(row), (row = []), (cell = ""), i++;
    } else cell += c;
  }
  return out;
}

describeEachDb("cost explorer on the Beta API", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let client: Client;
  let other: { id: string; key: string };

  const get = async (path: string, key?: string) => {
    const r = await t.orgRequest("GET", path, key === undefined ? undefined : { key });
    const body = r.headers.get("content-type")?.startsWith("text/csv") ? await r.text() : await r.json();
    return { status: r.status, body: body as any, headers: r.headers };
  };
  const ok = async (path: string) => {
    const r = await get(path);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const tool = async (name: string, args: Record<string, unknown>) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    return r.structuredContent;
  };

  beforeAll(async () => {
    const r = await importFocus(t.s.db, t.org.id, Readable.from([focus(CHARGES.map((c, i) => rowOf(c, i)))]), { fileName: "costs.csv", now: NOW });
    expect(r.rows_rejected).toBe(0);
    other = await t.newOrg("Other org");
    const o = await importFocus(t.s.db, other.id, Readable.from([focus(CHARGES.map((c, i) => rowOf(c, i, 3)))]), { fileName: "other.csv", now: NOW });
    expect(o.rows_rejected).toBe(0);
    client = await connectMcp(t, t.org.key);
  }, 60_000);

  test("GET /costs answers exactly what query_costs answers (every metric, grouping, filter), to the cent", async () => {
    const cases: { query: string; args: Record<string, unknown> }[] = [
      { query: "", args: {} },
      { query: "?start_date=2026-05-01&end_date=2026-06-01&group_by=service", args: { start_date: "2026-05-01", end_date: "2026-06-01", group_by: ["service"] } },
      { query: "?group_by=tag:team&metric=split", args: { group_by: ["tag:team"], metric: "split" } },
      { query: "?group_by=service,tag:team&metric=effective_cost", args: { group_by: ["service", "tag:team"], metric: "effective_cost" } },
      { query: "?group_by=month&group_by=account&metric=billed_cost&limit=3", args: { group_by: ["month", "account"], metric: "billed_cost", limit: 3 } },
      { query: "?group_by=region&service=EC2&service=RDS&provider=aws", args: { group_by: ["region"], filters: { service: ["EC2", "RDS"], provider: ["aws"] } } },
      { query: "?group_by=service&tag:team=", args: { group_by: ["service"], filters: { "tag:team": [null] } } },
      { query: "?group_by=day&tag:team=web&tag:team=ml&metric=list_cost", args: { group_by: ["day"], filters: { "tag:team": ["web", "ml"] }, metric: "list_cost" } },
    ];
    for (const c of cases) expect(await ok(`/costs${c.query}`), c.query).toEqual(await tool("query_costs", c.args));
  });

  test("grouped by two dimensions, tag:<key> and filters: the rows and the per-currency totals", async () => {
    const r = await ok("/costs?start_date=2026-05-01&end_date=2026-06-01&group_by=service&group_by=tag:team&metric=effective_cost");
    expect(r.window).toEqual({ start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(r.group_by).toEqual(["service", "tag:team"]);
    expect(r.metric).toBe("effective_cost");
    const row = (service: string, team: string | null, cur = "USD") => r.rows.find((x: any) => x.currency === cur && x.keys.service === service && x.keys["tag:team"] === team);
    expect(Object.keys(row("EC2", "web"))).toEqual(["currency", "keys", "effective_cost"]);
    expect(withinCent(row("EC2", "web").effective_cost, 150.255)).toBe(true);
    expect(row("Tax", null).effective_cost).toBe(4);
    expect(row("Virtual Machines", "web", "EUR").effective_cost).toBe(70.4);
    // Totals per currency, never EUR in USD; each the sum of its rows' cents.
    expect(r.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
    const usdCents = r.rows.filter((x: any) => x.currency === "USD").reduce((a: number, x: any) => a + Math.round(x.effective_cost * 100), 0);
    expect(Math.round(r.totals[1].effective_cost * 100)).toBe(usdCents);
    expect(r.totals[1].rows).toBe(5);
    // The comma-list and the repeated param are the same query.
    expect(await ok("/costs?start_date=2026-05-01&end_date=2026-06-01&group_by=service,tag:team&metric=effective_cost")).toEqual(r);

    // Filters: a tag's values, untagged rows (empty value), provider and service.
    const teams = await ok("/costs?start_date=2026-04-01&end_date=2026-06-01&group_by=tag:team&tag:team=web&tag:team=ml&provider=aws&metric=effective_cost");
    expect(teams.rows.map((x: any) => x.keys["tag:team"])).toEqual(["web", "ml"]);
    expect(withinCent(teams.rows[0].effective_cost, 100.004 + 12.5 + 150.255)).toBe(true);
    expect(withinCent(teams.rows[1].effective_cost, 0.335 + 30.001)).toBe(true);
    const untagged = await ok("/costs?start_date=2026-05-01&end_date=2026-06-01&group_by=service&tag:team=");
    expect(untagged.rows.map((x: any) => x.keys.service)).toEqual(["Tax"]);
    const services = await ok("/costs?start_date=2026-05-01&end_date=2026-06-01&group_by=account&service=S3%2C%20Glacier");
    expect(services.rows).toEqual([expect.objectContaining({ currency: "USD", keys: { account: "222" }, effective_cost: 9.76 })]);
  });

  test("GET /costs/dimensions/{dimension} answers what list_dimension_values answers", async () => {
    const cases: { path: string; args: Record<string, unknown> }[] = [
      { path: "/costs/dimensions/service", args: { dimension: "service" } },
      { path: "/costs/dimensions/tag:team?start_date=2026-05-01&end_date=2026-06-01", args: { dimension: "tag:team", start_date: "2026-05-01", end_date: "2026-06-01" } },
      { path: "/costs/dimensions/tag%3Ateam?prefix=W", args: { dimension: "tag:team", prefix: "W" } },
      { path: "/costs/dimensions/tag_keys", args: { dimension: "tag_keys" } },
      { path: "/costs/dimensions/tag:a%25b", args: { dimension: "tag:a%b" } },
      { path: "/costs/dimensions/region?limit=1&provider=aws", args: { dimension: "region", limit: 1, filters: { provider: "aws" } } },
    ];
    for (const c of cases) expect(await ok(c.path), c.path).toEqual(await tool("list_dimension_values", c.args));
    const teams = await ok("/costs/dimensions/tag:team?prefix=w");
    expect(teams.values.map((v: any) => [v.value, v.costs.map((c: any) => c.currency)])).toEqual([["web", ["USD", "EUR"]]]);
    expect(withinCent(teams.values[0].costs[0].effective_cost, 100.004 + 12.5 + 150.255)).toBe(true);
    const regions = await ok("/costs/dimensions/region?limit=1&provider=aws");
    expect(regions).toMatchObject({ dimension: "region", total_values: 2, truncated: true });
  });

  test("format=csv: exactly the JSON rows, money with two decimals, text safe for spreadsheets", async () => {
    for (const q of ["group_by=service&group_by=tag:team", "group_by=tag:team&metric=split&limit=2", "metric=effective_cost", "group_by=service&tag:team=nobody"]) {
      const json = await ok(`/costs?${q}`);
      const r = await get(`/costs?${q}&format=csv`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toStartWith("text/csv");
      expect(r.headers.get("content-disposition")).toBe(`attachment; filename="costs-${json.window.start_date}-${json.window.end_date}.csv"`);
      const [header, ...lines] = parseCsv(r.body);
      const expectedHeader = ["currency", ...json.group_by, ...MONEY_COLUMNS[json.metric as keyof typeof MONEY_COLUMNS]];
      expect(header).toEqual(expectedHeader);
      for (const x of json.rows) expect(Object.keys(x)).toEqual(["currency", "keys", ...expectedHeader.slice(1 + json.group_by.length)]);
      const safe = (v: string | null) => (v === null ? "" : /^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
      expect(lines).toEqual(json.rows.map((x: any) => [x.currency, ...json.group_by.map((g: string) => safe(x.keys[g])), ...expectedHeader.slice(1 + json.group_by.length).map((m) => x[m].toFixed(2))]));
    }
    const csv = (await get("/costs?start_date=2026-05-01&end_date=2026-06-01&group_by=service,tag:team&metric=effective_cost&format=csv")).body as string;
    expect(csv).toContain(`\r\nUSD,"S3, Glacier",'=1+1,9.76\r\n`);
    expect(csv).toContain(`\r\nUSD,Tax,,4.00\r\n`);
    expect(parseCsv((await get("/costs?group_by=service&tag:team=nobody&format=csv")).body)).toEqual([["currency", "service", ...MONEY_COLUMNS.all]]);
  });

  test("org isolation: another org's key is refused (403, as on every org route); each org sees only its own figures", async () => {
    for (const path of ["/costs", "/costs?format=csv", "/costs/dimensions/service"]) {
      const r = await get(path, other.key);
      expect(r.status, path).toBe(403);
      expect(JSON.stringify(r.body)).not.toContain("EC2");
    }
    const mine = await ok("/costs?metric=effective_cost");
    const r = await t.request("GET", `/beta/v1/org/${other.id}/costs?metric=effective_cost`, { key: other.key });
    const theirs = (await r.json()) as any;
    expect(r.status).toBe(200);
    expect(theirs.totals.map((x: any) => x.currency)).toEqual(mine.totals.map((x: any) => x.currency));
    expect(theirs.totals[0].effective_cost).not.toBe(mine.totals[0].effective_cost);
    expect(Math.abs(theirs.totals[0].effective_cost - 3 * mine.totals[0].effective_cost)).toBeLessThan(0.03);
  });

  test("a viewer reads; a key without reports:read is refused (403)", async () => {
    const user = await createUser(t.s.db, { email: `viewer.${driver}@example.com`, password: "correct horse battery", emailVerified: true });
    await addMember(t.s.db, { orgId: t.org.id, userId: user.id, role: "viewer" });
    const viewerKey = await createApiKey(t.s.db, { orgId: t.org.id, createdBy: user.id });
    expect((await get("/costs?group_by=service", viewerKey.key)).status).toBe(200);
    expect((await get("/costs/dimensions/tag_keys", viewerKey.key)).status).toBe(200);
    expect((await get("/costs?format=csv", viewerKey.key)).status).toBe(200);
    const noReports = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] });
    for (const path of ["/costs", "/costs/dimensions/service"]) {
      const r = await get(path, noReports.key);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
  });

  test("bad params answer 400 with the error body naming the problem", async () => {
    const cases: [string, string][] = [
      ["/costs?group_by=colour", "group_by"],
      ["/costs?group_by=service,region,account", "group_by"],
      ["/costs?group_by=service&group_by=region&group_by=day", "group_by"],
      ["/costs?group_by=service,service", "group_by"],
      ["/costs?tag:=x", "tag:"],
      [`/costs?group_by=tag:${"k".repeat(129)}`, "group_by"],
      ["/costs?start_date=2026-13-01", "calendar date"],
      ["/costs?start_date=May", "start_date"],
      ["/costs?start_date=2026-05-01&end_date=2026-04-01", "end_date"],
      ["/costs?start_date=2020-01-01&end_date=2026-01-01", "three years"],
      ["/costs?start_date=2026-05-01&start_date=2026-04-01", "start_date"],
      ["/costs?metric=profit", "metric"],
      ["/costs?limit=0", "limit"],
      ["/costs?limit=abc", "limit"],
      ["/costs?format=xlsx", "format"],
      ["/costs?colour=red", "colour"],
      ["/costs/dimensions/service?group_by=region", "group_by"],
      ["/costs/dimensions/tag:", "tag"],
      ["/costs/dimensions/service?end_date=2026-02-30", "calendar date"],
    ];
    for (const [path, words] of cases) {
      const r = await get(path);
      expect(r.status, path).toBe(400);
      const { error, type, message, errors, timestamp } = r.body;
      expect({ error, type }, path).toEqual({ error: "Bad Request", type: "invalid_request" });
      expect(message.includes(words), `${path}: ${message} names ${words}`).toBe(true);
      expect(typeof timestamp).toBe("string");
      for (const [field, messages] of Object.entries<string[]>(errors)) {
        expect(message.includes(field), `${path}: ${message} names ${field}`).toBe(true);
        expect(/^(must|is) /.test(String(messages[0])), `${path}: ${messages[0]}`).toBe(true);
      }
    }
    const group = await get("/costs?group_by=colour");
    expect(group.body.errors).toEqual({ group_by: [expect.stringContaining("must be one of provider, billing_account, account, service")] });
    // The dimension of the path is the resource: an unknown one is 404.
    const unknown = await get("/costs/dimensions/colour");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ type: "not_found", message: expect.stringContaining("colour") });
  });
});
