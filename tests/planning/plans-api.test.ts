/**
 * Plans on request through the real app and database: POST /commitment-plans generates and
 * stores the plan the MCP tool `generate_commitment_plan` computes (compared field by field),
 * honours Idempotency-Key; POST /commitment-plans/preview sizes what-if settings (coverage
 * target, term/payment mix, upfront budget) with hand-computed figures and stores nothing;
 * validation, scopes/roles and org isolation.
 *
 * The data: m5.large in us-east-1 at $0.10/h (tests/planning/fixtures.ts), 7 instances every
 * hour of the 30 days before NOW, no active commitments. Per unit and month (730 h):
 *   on-demand 73.00;
 *   1-year no-upfront RI 0.062/h → cost 45.26, net savings 27.74, term 12 months, lock-in 365 d;
 *   3-year all-upfront RI 1051.20 upfront over 94,608,000 s → 0.04/h → cost 29.20 (all
 *   amortized upfront, nothing recurring), net savings 43.80, term 36 months, lock-in 1095 d.
 * Both options' optimum is the usage quantile at their discount (38 %, 60 %) of a flat 7: 7 units.
 */
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { makeUser } from "../oauth/helpers.ts";
import { connectMcp } from "../mcp/fixtures.ts";
import { OFFERS, seedCatalog, seedUsage, createTemplate as createTemplateOf, spec } from "./fixtures.ts";

const NOW = new Date("2026-06-17T12:00:00Z");
type Org = { id: string; key: string };

describeEachDb("commitment plans on request: generate (stored) and preview (what-if)", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let org: Org;
  let other: Org;
  let oneYear: any; // 1-year no-upfront RIs
  let threeYear: any; // 3-year all-upfront RIs (no upfront budget of its own)
  let theirs: any;
  const P = () => `/beta/v1/org/${org.id}/commitment-plans`;
  const post = (path: string, body: unknown, o: { key?: string; headers?: Record<string, string> } = {}) =>
    t.request("POST", `${P()}${path}`, { key: o.key ?? org.key, body, headers: o.headers });

  beforeAll(async () => {
    org = await t.newOrg("Plans API org");
    other = await t.newOrg("Other org");
    for (const o of [org, other]) {
      await seedCatalog(t.s.db, o.id);
      await seedUsage(t.s.db, o.id, NOW, 30 * 24, () => 7);
    }
    oneYear = await createTemplateOf(t, org, { name: "One year", configuration: { lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] } });
    threeYear = await createTemplateOf(t, org, { name: "Three year", configuration: { lookback_days: 30, contract_specs: [spec(OFFERS.threeYearAllUpfront)] } });
    theirs = await createTemplateOf(t, other, { name: "Theirs", configuration: { lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] } });
  });

  async function mcpPlan(o: Org, templateId: string) {
    const client = await connectMcp(t, o.key);
    try {
      const r: any = await client.callTool({ name: "generate_commitment_plan", arguments: { template_id: templateId } });
      expect(r.isError).toBeFalsy();
      return r.structuredContent;
    } finally {
      await client.close();
    }
  }

  const planCount = async (orgId: string) => Number((await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM commitment_plans WHERE org_id = $1", [orgId]))[0]!.n);

  // --- POST /commitment-plans ---------------------------------------------------------------

  test("POST generates and stores the plan the MCP tool generates for the same template and data (201, Location)", async () => {
    const tool = await mcpPlan(org, oneYear.id);
    const before = await planCount(org.id);
    const r = await post("", { template_id: oneYear.id });
    expect(r.status).toBe(201);
    const plan: any = await r.json();
    expect(r.headers.get("location")).toBe(`${P()}/${plan.id}`);
    expect(await planCount(org.id)).toBe(before + 1);
    expect(plan).toMatchObject({ template_id: oneYear.id, segment_id: oneYear.segment_id, provider: "aws", status: "generated", status_reason: null, execution_date: null, purchase_id: null, lookback_days: 30 });
    expect(plan.usage_from).toBe(tool.usage_window.from);
    expect(plan.usage_to).toBe(tool.usage_window.to);
    // Item by item, the same purchases with the same money as the tool shows.
    const fields = ["group_key", "region", "instance_type", "commitment_type", "contract_term", "payment_option", "amount", "upfront_cost", "monthly_cost", "monthly_net_savings", "expected_coverage", "expected_utilization"];
    const pick = (i: any) => Object.fromEntries(fields.map((f) => [f, i[f]]));
    expect(plan.items.map(pick)).toEqual(tool.items.map(pick));
    expect({ upfront_cost: plan.total_upfront_cost, monthly_cost: plan.monthly_cost, monthly_net_savings: plan.monthly_net_savings }).toEqual(tool.totals);
    // Hand-computed: 7 one-year units.
    expect(plan.items).toHaveLength(1);
    expect(plan.items[0]).toMatchObject({ amount: 7, upfront_cost: 0, monthly_cost: 316.82, monthly_net_savings: 194.18, expected_coverage: 1, expected_utilization: 1, lock_in_days: 365 });
    // Stored: GET shows the same document, and the list has it.
    const got = await t.request("GET", `${P()}/${plan.id}`, { key: org.key });
    expect(await got.json()).toEqual(plan);
  });

  test("POST with an Idempotency-Key replays the first answer and stores one plan; another body with the key is refused", async () => {
    const headers = { "idempotency-key": `gen-${driver}-1` };
    const before = await planCount(org.id);
    const first = await post("", { template_id: threeYear.id }, { headers });
    expect(first.status).toBe(201);
    const body = await first.json();
    const again = await post("", { template_id: threeYear.id }, { headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(await again.json()).toEqual(body);
    expect(await planCount(org.id)).toBe(before + 1);
    const reused = await post("", { template_id: oneYear.id }, { headers });
    expect(reused.status).toBe(422);
    expect(((await reused.json()) as any).code).toBe("idempotency_key_reused");
    expect(await planCount(org.id)).toBe(before + 1);
  });

  // --- POST /commitment-plans/preview ---------------------------------------------------------

  test("preview: a higher coverage target buys more, so saves more and pays more upfront (hand-computed figures)", async () => {
    const r = await post("/preview", {
      template_id: threeYear.id,
      overrides: { max_upfront_cost: 1_000_000 },
      settings: [{ coverage_target: 50 }, { coverage_target: 100 }, { coverage_target: 100, contract_specs: [spec(OFFERS.oneYearNoUpfront)] }],
    });
    expect(r.status).toBe(200);
    const body: any = await r.json();
    expect(body).toMatchObject({ template_id: threeYear.id, provider: "aws", currency: "USD", usage_window: { lookback_days: 30, to: NOW.toISOString() } });
    const [half, full, oneYr] = body.settings;
    // Direction: below the savings optimum (7 units) each unit more saves 43.80 a month and costs
    // 1,051.20 upfront, so the 100 % target (7 units) beats the 50 % one on savings and upfront.
    expect(full.monthly_net_savings).toBeGreaterThan(half.monthly_net_savings);
    expect(full.total_upfront_cost).toBeGreaterThan(half.total_upfront_cost);
    expect(full.coverage_reached).toBeGreaterThan(half.coverage_reached);
    // 50 %: at most 0.5 × 7 × 720 unit-hours covered → 3.5 units, whole RIs: 3.
    expect(half).toEqual({
      coverage_target: 50,
      max_upfront_cost: 1_000_000,
      contract_specs: [spec(OFFERS.threeYearAllUpfront)],
      item_count: 1,
      monthly_net_savings: 131.4, // 3 × 43.80
      term_net_savings: 4730.4, // 131.40 × 36 months
      total_upfront_cost: 3153.6, // 3 × 1,051.20
      monthly_cost: 87.6, // 3 × 29.20 amortized upfront
      monthly_recurring_cost: 0,
      lock_in_days: 1095,
      active_coverage: 0,
      coverage_reached: 42.857143, // 3 / 7
    });
    expect(full).toMatchObject({ coverage_target: 100, item_count: 1, monthly_net_savings: 306.6, term_net_savings: 11037.6, total_upfront_cost: 7358.4, monthly_cost: 204.4, monthly_recurring_cost: 0, lock_in_days: 1095, coverage_reached: 100 });
    // The term/payment mix: 1-year no-upfront RIs pay nothing upfront, everything monthly, lock in for a year.
    expect(oneYr).toMatchObject({
      contract_specs: [spec(OFFERS.oneYearNoUpfront)],
      item_count: 1,
      monthly_net_savings: 194.18,
      term_net_savings: 2330.16, // 194.18 × 12
      total_upfront_cost: 0,
      monthly_cost: 316.82,
      monthly_recurring_cost: 316.82,
      lock_in_days: 365,
      coverage_reached: 100,
    });
  });

  test("preview: a mixed term/payment setting weights the lock-in by the committed monthly amount", async () => {
    // Both specs, upfront budget for 3 three-year RIs: 3 × 3-year (29.20/month each) plus 4 ×
    // 1-year on the usage above them (45.26 each): 3 × 43.80 + 4 × 27.74 = 242.36 beats 7 one-year (194.18).
    const r = await post("/preview", { template_id: threeYear.id, settings: [{ max_upfront_cost: 3200, contract_specs: [spec(OFFERS.threeYearAllUpfront), spec(OFFERS.oneYearNoUpfront)] }] });
    expect(r.status).toBe(200);
    const [s]: any[] = ((await r.json()) as any).settings;
    const w3 = 3 * 29.2;
    const w1 = 4 * 45.26;
    expect(s).toMatchObject({ item_count: 2, monthly_net_savings: 242.36, total_upfront_cost: 3153.6, monthly_cost: 268.64, monthly_recurring_cost: 181.04, coverage_reached: 100 });
    expect(s.term_net_savings).toBe(131.4 * 36 + 110.96 * 12); // 4730.40 + 1331.52
    expect(s.lock_in_days).toBe(Math.round(((w3 * 1095 + w1 * 365) / (w3 + w1)) * 100) / 100); // 603.04
  });

  test("preview without overrides shows the totals POST would store", async () => {
    const preview: any = await (await post("/preview", { template_id: oneYear.id })).json();
    expect(preview.settings).toHaveLength(1);
    const stored: any = await (await post("", { template_id: oneYear.id })).json();
    expect(preview.settings[0]).toMatchObject({ coverage_target: null, item_count: stored.item_count, total_upfront_cost: stored.total_upfront_cost, monthly_cost: stored.monthly_cost, monthly_net_savings: stored.monthly_net_savings });
  });

  test("preview stores nothing: every table's rows are the same before and after", async () => {
    const tables = (await t.s.handle.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")).map((r) => r.tablename);
    const snapshot = async () => {
      const out: Record<string, string> = {};
      for (const name of tables) {
        // Authentication notes when a key was last used: not something a preview writes.
        if (name === "api_keys") continue;
        const [row] = await t.s.handle.query<{ n: number; h: string | null }>(`SELECT count(*)::int AS n, md5(string_agg(x::text, '|' ORDER BY x::text)) AS h FROM "${name}" x`);
        out[name] = `${row!.n}:${row!.h}`;
      }
      return out;
    };
    const before = await snapshot();
    const plans = await planCount(org.id);
    const settings = Array.from({ length: 10 }, (_, i) => ({ coverage_target: i * 10 + 10, max_upfront_cost: i * 1000 }));
    const r = await post("/preview", { template_id: threeYear.id, overrides: { contract_specs: [spec(OFFERS.threeYearAllUpfront), spec(OFFERS.oneYearNoUpfront)] }, settings });
    expect(r.status).toBe(200);
    const body: any = await r.json();
    expect(body.settings).toHaveLength(10);
    // Coverage never passes the target (no active commitments here).
    for (const [i, s] of body.settings.entries()) expect(s.coverage_reached).toBeLessThanOrEqual(settings[i]!.coverage_target + 1e-6);
    expect(await planCount(org.id)).toBe(plans);
    expect(await snapshot()).toEqual(before);
  });

  // --- validation ----------------------------------------------------------------------------

  test("validation: unknown or another org's template 404; out-of-range target, too many settings, unsellable specs 422 with field errors", async () => {
    for (const path of ["", "/preview"]) {
      const unknown = await post(path, { template_id: crypto.randomUUID() });
      expect(unknown.status).toBe(404);
      const foreign = await post(path, { template_id: theirs.id });
      expect(foreign.status).toBe(404);
      expect(((await foreign.json()) as any).code).toBe("not_found");
      expect((await post(path, { template_id: "not-a-uuid" })).status).toBe(422);
    }
    const errorsOf = async (body: unknown) => {
      const r = await post("/preview", body);
      expect(r.status).toBe(422);
      const e: any = await r.json();
      expect(e.type).toBe("validation_error");
      return e.errors as Record<string, string[]>;
    };
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, settings: [{ coverage_target: 100.5 }] }))).toEqual(["settings.0.coverage_target"]);
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, overrides: { coverage_target: -1 } }))).toEqual(["overrides.coverage_target"]);
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, settings: Array.from({ length: 11 }, () => ({ coverage_target: 50 })) }))).toEqual(["settings"]);
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, settings: [] }))).toEqual(["settings"]);
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, settings: [{ max_upfront_cost: -5 }] }))).toEqual(["settings.0.max_upfront_cost"]);
    expect(Object.keys(await errorsOf({ template_id: oneYear.id, settings: [{ lookback: 3 }] }))).toEqual(["settings.0.lookback"]);
    // Contract specs the provider does not sell: the template rules.
    const specs = await errorsOf({
      template_id: oneYear.id,
      settings: [{}, { contract_specs: [{ commitment_type: "spend_cud", contract_term: "one_year", payment_option: "no_upfront" }, { commitment_type: "reserved_instance", contract_term: "thirty_day_gris", payment_option: "all_upfront" }] }],
    });
    expect(Object.keys(specs).sort()).toEqual(["settings.1.contract_specs.0.commitment_type", "settings.1.contract_specs.1.payment_option"]);
  });

  // --- scopes, roles, isolation ----------------------------------------------------------------

  test("scopes and roles: generating needs templates:write (a viewer's or member's key is refused), previewing templates:read", async () => {
    const before = await planCount(org.id);
    const readOnly = await createApiKey(t.s.db, { orgId: org.id, scopes: ["templates:read"] });
    expect((await post("", { template_id: oneYear.id }, { key: readOnly.key })).status).toBe(403);
    expect((await post("/preview", { template_id: oneYear.id }, { key: readOnly.key })).status).toBe(200);
    const noTemplates = await createApiKey(t.s.db, { orgId: org.id, scopes: ["reports:read"] });
    expect((await post("/preview", { template_id: oneYear.id }, { key: noTemplates.key })).status).toBe(403);
    for (const role of ["viewer", "member"] as const) {
      const u = await makeUser(t, [{ orgId: org.id, role }]);
      const key = await createApiKey(t.s.db, { orgId: org.id, createdBy: u.id, scopes: ["templates:read", "templates:write"] });
      const refused = await post("", { template_id: oneYear.id }, { key: key.key });
      expect(refused.status).toBe(403);
      expect((await post("/preview", { template_id: oneYear.id }, { key: key.key })).status).toBe(200);
    }
    expect(await planCount(org.id)).toBe(before);
    const admin = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const adminKey = await createApiKey(t.s.db, { orgId: org.id, createdBy: admin.id, scopes: ["templates:read", "templates:write"] });
    expect((await post("", { template_id: oneYear.id }, { key: adminKey.key })).status).toBe(201);
  });

  test("org isolation: another org's key is refused on this org's routes; each org sees only its own plans", async () => {
    expect((await post("", { template_id: oneYear.id }, { key: other.key })).status).toBe(403);
    expect((await post("/preview", { template_id: oneYear.id }, { key: other.key })).status).toBe(403);
    const r = await t.request("POST", `/beta/v1/org/${other.id}/commitment-plans`, { key: other.key, body: { template_id: theirs.id } });
    expect(r.status).toBe(201);
    const theirPlan: any = await r.json();
    expect((await t.request("GET", `${P()}/${theirPlan.id}`, { key: org.key })).status).toBe(404);
    const mine: any[] = await (await t.request("GET", `${P()}?page_size=500`, { key: org.key })).json();
    expect(mine.map((p) => p.id)).not.toContain(theirPlan.id);
    // Their template through their route works; ours through theirs does not exist.
    expect((await t.request("POST", `/beta/v1/org/${other.id}/commitment-plans/preview`, { key: other.key, body: { template_id: oneYear.id } })).status).toBe(404);
  });
});
