import { expect, test, beforeAll } from "bun:test";
import { parse } from "csv-parse/sync";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { setReportHidden } from "../../lib/reports/service.ts";
import { REPORTS } from "../../lib/reports/catalog.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, importCsvText } from "./helpers.ts";

const NOW = new Date("2026-06-10T12:00:00Z");
const row = (account: string, name: string, cost: string, extra: Record<string, string> = {}) => ({
  SubAccountId: account, SubAccountName: name, BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z",
  ChargePeriodStart: "2026-05-03T00:00:00Z", ChargePeriodEnd: "2026-05-03T01:00:00Z", BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost, ...extra,
});

describeEachDb("allocation reports over HTTP", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  const base = "/allocation-reports";

  beforeAll(async () => {
    await importCsvText(t, t.org.id, focusCsv([
      row("a1", 'Acme, "Ops"\nTeam', "12.5", { ResourceId: "=HYPERLINK(\"http://x\")" }),
      row("a2", "=SUM(A1:A9)", "3", { ServiceName: "-svc", ResourceId: "@evil" }),
      row("a3", "+cmd|' /C calc'!A0", "1", { ResourceId: "\tTabbed" }),
      row("a4", "-2 negatives", "-5", { ChargeCategory: "Credit", ChargeFrequency: "One-Time", ResourceId: "\rcr" }),
    ]));
    await closeBillingPeriod(t.s.db, t.org.id, "aws", "2026-05", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: t.org.id });
  });

  test("the catalog: every category, both row grains, all three cadences, descriptors complete", async () => {
    const r = await t.orgRequest("GET", base);
    expect(r.status).toBe(200);
    const list = await r.json();
    const types = list.map((d: any) => d.report_type);
    for (const name of ["premiums_and_rebates_by_account", "premiums_and_rebates_by_child_org", "commitment_cost_by_account", "commitment_cost_by_service", "commitment_cost_daily", "cloud_bill_by_account", "cloud_bill_by_service"]) expect(types).toContain(name);
    expect(new Set(list.map((d: any) => d.category))).toEqual(new Set(["premiums_and_rebates", "commitment", "cloud_bill"]));
    expect(new Set(list.map((d: any) => d.row_grain))).toEqual(new Set(["monthly", "daily"]));
    expect(new Set(list.map((d: any) => d.update_cadence))).toEqual(new Set(["daily", "on_period_close", "static"]));
    for (const d of list) {
      expect(Object.keys(d).sort()).toEqual(["category", "description", "name", "output_fields", "params", "report_type", "row_grain", "update_cadence"]);
      for (const p of d.params) expect(Object.keys(p).sort()).toEqual(["description", "name", "required", "type"]);
      for (const f of d.output_fields) {
        expect(f.name).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(["string", "number", "boolean"]).toContain(f.type);
      }
    }
    expect(list.find((d: any) => d.report_type === "commitment_cost_daily").row_grain).toBe("daily");
  });

  test("JSON rows use the output_fields names, order and types", async () => {
    const r = await t.orgRequest("GET", `${base}/cloud_bill_by_account?year=2026&month=5`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/json");
    const body = await r.json();
    expect(Object.keys(body)).toEqual(["report_type", "year", "month", "period_status", "rows"]);
    expect(body).toMatchObject({ report_type: "cloud_bill_by_account", year: 2026, month: 5, period_status: "finalized" });
    const fields = REPORTS.find((x) => x.report_type === "cloud_bill_by_account")!.output_fields;
    expect(body.rows.length).toBe(4);
    for (const x of body.rows) {
      expect(Object.keys(x)).toEqual(fields.map((f) => f.name));
      for (const f of fields) if (x[f.name] !== null) expect(typeof x[f.name]).toBe(f.type);
    }
    expect(body.rows.find((x: any) => x.account_id === "a4")).toMatchObject({ other_cost: -5, total_cost: -5, ondemand_cost: 0 });
  });

  test("CSV: RFC 4180 download, header row, quoting, formula injection neutralised, negatives stay numbers", async () => {
    for (const type of ["cloud_bill_by_account", "cloud_bill_by_resource"]) {
      const r = await t.orgRequest("GET", `${base}/${type}?year=2026&month=5&format=csv`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      expect(r.headers.get("content-disposition")).toBe(`attachment; filename="${type}-2026-05.csv"`);
      expect(r.body).toBeInstanceOf(ReadableStream);
      const text = await r.text();
      expect(text.endsWith("\r\n")).toBe(true);
      const fields = REPORTS.find((x) => x.report_type === type)!.output_fields.map((f) => f.name);
      expect(text.split("\r\n")[0]).toBe(fields.join(","));
      const rows = parse(text, { columns: true }) as Record<string, string>[];
      expect(rows.length).toBe(4);
      const by = Object.fromEntries(rows.map((x) => [x.account_id, x]));
      expect(by.a4!.total_cost).toBe("-5.00");
      expect(by.a4!.other_cost).toBe("-5.00");
      expect(by.a1!.total_cost).toBe("12.50");
      if (type === "cloud_bill_by_account") {
        expect(by.a1!.account_name).toBe('Acme, "Ops"\nTeam');
        expect(text).toContain('"Acme, ""Ops""\nTeam"');
        expect(by.a2!.account_name).toBe("'=SUM(A1:A9)");
        expect(by.a3!.account_name).toBe("'+cmd|' /C calc'!A0");
        expect(by.a4!.account_name).toBe("'-2 negatives");
      } else {
        expect(by.a1!.resource_id).toBe("'=HYPERLINK(\"http://x\")");
        expect(by.a2!.resource_id).toBe("'@evil");
        expect(by.a2!.service_name).toBe("'-svc");
        expect(by.a3!.resource_id).toBe("'\tTabbed");
        expect(by.a4!.resource_id).toBe("'\rcr");
      }
    }
  });

  test("400 naming the parameter for each invalid query parameter", async () => {
    const cases: [string, string][] = [
      ["cloud_bill_by_account?month=5", "year"],
      ["cloud_bill_by_account?year=2026", "month"],
      ["cloud_bill_by_account?year=abc&month=5", "year"],
      ["cloud_bill_by_account?year=2026&month=13", "month"],
      ["cloud_bill_by_account?year=2026&month=0", "month"],
      ["cloud_bill_by_account?year=2026&month=1.5", "month"],
      ["cloud_bill_by_account?year=2026&month=5&format=xlsx", "format"],
      ["cloud_bill_by_account?year=2026&month=5&provider=ibm", "provider"],
      ["cloud_bill_by_account?year=2026&month=5&account_id=", "account_id"],
      ["cloud_bill_by_account?year=2026&month=5&colour=red", "colour"],
      ["cloud_bill_by_service?year=2026&month=5&account_id=a1", "account_id"],
      ["premiums_and_rebates_by_child_org?year=2026&month=5&child_org_id=nope", "child_org_id"],
      ["cloud_bill_by_account/periods?year=2026", "year"],
      ["cloud_bill_by_account/periods?provider=oracle", "provider"],
    ];
    for (const [path, param] of cases) {
      const r = await t.orgRequest("GET", `${base}/${path}`);
      const b = await r.json();
      expect(r.status, path).toBe(400);
      expect(b.errors[param], path).toBeArray();
      expect(b.message).toContain(`\`${param}\``);
      expect(b).toMatchObject({ type: "invalid_request", code: "invalid_parameter", status: "BAD_REQUEST" });
    }
  });

  test("404: unknown report, hidden report, period not available", async () => {
    const unknown = await t.orgRequest("GET", `${base}/no_such_report?year=2026&month=5`);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).code).toBe("not_found");
    expect((await t.orgRequest("GET", `${base}/no_such_report/periods`)).status).toBe(404);

    const other = await t.newOrg("hiding org");
    await setReportHidden(t.s.db, other.id, "cloud_bill_by_service", true);
    const list = await (await t.request("GET", `/beta/v1/org/${other.id}${base}`, { key: other.key })).json();
    expect(list.map((d: any) => d.report_type)).not.toContain("cloud_bill_by_service");
    for (const p of ["cloud_bill_by_service?year=2026&month=6", "cloud_bill_by_service/periods"]) {
      const r = await t.request("GET", `/beta/v1/org/${other.id}${base}/${p}`, { key: other.key });
      expect(r.status).toBe(404);
      expect((await r.json()).code).toBe("not_found");
    }
    // Hidden for that org only.
    expect((await t.orgRequest("GET", `${base}/cloud_bill_by_service/periods`)).status).toBe(200);

    for (const q of ["year=2019&month=1", "year=2026&month=9"]) {
      const r = await t.orgRequest("GET", `${base}/cloud_bill_by_service?${q}`);
      const b = await r.json();
      expect(r.status).toBe(404);
      expect(b).toMatchObject({ code: "period_not_available", type: "not_found", status: "NOT_FOUND" });
    }
  });

  test("auth: no key 401, key without reports:read 403, another org's reports 403", async () => {
    const none = await t.orgRequest("GET", base, { key: null });
    expect(none.status).toBe(401);
    const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["estimates:read"] });
    for (const p of [base, `${base}/cloud_bill_by_account?year=2026&month=5&format=csv`, `${base}/cloud_bill_by_account/periods`]) {
      const r = await t.orgRequest("GET", p, { key: k.key });
      expect(r.status).toBe(403);
      expect((await r.json()).code).toBe("insufficient_scope");
    }
    const other = await t.newOrg("B");
    const r = await t.request("GET", `/beta/v1/org/${t.org.id}${base}/cloud_bill_by_account?year=2026&month=5`, { key: other.key });
    expect(r.status).toBe(403);
    const post = await t.orgRequest("POST", base);
    expect(post.status).toBe(405);
  });
});
