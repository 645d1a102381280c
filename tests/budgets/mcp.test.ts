/**
 * The assistant's budget tools through the real MCP endpoint (the SDK's client): list_budgets and
 * get_budget_status answer exactly what GET /budgets, /budgets/{id} and its history answer; they
 * need budgets:read (not listed, not callable without it); another org's budget does not exist.
 */
import { beforeAll, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { connectMcp, NOW, seedOrgBilling } from "../mcp/fixtures.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { MCP_SCOPES } from "../../lib/mcp/scopes.ts";

describeEachDb("mcp budget tools", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let client: Client;
  const ids: string[] = [];
  let theirs = "";

  const get = async (path: string) => {
    const r = await t.orgRequest("GET", path);
    expect(r.status).toBe(200);
    return r.json() as Promise<any>;
  };
  const tool = async (c: Client, name: string, args: Record<string, unknown> = {}) => {
    const r: any = await c.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    return r;
  };

  beforeAll(async () => {
    await seedOrgBilling(t.s.db, t.org.id, { scale: 1, tag: "b" });
    for (const body of [
      { name: "Whole org", amount: 3000, currency: "USD", thresholds: [{ percent: 50, basis: "actual" }, { percent: 100, basis: "forecast" }] },
      { name: "Prod account", amount: 100, currency: "USD", filter: { account_id: "b1111111111" }, thresholds: [{ percent: 80, basis: "actual" }] },
      { name: "Nothing yet", amount: 10, currency: "EUR", thresholds: [{ percent: 100, basis: "actual" }] },
    ]) {
      const r = await t.orgRequest("POST", "/budgets", { body });
      expect(r.status).toBe(201);
      ids.push(((await r.json()) as any).id);
    }
    const other = await t.newOrg("Other budgets");
    theirs = ((await (await t.request("POST", `/beta/v1/org/${other.id}/budgets`, { key: other.key, body: { name: "Theirs", amount: 1, currency: "USD", thresholds: [{ percent: 1, basis: "actual" }] } })).json()) as any).id;
    client = await connectMcp(t, t.org.key);
  }, 60_000);

  test("list_budgets answers GET /budgets: every budget with its current status; the summary names who crossed what", async () => {
    const r = await tool(client, "list_budgets");
    const rest = await get("/budgets");
    expect(r.structuredContent.budgets).toEqual(rest);
    expect(r.structuredContent.total_count).toBe(3);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    const whole = rest.find((b: any) => b.name === "Whole org");
    expect(whole.status.actual).toBeGreaterThan(1500);
    expect(whole.status.thresholds.find((x: any) => x.basis === "actual").crossed_at).toBe(NOW.toISOString());
    const prod = rest.find((b: any) => b.name === "Prod account");
    expect(prod.status.percent_used).toBeGreaterThan(100);
    expect(r.structuredContent.over_budget).toBe(1);
    expect(r.content[0].text).toContain("3 budget(s), 1 over budget");
    expect(r.content[0].text).toContain("Whole org: USD");
    expect(r.content[0].text).toContain("crossed 50% actual");
  });

  test("get_budget_status answers GET /budgets/{id} and its history", async () => {
    for (const id of ids) {
      const r = await tool(client, "get_budget_status", { budget_id: id.toUpperCase(), history_months: 3 });
      expect(r.structuredContent.budget).toEqual(await get(`/budgets/${id}`));
      expect(r.structuredContent.history).toEqual(await get(`/budgets/${id}/history?page_size=3`));
    }
    const eur = await tool(client, "get_budget_status", { budget_id: ids[2] });
    expect(eur.structuredContent.budget.status).toMatchObject({ actual: 0, forecast: null });
  });

  test("another organization's budget does not exist; bad arguments are a tool error the model can read", async () => {
    const r: any = await client.callTool({ name: "get_budget_status", arguments: { budget_id: theirs } });
    expect(r.isError).toBe(true);
    expect(r.content[0].text).toBe("No budget with this id in this organization.");
    for (const args of [{ budget_id: "nope" }, { budget_id: ids[0], history_months: 0 }, { budget_id: ids[0], history_months: 25 }]) {
      const bad: any = await client.callTool({ name: "get_budget_status", arguments: args });
      expect(bad.isError, JSON.stringify(args)).toBe(true);
      expect(bad.content[0].text).toStartWith("Invalid arguments for get_budget_status");
    }
  });

  test("budgets:read is needed: without it the tools are neither listed nor callable; it is one of the assistant's scopes", async () => {
    expect(MCP_SCOPES).toContain("budgets:read");
    const names = (await client.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(["list_budgets", "get_budget_status"]));
    const key = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read", "reports:read"] });
    const narrow = await connectMcp(t, key.key);
    const listed = (await narrow.listTools()).tools.map((x) => x.name);
    expect(listed).not.toContain("list_budgets");
    expect(listed).not.toContain("get_budget_status");
    await expect(narrow.callTool({ name: "list_budgets", arguments: {} })).rejects.toThrow(/Unknown tool: list_budgets/);
    await narrow.close();
  });
});
