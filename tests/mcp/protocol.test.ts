// The MCP server's protocol surface beyond tools: server info and capabilities, the JSON-RPC
// error of an unknown tool, invalid arguments as a readable tool error, report months as
// resources (equal to the REST report), and the review prompts.
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { ALL_TOOLS } from "../../lib/mcp/server.ts";
import { FAILED_ON_OUR_SIDE } from "../../lib/mcp/tools/common.ts";
import { PROMPTS } from "../../lib/mcp/prompts.ts";
import { RESOURCE_MAX_ROWS } from "../../lib/mcp/resources.ts";
import pkg from "../../package.json" with { type: "json" };
import { importCsvText, focusCsv } from "../reports/helpers.ts";
import { NOW, initializeBody, mcpHeaders } from "./fixtures.ts";

describeEachDb("mcp protocol: capabilities, errors, resources, prompts", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let readOnly = "";

  async function rpc(key: string, method: string, params: Record<string, unknown> = {}) {
    const r = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(key), body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) }));
    expect(r.status).toBe(200);
    return (await r.json()) as any;
  }

  beforeAll(async () => {
    const rows = [];
    for (const day of ["2026-05-03", "2026-05-04"]) {
      for (const [acct, cost] of [["acct-1", "12.345"], ["acct-2", "7.005"]] as const) {
        rows.push({
          BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z", ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${day}T01:00:00Z`,
          SubAccountId: acct, SubAccountName: `Account ${acct}`, BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost,
        });
      }
    }
    await importCsvText(t, t.org.id, focusCsv(rows), { now: NOW });
    readOnly = (await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] })).key;
  });

  test("initialize: the service's version, no listChanged (stateless), tools, resources and prompts", async () => {
    const r = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(t.org.key), body: JSON.stringify(initializeBody) }));
    const { result } = (await r.json()) as any;
    expect(result.serverInfo).toMatchObject({ name: "commitops", version: pkg.version });
    expect(result.capabilities).toEqual({ tools: {}, resources: {}, prompts: {} });
  });

  test("an unknown tool, or one the scopes hide, is JSON-RPC error -32602; bad arguments are a readable tool error", async () => {
    const unknown = await rpc(t.org.key, "tools/call", { name: "drop_all_tables", arguments: {} });
    expect(unknown.result).toBeUndefined();
    expect(unknown.error.code).toBe(-32602);
    expect(unknown.error.message).toContain("drop_all_tables");
    const hidden = await rpc(readOnly, "tools/call", { name: "price_cost_estimate", arguments: { estimate_id: crypto.randomUUID() } });
    expect(hidden.error.code).toBe(-32602);
    const bad = await rpc(t.org.key, "tools/call", { name: "list_commitments", arguments: { limit: 100000 } });
    expect(bad.result.isError).toBe(true);
    expect(bad.result.content[0].text).toContain("limit");
  });

  test("every tool lists its schemas and read-only annotations", async () => {
    const { result } = await rpc(t.org.key, "tools/list");
    expect(result.tools.map((x: any) => x.name).sort()).toEqual(ALL_TOOLS.map((x) => x.name).sort());
    expect(new Set(result.tools.map((x: any) => x.name)).size).toBe(result.tools.length);
    for (const tool of result.tools) {
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema.type).toBe("object");
      expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(tool.description.length).toBeGreaterThan(40);
    }
  });

  test("report months are resources equal to the REST report; unknown ones are not found", async () => {
    const list = await rpc(t.org.key, "resources/list");
    const uri = "commitops://reports/cloud_bill_by_service/2026-05";
    expect(list.result.resources.map((x: any) => x.uri)).toContain(uri);
    const templates = await rpc(t.org.key, "resources/templates/list");
    expect(templates.result.resourceTemplates[0].uriTemplate).toBe("commitops://reports/{report_type}/{month}");
    const read = await rpc(t.org.key, "resources/read", { uri });
    const content = read.result.contents[0];
    expect(content).toMatchObject({ uri, mimeType: "application/json" });
    const rest = await t.orgRequest("GET", "/allocation-reports/cloud_bill_by_service?year=2026&month=5");
    expect(JSON.parse(content.text)).toEqual(await rest.json());
    expect(JSON.parse(content.text).rows.length).toBe(1);

    expect((await rpc(t.org.key, "resources/read", { uri: "commitops://reports/no_such_report/2026-05" })).error.code).toBe(-32002);
    expect((await rpc(t.org.key, "resources/read", { uri: "commitops://reports/cloud_bill_by_service/2019-01" })).error.code).toBe(-32002);
    expect((await rpc(t.org.key, "resources/read", { uri: "file:///etc/passwd" })).error.code).toBe(-32602);
    // Without reports:read the report months are neither listed nor readable.
    expect((await rpc(readOnly, "resources/list")).result.resources).toEqual([]);
    expect((await rpc(readOnly, "resources/read", { uri })).error.code).toBe(-32602);
  });

  test("prompts: listed with arguments, filled in, naming only registered tools", async () => {
    const list = await rpc(t.org.key, "prompts/list");
    expect(list.result.prompts.map((p: any) => p.name).sort()).toEqual(["explain_monthly_bill", "monthly_commitment_review"]);
    const names = new Set(ALL_TOOLS.map((x) => x.name));
    for (const p of PROMPTS) {
      const got = await rpc(t.org.key, "prompts/get", { name: p.name, arguments: { month: "2026-03", provider: "azure" } });
      const text = got.result.messages[0].content.text as string;
      expect(text).toContain("2026-03");
      expect(text).toContain('provider="azure"');
      for (const tool of p.tools) {
        expect(names.has(tool)).toBe(true);
        expect(text).toContain(tool);
      }
      // Default month: the last complete one before NOW (2026-06-17).
      const dflt = await rpc(t.org.key, "prompts/get", { name: p.name });
      expect(dflt.result.messages[0].content.text).toContain("2026-05");
    }
    expect((await rpc(t.org.key, "prompts/get", { name: "explain_monthly_bill", arguments: { month: "2026-13" } })).error.code).toBe(-32602);
    expect((await rpc(t.org.key, "prompts/get", { name: "nope" })).error.code).toBe(-32602);
    expect((await rpc(t.org.key, "prompts/get", { name: "explain_monthly_bill", arguments: { extra: "x" } })).error.code).toBe(-32602);
    // A prompt naming a tool the scopes hide is neither listed nor served.
    expect((await rpc(readOnly, "prompts/list")).result.prompts.map((p: any) => p.name)).toEqual(["explain_monthly_bill"]);
    expect((await rpc(readOnly, "prompts/get", { name: "monthly_commitment_review" })).error.code).toBe(-32602);
  });

  test("a report month past the resource row cap is cut, says so and links the whole month as CSV", async () => {
    const org = await t.newOrg("Big month");
    const rows = Array.from({ length: RESOURCE_MAX_ROWS + 3 }, (_, i) => ({
      BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z", ChargePeriodStart: "2026-05-03T00:00:00Z", ChargePeriodEnd: "2026-05-03T01:00:00Z",
      ResourceId: `i-${String(i).padStart(6, "0")}`, BilledCost: "0.01", EffectiveCost: "0.01", ListCost: "0.01", ContractedCost: "0.01",
    }));
    await importCsvText(t, org.id, focusCsv(rows), { now: NOW });
    const read = await rpc(org.key, "resources/read", { uri: "commitops://reports/cloud_bill_by_resource/2026-05" });
    const doc = JSON.parse(read.result.contents[0].text);
    expect(doc.rows.length).toBe(RESOURCE_MAX_ROWS);
    expect(doc).toMatchObject({ truncated: true, total_rows: RESOURCE_MAX_ROWS + 3 });
    expect(doc.csv_url).toBe(`http://localhost/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_resource?year=2026&month=5&format=csv`);
  });

  test("a failure on our side (a broken query) is logged and answered generically, by tools and resources alike", async () => {
    // Last in the file: the table comes back afterwards, but nothing else may run meanwhile.
    await t.s.handle.query("ALTER TABLE billing_periods RENAME TO billing_periods_away");
    try {
      const read = await rpc(t.org.key, "resources/read", { uri: "commitops://reports/cloud_bill_by_service/2026-05" });
      expect(read.error.code).toBe(-32603);
      expect(read.error.message).toEndWith(FAILED_ON_OUR_SIDE);
      const call = await rpc(t.org.key, "tools/call", { name: "get_allocation_report", arguments: { report_type: "cloud_bill_by_service", month: "2026-05" } });
      expect(call.result).toMatchObject({ isError: true, content: [{ type: "text", text: FAILED_ON_OUR_SIDE }] });
      expect(JSON.stringify([read, call])).not.toContain("billing_periods");
    } finally {
      await t.s.handle.query("ALTER TABLE billing_periods_away RENAME TO billing_periods");
    }
  });
});
