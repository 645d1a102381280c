import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createCustomSegment } from "../../lib/segments/service.ts";
import { commitments } from "../../lib/db/schema/index.ts";

const NOW = new Date("2026-03-15T08:30:00Z");
const SPEC = { commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "no_upfront" };
const BODY = {
  provider: "aws",
  name: "Compute nightly",
  description: "Our plan",
  configuration: { max_upfront_cost: 1000, lookback_days: 14, contract_specs: [SPEC], resource_ids: ["i-1"], renewal_commitment_ids: [] },
  auto_purchase: { schedule: "weekly", min_monthly_savings: 50, enabled: true, start_date: "2026-03-01", end_date: "2026-12-31" },
};

describeEachDb("commitment plan templates", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  const path = "/commitment-plan-templates";

  async function create(body: Record<string, unknown> = BODY) {
    const r = await t.orgRequest("POST", path, { body });
    expect(r.status).toBe(200);
    return r.json();
  }
  async function templateCount(orgId = t.org.id): Promise<number> {
    const [r] = await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitment_plan_templates WHERE org_id = $1", [orgId]);
    return Number(r!.n);
  }
  async function expect422(body: unknown, field: string, method = "POST", p = path) {
    const before = await templateCount();
    const r = await t.orgRequest(method, p, { body });
    const b = await r.json();
    expect(r.status).toBe(422);
    expect(b.type).toBe("validation_error");
    expect(Object.keys(b.errors)).toContain(field);
    expect(await templateCount()).toBe(before);
    return b;
  }

  test("list: the provider segment is created on first use with the three system templates", async () => {
    const r = await t.orgRequest("GET", `${path}?provider=aws`);
    expect(r.status).toBe(200);
    const list = await r.json();
    expect(list.map((x: any) => x.name)).toEqual(["Recommended", "Balanced", "High Savings"]);
    expect(list.every((x: any) => x.is_system_generated === true && x.auto_purchase === null)).toBe(true);
    expect(new Set(list.map((x: any) => x.segment_id)).size).toBe(1);
    const [rec, bal, high] = list;
    expect(rec.configuration.contract_specs.every((s: any) => s.contract_term === "thirty_day_gris" && s.payment_option === "no_upfront")).toBe(true);
    expect(rec.configuration.max_upfront_cost).toBe(0);
    expect(bal.configuration.contract_specs.every((s: any) => s.contract_term === "one_year" && s.payment_option === "no_upfront")).toBe(true);
    expect(high.configuration.contract_specs.every((s: any) => s.contract_term === "three_year" && s.payment_option !== "no_upfront")).toBe(true);
    expect(rec.configuration.contract_specs.map((s: any) => s.commitment_type)).toEqual(["compute_savings_plan", "ec2_instance_savings_plan", "database_savings_plan", "reserved_instance"]);
    // same segment next time; other providers get their own
    const again = await (await t.orgRequest("GET", `${path}?provider=aws`)).json();
    expect(again.map((x: any) => x.id)).toEqual(list.map((x: any) => x.id));
    const az = await (await t.orgRequest("GET", `${path}?provider=azure`)).json();
    expect(az[0].segment_id).not.toBe(rec.segment_id);
    expect(az[0].configuration.contract_specs.map((s: any) => s.commitment_type)).toEqual(["savings_plan", "reservation"]);
  });

  test("first use is race-safe: concurrent first requests make one segment and three templates", async () => {
    const org = await t.newOrg("Racing org");
    const rs = await Promise.all(Array.from({ length: 6 }, () => t.request("GET", `/beta/v1/org/${org.id}${path}?provider=gcp`, { key: org.key })));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const segs = await t.s.handle.query("SELECT id FROM segments WHERE org_id = $1", [org.id]);
    expect(segs).toHaveLength(1);
    expect(await templateCount(org.id)).toBe(3);
  });

  test("list: provider is required and must be an enum value; segment_id must be a uuid → 400", async () => {
    for (const q of ["", "?provider=oracle", "?provider=aws&segment_id=nope"]) {
      const r = await t.orgRequest("GET", `${path}${q}`);
      expect(r.status).toBe(400);
      expect((await r.json()).type).toBe("invalid_request");
    }
  });

  test("list by segment: a custom segment has its own templates; another org's or unknown segment → 404; wrong provider → 400", async () => {
    const seg = await createCustomSegment(t.s.db, t.org.id, { provider: "aws", name: "Prod", filters: { account_ids: ["111"], regions: ["us-east-1"] } });
    const mine = await create({ ...BODY, segment_id: seg.id, name: "In prod" });
    expect(mine.segment_id).toBe(seg.id);
    const list = await (await t.orgRequest("GET", `${path}?provider=aws&segment_id=${seg.id}`)).json();
    expect(list.map((x: any) => x.name)).toEqual(["Recommended", "Balanced", "High Savings", "In prod"]);
    const dflt = await (await t.orgRequest("GET", `${path}?provider=aws`)).json();
    expect(dflt.map((x: any) => x.id)).not.toContain(mine.id);

    const other = await t.newOrg("Other");
    const theirs = await createCustomSegment(t.s.db, other.id, { provider: "aws", name: "Theirs" });
    expect((await t.orgRequest("GET", `${path}?provider=aws&segment_id=${theirs.id}`)).status).toBe(404);
    expect((await t.orgRequest("GET", `${path}?provider=aws&segment_id=${crypto.randomUUID()}`)).status).toBe(404);
    const post = await t.orgRequest("POST", path, { body: { ...BODY, segment_id: theirs.id } });
    expect(post.status).toBe(404);
    expect((await t.orgRequest("GET", `${path}?provider=azure&segment_id=${seg.id}`)).status).toBe(400);
    expect((await t.orgRequest("POST", path, { body: { ...BODY, provider: "azure", configuration: { contract_specs: [{ ...SPEC, commitment_type: "reservation" }] }, segment_id: seg.id } })).status).toBe(422);
  });

  test("create: 200 with the template; defaults; schedule fields computed", async () => {
    const tpl = await create();
    expect(tpl).toMatchObject({
      name: "Compute nightly",
      description: "Our plan",
      is_system_generated: false,
      configuration: BODY.configuration,
      auto_purchase: { ...BODY.auto_purchase, next_execution_date: "2026-03-15", last_executed_at: null },
    });
    expect(typeof tpl.id).toBe("string");
    expect(Number.isNaN(Date.parse(tpl.created_at))).toBe(false);
    const min = await create({ provider: "aws", name: "Minimal", configuration: { contract_specs: [SPEC] } });
    expect(min.description).toBeNull();
    expect(min.auto_purchase).toBeNull();
    expect(min.configuration).toEqual({ max_upfront_cost: 0, lookback_days: 30, contract_specs: [SPEC], resource_ids: [], renewal_commitment_ids: [] });
    const sched = await create({ provider: "aws", name: "Monthly", configuration: { contract_specs: [SPEC] }, auto_purchase: { schedule: "monthly", start_date: "2026-01-31" } });
    expect(sched.auto_purchase).toEqual({ schedule: "monthly", min_monthly_savings: 0, enabled: false, start_date: "2026-01-31", end_date: null, require_approval: null, auto_approve_max_upfront: null, next_execution_date: "2026-03-31", last_executed_at: null });
    expect((await (await t.orgRequest("GET", `${path}/${tpl.id}`)).json())).toEqual(tpl);
    // name limits count code points: 255 emoji are 255 characters
    expect((await t.orgRequest("POST", path, { body: { ...BODY, name: "😀".repeat(255) } })).status).toBe(200);
  });

  test("create: every invalid body → 422 with field errors and nothing written", async () => {
    const cfg = BODY.configuration;
    const ap = BODY.auto_purchase;
    await expect422({ ...BODY, color: "red" }, "color");
    await expect422({ ...BODY, configuration: { ...cfg, extra: 1 } }, "configuration.extra");
    await expect422({ ...BODY, auto_purchase: { ...ap, when: "now" } }, "auto_purchase.when");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, foo: 1 }] } }, "configuration.contract_specs.0.foo");
    await expect422({ ...BODY, provider: "oracle" }, "provider");
    await expect422({ ...BODY, name: "" }, "name");
    await expect422({ ...BODY, name: "x".repeat(256) }, "name");
    const { name, ...noName } = BODY;
    await expect422(noName, "name");
    const { configuration, ...noConfig } = BODY;
    await expect422(noConfig, "configuration");
    await expect422({ ...BODY, configuration: { lookback_days: 7 } }, "configuration.contract_specs");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [] } }, "configuration.contract_specs");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, contract_term: "five_year" }] } }, "configuration.contract_specs.0.contract_term");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, payment_option: "later" }] } }, "configuration.contract_specs.0.payment_option");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, commitment_type: "magic" }] } }, "configuration.contract_specs.0.commitment_type");
    // a real type of another provider
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, commitment_type: "spend_cud" }] } }, "configuration.contract_specs.0.commitment_type");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [{ ...SPEC, contract_term: "one_year_gris", payment_option: "all_upfront" }] } }, "configuration.contract_specs.0.payment_option");
    await expect422({ ...BODY, configuration: { ...cfg, contract_specs: [SPEC, SPEC] } }, "configuration.contract_specs.1");
    await expect422({ ...BODY, configuration: { ...cfg, max_upfront_cost: -1 } }, "configuration.max_upfront_cost");
    await expect422({ ...BODY, configuration: { ...cfg, max_upfront_cost: "100" } }, "configuration.max_upfront_cost");
    await expect422({ ...BODY, configuration: { ...cfg, max_upfront_cost: 1e300 } }, "configuration.max_upfront_cost");
    await expect422({ ...BODY, configuration: { ...cfg, lookback_days: 0 } }, "configuration.lookback_days");
    await expect422({ ...BODY, configuration: { ...cfg, lookback_days: 7.5 } }, "configuration.lookback_days");
    await expect422({ ...BODY, configuration: { ...cfg, renewal_commitment_ids: ["not-a-uuid"] } }, "configuration.renewal_commitment_ids.0");
    await expect422({ ...BODY, configuration: { ...cfg, renewal_commitment_ids: [crypto.randomUUID()] } }, "configuration.renewal_commitment_ids.0");
    await expect422({ ...BODY, auto_purchase: { ...ap, schedule: "hourly" } }, "auto_purchase.schedule");
    await expect422({ ...BODY, auto_purchase: { ...ap, min_monthly_savings: -5 } }, "auto_purchase.min_monthly_savings");
    await expect422({ ...BODY, auto_purchase: { ...ap, enabled: "yes" } }, "auto_purchase.enabled");
    await expect422({ ...BODY, auto_purchase: { ...ap, start_date: "2026-02-30" } }, "auto_purchase.start_date");
    await expect422({ ...BODY, auto_purchase: { ...ap, start_date: "03/01/2026" } }, "auto_purchase.start_date");
    await expect422({ ...BODY, auto_purchase: { ...ap, start_date: "2026-05-01", end_date: "2026-04-30" } }, "auto_purchase.end_date");
    const { schedule, ...noSchedule } = ap;
    await expect422({ ...BODY, auto_purchase: noSchedule }, "auto_purchase.schedule");
    await expect422({ ...BODY, description: 42 }, "description");
    await expect422({ ...BODY, auto_purchase: "daily" }, "auto_purchase");
  });

  test("renewal_commitment_ids accepts the org's own commitments of the provider", async () => {
    const [c] = await t.s.db.insert(commitments).values({ orgId: t.org.id, provider: "aws", providerCommitmentId: "ri-renew", commitmentType: "reserved_instance" }).returning();
    const tpl = await create({ ...BODY, configuration: { ...BODY.configuration, renewal_commitment_ids: [c!.id.toUpperCase()] } });
    expect(tpl.configuration.renewal_commitment_ids).toEqual([c!.id]);
    await expect422({ ...BODY, provider: "azure", configuration: { contract_specs: [{ ...SPEC, commitment_type: "reservation" }], renewal_commitment_ids: [c!.id] } }, "configuration.renewal_commitment_ids.0");
  });

  test("malformed JSON → 400", async () => {
    const r = await t.orgRequest("POST", path, { rawBody: "{not json" });
    expect(r.status).toBe(400);
  });

  test("PUT merges key by key: absent keys unchanged, null clears description and schedule", async () => {
    const tpl = await create();
    const put = async (body: unknown) => {
      const r = await t.orgRequest("PUT", `${path}/${tpl.id}`, { body });
      expect(r.status).toBe(200);
      return r.json();
    };
    let v = await put({ name: "Renamed" });
    expect(v).toMatchObject({ name: "Renamed", description: "Our plan", configuration: BODY.configuration, auto_purchase: BODY.auto_purchase });
    v = await put({ configuration: { lookback_days: 60 } });
    expect(v.configuration).toEqual({ ...BODY.configuration, lookback_days: 60 });
    expect(v.name).toBe("Renamed");
    v = await put({ auto_purchase: { enabled: false } });
    expect(v.auto_purchase).toMatchObject({ ...BODY.auto_purchase, enabled: false });
    v = await put({ description: null });
    expect(v.description).toBeNull();
    expect(v.auto_purchase).not.toBeNull();
    v = await put({});
    expect(v.description).toBeNull();
    expect(v.name).toBe("Renamed");
    v = await put({ auto_purchase: null });
    expect(v.auto_purchase).toBeNull();
    expect(v.configuration.lookback_days).toBe(60);
    // a new schedule needs schedule and start_date
    const r = await t.orgRequest("PUT", `${path}/${tpl.id}`, { body: { auto_purchase: { enabled: true } } });
    expect(r.status).toBe(422);
    expect(Object.keys((await r.json()).errors)).toEqual(expect.arrayContaining(["auto_purchase.schedule", "auto_purchase.start_date"]));
    v = await put({ auto_purchase: { schedule: "daily", start_date: "2026-03-20" } });
    expect(v.auto_purchase).toEqual({ schedule: "daily", min_monthly_savings: 0, enabled: false, start_date: "2026-03-20", end_date: null, require_approval: null, auto_approve_max_upfront: null, next_execution_date: "2026-03-20", last_executed_at: null });
    // a GET → PUT round trip (read-only schedule fields echoed back) is accepted
    const full = await (await t.orgRequest("GET", `${path}/${tpl.id}`)).json();
    v = await put({ name: full.name, description: full.description, configuration: full.configuration, auto_purchase: full.auto_purchase });
    expect(v.configuration).toEqual(full.configuration);
    // invalid merged result → 422 and nothing changed
    const bad = await t.orgRequest("PUT", `${path}/${tpl.id}`, { body: { name: "Changed", auto_purchase: { end_date: "2026-03-01" } } });
    expect(bad.status).toBe(422);
    expect((await (await t.orgRequest("GET", `${path}/${tpl.id}`)).json()).name).toBe("Renamed");
    await expect422({ nmae: "typo" }, "nmae", "PUT", `${path}/${tpl.id}`);
    await expect422({ configuration: { contract_specs: [{ ...SPEC, commitment_type: "reservation" }] } }, "configuration.contract_specs.0.commitment_type", "PUT", `${path}/${tpl.id}`);
    await expect422({ name: null }, "name", "PUT", `${path}/${tpl.id}`);
  });

  test("system templates: only auto_purchase may change; anything else → 409 with nothing changed; delete → 409", async () => {
    const [rec] = await (await t.orgRequest("GET", `${path}?provider=aws`)).json();
    const url = `${path}/${rec.id}`;
    const ok = await t.orgRequest("PUT", url, { body: { auto_purchase: { schedule: "daily", start_date: "2026-03-16", enabled: true, min_monthly_savings: 10 } } });
    expect(ok.status).toBe(200);
    const after = await ok.json();
    expect(after.auto_purchase).toMatchObject({ schedule: "daily", enabled: true, next_execution_date: "2026-03-16" });
    for (const body of [
      { name: "Mine now" },
      { description: "changed" },
      { description: null },
      { configuration: { lookback_days: 7 } },
      { configuration: { contract_specs: [SPEC] } },
      { name: "Mine now", auto_purchase: null },
    ]) {
      const r = await t.orgRequest("PUT", url, { body });
      expect(r.status).toBe(409);
      const b = await r.json();
      expect(b).toMatchObject({ code: "system_template_immutable", type: "conflict", status: "CONFLICT" });
      expect(await (await t.orgRequest("GET", url)).json()).toEqual(after);
    }
    // sending the unchanged values back (a GET → PUT round trip) is not a change
    const same = await t.orgRequest("PUT", url, { body: { name: after.name, description: after.description, configuration: after.configuration, auto_purchase: null } });
    expect(same.status).toBe(200);
    expect((await same.json()).auto_purchase).toBeNull();
    const del = await t.orgRequest("DELETE", url);
    expect(del.status).toBe(409);
    expect((await del.json()).code).toBe("system_template_immutable");
    expect((await t.orgRequest("GET", url)).status).toBe(200);
  });

  test("get / put / delete: unknown or another org's template → 404; bad id → 400; delete → 204", async () => {
    const tpl = await create();
    const other = await t.newOrg("Other org");
    const theirs = await (await t.request("POST", `/beta/v1/org/${other.id}${path}`, { key: other.key, body: BODY })).json();
    for (const id of [theirs.id, crypto.randomUUID()]) {
      expect((await t.orgRequest("GET", `${path}/${id}`)).status).toBe(404);
      expect((await t.orgRequest("PUT", `${path}/${id}`, { body: { name: "x" } })).status).toBe(404);
      expect((await t.orgRequest("DELETE", `${path}/${id}`)).status).toBe(404);
    }
    expect((await t.request("GET", `/beta/v1/org/${other.id}${path}/${theirs.id}`, { key: other.key })).status).toBe(200);
    expect((await t.orgRequest("GET", `${path}/not-a-uuid`)).status).toBe(400);
    const del = await t.orgRequest("DELETE", `${path}/${tpl.id}`);
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    expect((await t.orgRequest("GET", `${path}/${tpl.id}`)).status).toBe(404);
    expect((await t.orgRequest("DELETE", `${path}/${tpl.id}`)).status).toBe(404);
    const m = await t.orgRequest("PATCH", `${path}/${theirs.id}`, { body: {} });
    expect(m.status).toBe(405);
  });

  test("auth: 401 without a token, 403 without the scope or for another org", async () => {
    expect((await t.orgRequest("GET", `${path}?provider=aws`, { key: null })).status).toBe(401);
    const reader = await t.newOrg("Reader", ["templates:read"]);
    const base = `/beta/v1/org/${reader.id}${path}`;
    expect((await t.request("GET", `${base}?provider=aws`, { key: reader.key })).status).toBe(200);
    const w = await t.request("POST", base, { key: reader.key, body: BODY });
    expect(w.status).toBe(403);
    expect(await templateCount(reader.id)).toBe(3);
    const [first] = await (await t.request("GET", `${base}?provider=aws`, { key: reader.key })).json();
    expect((await t.request("PUT", `${base}/${first.id}`, { key: reader.key, body: { auto_purchase: null } })).status).toBe(403);
    expect((await t.request("DELETE", `${base}/${first.id}`, { key: reader.key })).status).toBe(403);
    const noScope = await t.newOrg("Reports only", ["reports:read"]);
    expect((await t.request("GET", `/beta/v1/org/${noScope.id}${path}?provider=aws`, { key: noScope.key })).status).toBe(403);
    // our key on another org's path
    expect((await t.request("GET", `${base}?provider=aws`)).status).toBe(403);
    expect((await t.request("GET", `${base}/${first.id}`)).status).toBe(403);
  });
});
