/**
 * The commitment read API (`/commitments`, `/commitments/{id}`, `/commitment-summary`,
 * `/billing-data-freshness`): the same lib functions as the assistant's commitment, coverage and
 * freshness tools, so the same figures to the cent; the Effective Savings Rate and the lock-in
 * against hand-computed values of a seeded case; org isolation, roles, bad parameters, and
 * every answer validated against the OpenAPI document (objects closed). Both drivers.
 */
import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { makeUser } from "../oauth/helpers.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { commitments } from "../../lib/db/schema/index.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";
import { connectMcp } from "../mcp/fixtures.ts";

const NOW = new Date("2026-06-17T12:00:00Z");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (ms: number) => new Date(NOW.getTime() + ms);

async function callTool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}

/**
 * Five commitments with known costs and ends (NOW = 2026-06-17T12:00Z):
 * A aws SP 3 $/h, ends in 8760 h (12 months of 730 h); B aws all-upfront RI, 8760 upfront over a
 * 8760 h term (1 $/h), ends in 4380 h (6 months); C azure insured, 1 $/h, ends in 3 years but its
 * lock-in ends in 730 h (1 month); D expired; E not started.
 */
async function seedInventory(t: TestContext, orgId: string) {
  const rows = await t.s.db
    .insert(commitments)
    .values([
      { orgId, provider: "aws", providerCommitmentId: "sp-a", name: "A", commitmentType: "compute_savings_plan", category: "Spend", contractTerm: "one_year", paymentOption: "no_upfront", startsAt: at(-100 * DAY), endsAt: at(8760 * HOUR), amount: "3", upfrontCost: "0", recurringHourlyCost: "3", holdingAccountId: "acct-a" },
      { orgId, provider: "aws", providerCommitmentId: "ri-b", name: "B", commitmentType: "reserved_instance", category: "Usage", contractTerm: "one_year", paymentOption: "all_upfront", offeringClass: "standard", region: "us-east-1", instanceType: "m5.large", instanceFamily: "m5", startsAt: at(-4380 * HOUR), endsAt: at(4380 * HOUR), amount: "2", upfrontCost: "8760", recurringHourlyCost: "0", holdingAccountId: "acct-b" },
      { orgId, provider: "azure", providerCommitmentId: "ro-c", name: "C", commitmentType: "reservation", category: "Usage", contractTerm: "thirty_day_gris", paymentOption: "no_upfront", startsAt: at(-10 * DAY), endsAt: at(3 * 365 * DAY), amount: "1", upfrontCost: "0", recurringHourlyCost: "1", insured: true, feeRate: "0.2", lockInEndsAt: at(730 * HOUR) },
      { orgId, provider: "aws", providerCommitmentId: "ri-d", name: "D", commitmentType: "reserved_instance", category: "Usage", contractTerm: "one_year", paymentOption: "no_upfront", startsAt: at(-375 * DAY), endsAt: at(-10 * DAY), amount: "1", upfrontCost: "0", recurringHourlyCost: "0.5" },
      { orgId, provider: "gcp", providerCommitmentId: "cud-e", name: "E", commitmentType: "spend_cud", category: "Spend", contractTerm: "one_year", paymentOption: "no_upfront", startsAt: at(10 * DAY), endsAt: at(375 * DAY), amount: "2", upfrontCost: "0", recurringHourlyCost: "2" },
    ])
    .returning({ id: commitments.id, name: commitments.name });
  return Object.fromEntries(rows.map((r) => [r.name!, r.id])) as Record<"A" | "B" | "C" | "D" | "E", string>;
}

/**
 * AWS billing with known figures. May: a savings plan Used 60 (list 100) in acct-a, Unused 10 on
 * acct-hold, 40 on demand. June: Used 30 (list 45), 15 on demand.
 */
async function seedBilling(t: TestContext, orgId: string) {
  const sp = { CommitmentDiscountId: "arn:aws:savingsplans::ba-1:savingsplan/sp-esr", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Compute Savings Plans", PricingCategory: "Committed" };
  const row = (month: string, next: string, day: number, o: Record<string, string | number | null>) => ({
    BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: `${month}-0${day}T00:00:00Z`, ChargePeriodEnd: `${month}-0${day}T23:00:00Z`,
    ServiceName: "Amazon Elastic Compute Cloud", ...o,
  });
  const od = (cost: string) => ({ BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost });
  await importCsvText(
    t,
    orgId,
    focusCsv([
      row("2026-05", "2026-06", 3, { ...sp, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "60", ListCost: "100", ContractedCost: "100", CommitmentDiscountStatus: "Used" }),
      row("2026-05", "2026-06", 3, { ...sp, SubAccountId: "acct-hold", SubAccountName: "Hold", EffectiveCost: "10", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" }),
      row("2026-05", "2026-06", 4, { SubAccountId: "acct-a", SubAccountName: "A", ...od("40") }),
      row("2026-06", "2026-07", 2, { ...sp, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "30", ListCost: "45", ContractedCost: "45", CommitmentDiscountStatus: "Used" }),
      row("2026-06", "2026-07", 3, { SubAccountId: "acct-a", SubAccountName: "A", ...od("15") }),
    ]),
    { now: NOW },
  );
}

/** Closes every object that lists properties (as tests/foundation/openapi-responses does): an undocumented field fails. */
function closed(node: any): any {
  if (Array.isArray(node)) return node.map(closed);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === "properties" && v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([n, s]) => [n, closed(s)])) : closed(v);
  if (out.properties && typeof out.properties === "object" && !("additionalProperties" in out)) out.additionalProperties = false;
  return out;
}

describeEachDb("commitments API", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: randomBytes(32).toString("base64") } });

  async function get(org: { id: string; key: string }, path: string, status = 200) {
    const r = await t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: org.key });
    const body: any = await r.json();
    expect(r.status, `${path}: ${JSON.stringify(body).slice(0, 500)}`).toBe(status);
    return { body, headers: r.headers };
  }

  /** Validates an answer against the OpenAPI document's schema of `GET <template>` 200. */
  async function documented(template: string, body: unknown) {
    const doc: any = await (await t.request("GET", "/openapi.json", { key: null })).json();
    const op = doc.paths[`/beta/v1/org/{org_id}${template}`]?.get;
    expect(op, template).toBeDefined();
    expect(op.tags).toBeDefined();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const validate = ajv.compile({ ...closed(op.responses["200"].content["application/json"].schema), components: { ...doc.components, schemas: closed(doc.components.schemas) } });
    if (!validate(body)) throw new Error(`${template}: ${ajv.errorsText(validate.errors)}`);
  }

  test("list: every commitment with its status, filters by provider and status, expiring soonest first, paging; the same objects as list_commitments", async () => {
    const org = await t.newOrg("Inventory");
    const ids = await seedInventory(t, org.id);
    const { body: all, headers } = await get(org, "/commitments");
    expect(all.map((c: any) => c.name)).toEqual(["D", "B", "A", "C", "E"]);
    expect(Object.fromEntries(all.map((c: any) => [c.name, c.status]))).toEqual({ A: "active", B: "active", C: "active", D: "expired", E: "not_started" });
    expect(JSON.parse(headers.get("x-pagination")!)).toMatchObject({ total_count: 5, page: 1 });
    const b = all.find((c: any) => c.name === "B");
    expect(b).toMatchObject({ id: ids.B, provider: "aws", provider_commitment_id: "ri-b", commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "all_upfront", upfront_cost: 8760, recurring_hourly_cost: 0, amount: 2, holding_account_id: "acct-b", days_until_expiry: 183, insured: false });
    await documented("/commitments", all);

    // The assistant's list shows the same objects.
    const client = await connectMcp(t, org.key);
    const tool = await callTool(client, "list_commitments", { status: "all" });
    expect(tool.commitments).toEqual(all);
    const expiringTool = await callTool(client, "list_expiring_commitments", { within_days: 365 });

    expect((await get(org, "/commitments?provider=azure")).body.map((c: any) => c.name)).toEqual(["C"]);
    expect((await get(org, "/commitments?status=expired")).body.map((c: any) => c.name)).toEqual(["D"]);
    expect((await get(org, "/commitments?status=active&provider=aws")).body.map((c: any) => c.name)).toEqual(["B", "A"]);
    // Active ones ending within N days, soonest first: E (not started) and D (ended) never.
    expect((await get(org, "/commitments?expiring_within_days=200")).body.map((c: any) => c.name)).toEqual(["B"]);
    const soon = (await get(org, "/commitments?expiring_within_days=400")).body;
    expect(soon.map((c: any) => c.name)).toEqual(["B", "A"]);
    expect((await get(org, "/commitments?expiring_within_days=365&status=active")).body).toEqual(expiringTool.commitments);
    expect((await get(org, "/commitments?expiring_within_days=3650")).body.map((c: any) => c.name)).toEqual(["B", "A", "C"]);

    const page2 = await get(org, "/commitments?page=2&page_size=2");
    expect(page2.body.map((c: any) => c.name)).toEqual(["A", "C"]);
    expect(JSON.parse(page2.headers.get("x-pagination")!)).toEqual({ page: 2, page_size: 2, total_count: 5, total_pages: 3 });
    await client.close();
  });

  test("one commitment with its performance (as get_commitment); another org's is 404", async () => {
    const org = await t.newOrg("One commitment");
    const other = await t.newOrg("Someone else");
    const ids = await seedInventory(t, org.id);
    await seedInventory(t, other.id);
    const { body } = await get(org, `/commitments/${ids.C}`);
    expect(body).toMatchObject({ id: ids.C, name: "C", insured: true, fee_rate: 0.2, lock_in_ends_at: at(730 * HOUR).toISOString(), status: "active" });
    expect(body.performance).toEqual({ start_date: "2026-05-18", end_date: "2026-06-17", used_cost: 0, unused_cost: 0, utilization: null, covered_ondemand_cost: 0, savings: 0 });
    await documented("/commitments/{commitment_id}", body);
    const client = await connectMcp(t, org.key);
    const tool = await callTool(client, "get_commitment", { commitment_id: ids.C });
    expect(body).toEqual({ ...tool.commitment, performance: tool.performance });
    await client.close();

    // Another org's commitment, through this org's path: 404; and this org's id through the other org's path too.
    const notFound = await get(other, `/commitments/${ids.C}`, 404);
    expect(notFound.body.code).toBe("not_found");
    await get(org, `/commitments/${crypto.randomUUID()}`, 404);
    // Another org's path with this org's key: 403.
    expect((await t.request("GET", `/beta/v1/org/${other.id}/commitments/${ids.C}`, { key: org.key })).status).toBe(403);
  });

  test("summary: ESR and figures per month and for the range against hand-computed values, equal to get_coverage_and_utilization; finalized once frozen", async () => {
    const org = await t.newOrg("ESR");
    await seedBilling(t, org.id);
    const { body } = await get(org, "/commitment-summary?from=2026-05&to=2026-06");
    expect(body.from).toBe("2026-05");
    expect(body.to).toBe("2026-06");
    expect(body.months).toEqual([{ month: "2026-05", status: "in_progress" }, { month: "2026-06", status: "in_progress" }]);
    // May: used 60, unused 10 → cost 70; covered 100, on demand 40 → on-demand equivalent 140;
    // savings 100 − 60 = 40, realized 40 − 10 = 30; coverage 100/140, utilization 60/70, ESR 30/140.
    expect(body.rows[0]).toEqual({
      month: "2026-05", status: "in_progress", currency: "USD",
      commitment_used_cost: 60, commitment_unused_allocated_cost: 10, commitment_cost: 70, covered_ondemand_cost: 100, ondemand_cost: 40,
      ondemand_equivalent_cost: 140, savings: 40, realized_savings: 30, coverage: 0.714286, utilization: 0.857143, effective_savings_rate: 0.214286,
    });
    // June: used 30, covered 45, on demand 15 → 60; savings = realized = 15; ESR 15/60.
    expect(body.rows[1]).toEqual({
      month: "2026-06", status: "in_progress", currency: "USD",
      commitment_used_cost: 30, commitment_unused_allocated_cost: 0, commitment_cost: 30, covered_ondemand_cost: 45, ondemand_cost: 15,
      ondemand_equivalent_cost: 60, savings: 15, realized_savings: 15, coverage: 0.75, utilization: 1, effective_savings_rate: 0.25,
    });
    // The range: realized 45 of 200 on-demand equivalent = 0.225 (not the mean of the months' rates).
    expect(body.totals).toEqual([
      {
        currency: "USD", commitment_used_cost: 90, commitment_unused_allocated_cost: 10, commitment_cost: 100, covered_ondemand_cost: 145, ondemand_cost: 55,
        ondemand_equivalent_cost: 200, savings: 55, realized_savings: 45, coverage: 0.725, utilization: 0.9, effective_savings_rate: 0.225,
      },
    ]);
    await documented("/commitment-summary", body);

    // The assistant's figures for the same window, to the cent.
    const client = await connectMcp(t, org.key);
    const tool = await callTool(client, "get_coverage_and_utilization", { group_by: "period", start_month: "2026-05", end_month: "2026-06" });
    const FIGURES = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "ondemand_cost", "savings", "coverage", "utilization"];
    const pick = (r: any) => Object.fromEntries(["month", "currency", ...FIGURES].map((k) => [k, r[k]]));
    expect(body.rows.map(pick)).toEqual(tool.rows.map(pick));
    expect(body.totals.map((r: any) => pick({ ...r, month: undefined }))).toEqual(tool.totals.map((r: any) => pick({ ...r, month: undefined })));
    expect(body.months).toEqual(tool.months);
    await client.close();

    // Default: the last 12 months up to the current one.
    const d = (await get(org, "/commitment-summary")).body;
    expect(d.from).toBe("2025-07");
    expect(d.to).toBe("2026-06");
    expect(d.months).toHaveLength(12);
    expect(d.months[0]).toEqual({ month: "2025-07", status: "no_data" });
    expect(d.rows.map((r: any) => r.month)).toEqual(["2026-05", "2026-06"]);
    expect(d.totals).toEqual(body.totals);

    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: org.id });
    const frozen = (await get(org, "/commitment-summary?from=2026-05&to=2026-06")).body;
    expect(frozen.months).toEqual([{ month: "2026-05", status: "finalized" }, { month: "2026-06", status: "in_progress" }]);
    expect(frozen.rows[0]).toEqual({ ...body.rows[0], status: "finalized" });
    expect(frozen.totals).toEqual(body.totals);
  });

  test("lock-in: remaining term of the active commitments weighted by their committed cost per hour, in months", async () => {
    const org = await t.newOrg("Lock-in");
    await seedInventory(t, org.id);
    const { body } = await get(org, "/commitment-summary");
    expect(body.rows).toEqual([]);
    // A: 3 $/h × 12 months; B: 8760 upfront ÷ 8760 h = 1 $/h × 6 months; C (insured): 1 $/h × 1 month
    // (its lock-in, not its 3-year term); D expired and E not started are left out.
    // (36 + 6 + 1) ÷ 5 = 8.6 months = 0.716… years.
    expect(body.lock_in).toEqual({ as_of: NOW.toISOString(), weighted_remaining_months: 8.6, weighted_remaining_years: 0.72, commitment_count: 3, committed_hourly_cost: 5 });
    // AWS only: (36 + 6) ÷ 4 = 10.5 months.
    expect((await get(org, "/commitment-summary?provider=aws")).body.lock_in).toEqual({ as_of: NOW.toISOString(), weighted_remaining_months: 10.5, weighted_remaining_years: 0.88, commitment_count: 2, committed_hourly_cost: 4 });
    // No commitment: null.
    expect((await get(org, "/commitment-summary?provider=gcp")).body.lock_in).toMatchObject({ weighted_remaining_months: null, weighted_remaining_years: null, commitment_count: 0 });
  });

  test("billing data freshness: each connection as get_billing_data_freshness shows it, with its id and provider", async () => {
    const org = await t.newOrg("Freshness");
    const created = await t.request("POST", `/beta/v1/org/${org.id}/billing-connections`, {
      key: org.key,
      body: { name: "AWS payer", kind: "aws_data_exports", config: { bucket: "focus-bucket", export_name: "focus", region: "us-east-1", access_key_id: "AKIAFRESHNESSTEST001" }, secrets: { secret_access_key: "not-the-secret" } },
    });
    expect(created.status).toBe(201);
    const conn: any = await created.json();
    const { body, headers } = await get(org, "/billing-data-freshness");
    expect(body).toEqual([
      { id: conn.id, name: "AWS payer", provider: "aws", kind: "aws_data_exports", status: "pending", enabled: true, last_synced_at: null, next_sync_at: body[0].next_sync_at, newest_month: null, newest_month_imported_at: null, closed_months: [], last_error_cause: null },
    ]);
    expect(JSON.parse(headers.get("x-pagination")!)).toMatchObject({ total_count: 1 });
    expect(JSON.stringify(body)).not.toContain("focus-bucket");
    await documented("/billing-data-freshness", body);
    const client = await connectMcp(t, org.key);
    expect((await callTool(client, "get_billing_data_freshness")).connections).toEqual(body);
    await client.close();
  });

  test("a viewer reads all four (reports:read); a key without reports:read is refused", async () => {
    const org = await t.newOrg("Roles");
    const ids = await seedInventory(t, org.id);
    const viewer = await makeUser(t, [{ orgId: org.id, role: "viewer" }]);
    const viewerKey = (await createApiKey(t.s.db, { orgId: org.id, createdBy: viewer.id, scopes: ["reports:read"] })).key;
    for (const path of ["/commitments", `/commitments/${ids.A}`, "/commitment-summary", "/billing-data-freshness"]) {
      expect((await t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: viewerKey })).status, path).toBe(200);
    }
    const noReports = (await createApiKey(t.s.db, { orgId: org.id, scopes: ["templates:read", "connections:read"] })).key;
    for (const path of ["/commitments", `/commitments/${ids.A}`, "/commitment-summary", "/billing-data-freshness"]) {
      const r = await t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: noReports });
      expect(r.status, path).toBe(403);
    }
  });

  test("bad parameters → 400 naming the field", async () => {
    const org = t.org;
    const bad = async (path: string, field: string) => {
      const r = await t.orgRequest("GET", path);
      const body: any = await r.json();
      expect(r.status, `${path}: ${JSON.stringify(body)}`).toBe(400);
      expect(JSON.stringify(body), path).toContain(field);
    };
    await bad("/commitments?provider=oracle", "provider");
    await bad("/commitments?status=pending", "status");
    await bad("/commitments?expiring_within_days=0", "expiring_within_days");
    await bad("/commitments?expiring_within_days=1e2", "expiring_within_days");
    await bad("/commitments?expiring_within_days=99999", "expiring_within_days");
    await bad("/commitments?expiring_within_days=30&status=expired", "status");
    await bad("/commitments?page_size=0", "page_size");
    await bad("/commitments/not-a-uuid", "commitment_id");
    await bad(`/commitments/${crypto.randomUUID()}?lookback_days=0`, "lookback_days");
    await bad("/commitment-summary?from=2026-13", "from");
    await bad("/commitment-summary?from=May%202026", "from");
    await bad("/commitment-summary?to=2026-07", "to");
    await bad("/commitment-summary?from=2026-06&to=2026-05", "to");
    await bad("/commitment-summary?from=2023-01&to=2026-06", "from");
    await bad("/commitment-summary?provider=ibm", "provider");
    await bad("/billing-data-freshness?page=0", "page");
    expect(org.id).toBeTruthy();
  });
});
