/**
 * /budgets CRUD through the real app: create (201 + Location, evaluated at once), read, list
 * (paged), merge PATCH, delete, history; every validation rule answers 422 with the field named;
 * names unique per org (409), at most 100 budgets (409, exact under concurrency); other orgs'
 * budgets are 404; budgets:read for every role, budgets:write for admins only.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { addMember, createUser } from "../../lib/orgs/service.ts";
import { MAX_BUDGETS_PER_ORG } from "../../lib/budgets/model.ts";

const NOW = new Date("2026-06-17T12:00:00Z");

const valid = (over: Record<string, unknown> = {}) => ({
  name: "Platform",
  amount: 1000,
  currency: "USD",
  thresholds: [
    { percent: 100, basis: "forecast" },
    { percent: 80, basis: "actual" },
  ],
  ...over,
});

describeEachDb("budgets CRUD", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  const call = async (method: string, path: string, body?: unknown, key?: string) => {
    const r = await t.orgRequest(method, path, { body, key });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null, headers: r.headers };
  };

  test("create: 201 with Location, thresholds sorted, filter normalised, status of the current month (no data: 0)", async () => {
    const r = await call("POST", "/budgets", valid({ filter: { tag: { key: "team", value: "web" }, service: "EC2", provider: "aws" } }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.headers.get("location")).toBe(`/beta/v1/org/${t.org.id}/budgets/${r.body.id}`);
    expect(r.body).toMatchObject({
      name: "Platform",
      amount: 1000,
      currency: "USD",
      filter: { provider: "aws", service: "EC2", tag: { key: "team", value: "web" } },
      thresholds: [
        { percent: 80, basis: "actual" },
        { percent: 100, basis: "forecast" },
      ],
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
    });
    expect(Object.keys(r.body.filter)).toEqual(["provider", "service", "tag"]);
    expect(r.body.status).toEqual({
      month: "2026-06",
      amount: 1000,
      actual: 0,
      forecast: null,
      remaining: 1000,
      percent_used: 0,
      forecast_percent_used: null,
      last_complete_date: null,
      evaluated_at: NOW.toISOString(),
      thresholds: [
        { percent: 80, basis: "actual", threshold_amount: 800, crossed_at: null },
        { percent: 100, basis: "forecast", threshold_amount: 1000, crossed_at: null },
      ],
    });
    const got = await call("GET", `/budgets/${r.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(r.body);
    // Upper-case ids name the same budget.
    expect((await call("GET", `/budgets/${r.body.id.toUpperCase()}`)).body.id).toBe(r.body.id);
    const history = await call("GET", `/budgets/${r.body.id}/history`);
    expect(history.status).toBe(200);
    expect(history.body).toEqual([{ month: "2026-06", amount: 1000, currency: "USD", actual: 0, forecast: null, percent_used: 0, forecast_percent_used: null, last_complete_date: null, evaluated_at: NOW.toISOString(), crossed: [] }]);
    expect(JSON.parse(history.headers.get("x-pagination")!)).toMatchObject({ total_count: 1 });
  });

  test("filter null or omitted: the whole organization ({}); amount in cents; a 3-letter currency", async () => {
    const a = await call("POST", "/budgets", valid({ name: "Whole org", filter: null, amount: 1234.56, currency: "EUR" }));
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ filter: {}, amount: 1234.56, currency: "EUR" });
    const b = await call("POST", "/budgets", valid({ name: "Whole org 2" }));
    expect(b.body.filter).toEqual({});
  });

  test("PATCH merges: only the fields given change; filter null clears it; the status follows the new amount", async () => {
    const created = (await call("POST", "/budgets", valid({ name: "To change", filter: { service: "RDS" } }))).body;
    const r = await call("PATCH", `/budgets/${created.id}`, { amount: 2000.5, thresholds: [{ percent: 50, basis: "actual" }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: "To change", amount: 2000.5, currency: "USD", filter: { service: "RDS" }, thresholds: [{ percent: 50, basis: "actual" }] });
    expect(r.body.status).toMatchObject({ amount: 2000.5, thresholds: [{ percent: 50, basis: "actual", threshold_amount: 1000.25, crossed_at: null }] });
    const cleared = await call("PATCH", `/budgets/${created.id}`, { filter: null, name: "Changed" });
    expect(cleared.body).toMatchObject({ name: "Changed", filter: {}, amount: 2000.5 });
    expect((await call("PATCH", `/budgets/${created.id}`, {})).status).toBe(200);
  });

  test("DELETE: 204, then 404 everywhere; a second delete is 404", async () => {
    const created = (await call("POST", "/budgets", valid({ name: "Doomed" }))).body;
    expect((await call("DELETE", `/budgets/${created.id}`)).status).toBe(204);
    for (const [m, p, body] of [
      ["GET", `/budgets/${created.id}`],
      ["GET", `/budgets/${created.id}/history`],
      ["PATCH", `/budgets/${created.id}`, { name: "x" }],
      ["DELETE", `/budgets/${created.id}`],
    ] as const) {
      const r = await call(m, p, body);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.body).toMatchObject({ type: "not_found", code: "budget_not_found" });
    }
    expect((await call("GET", `/budgets/not-a-uuid`)).status).toBe(400);
  });

  test("validation: each rule answers 422 with the spec's error body naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [valid({ name: "" }), "name"],
      [valid({ name: "x".repeat(201) }), "name"],
      [valid({ amount: 0 }), "amount"],
      [valid({ amount: -5 }), "amount"],
      [valid({ amount: 10.005 }), "amount"],
      [valid({ amount: 1e13 }), "amount"],
      [valid({ amount: "100" }), "amount"],
      [valid({ currency: "usd" }), "currency"],
      [valid({ currency: "US" }), "currency"],
      [valid({ currency: "USDX" }), "currency"],
      [valid({ thresholds: [] }), "thresholds"],
      [valid({ thresholds: Array.from({ length: 11 }, (_, i) => ({ percent: i + 1, basis: "actual" })) }), "thresholds"],
      [valid({ thresholds: [{ percent: 0, basis: "actual" }] }), "thresholds.0.percent"],
      [valid({ thresholds: [{ percent: 1001, basis: "actual" }] }), "thresholds.0.percent"],
      [valid({ thresholds: [{ percent: 50.5, basis: "actual" }] }), "thresholds.0.percent"],
      [valid({ thresholds: [{ percent: 50, basis: "budgeted" }] }), "thresholds.0.basis"],
      [valid({ thresholds: [{ percent: 50, basis: "actual", extra: 1 }] }), "thresholds.0.extra"],
      [valid({ thresholds: [{ percent: 50, basis: "actual" }, { percent: 50, basis: "actual" }] }), "thresholds.1"],
      [valid({ filter: { provider: "oracle" } }), "filter.provider"],
      [valid({ filter: { service: "" } }), "filter.service"],
      [valid({ filter: { account_id: "x".repeat(257) } }), "filter.account_id"],
      [valid({ filter: { tag: { key: "", value: "web" } } }), "filter.tag.key"],
      [valid({ filter: { tag: { key: "team" } } }), "filter.tag.value"],
      [valid({ filter: { region: "us-east-1" } }), "filter.region"],
      [valid({ extra: true }), "extra"],
      [{ name: "no amount", currency: "USD", thresholds: [{ percent: 1, basis: "actual" }] }, "amount"],
    ];
    for (const [body, field] of cases) {
      const r = await call("POST", "/budgets", body);
      expect(r.status, `${field}: ${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(r.body)}`).toBe(422);
      expect(r.body).toMatchObject({ type: "validation_error", status: expect.any(String) });
      expect(typeof r.body.timestamp).toBe("string");
      expect(r.body.url).toBe(`/beta/v1/org/${t.org.id}/budgets`);
      expect(Object.keys(r.body.errors), `${field}: ${JSON.stringify(r.body.errors)}`).toContain(field);
    }
    // PATCH: the same rules on the fields given.
    const created = (await call("POST", "/budgets", valid({ name: "Patched badly" }))).body;
    for (const [body, field] of [
      [{ amount: 0.001 }, "amount"],
      [{ thresholds: [{ percent: 5, basis: "forecast" }, { percent: 5, basis: "forecast" }] }, "thresholds.1"],
      [{ currency: "eur" }, "currency"],
      [{ id: created.id }, "id"],
    ] as const) {
      const r = await call("PATCH", `/budgets/${created.id}`, body);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(Object.keys(r.body.errors)).toContain(field);
    }
    // Malformed JSON is 400, not 422.
    const raw = await t.orgRequest("POST", "/budgets", { rawBody: "{not json" });
    expect(raw.status).toBe(400);
    // Nothing of the refused requests was kept.
    const names = (await call("GET", "/budgets?page_size=500")).body.map((b: any) => b.name);
    expect(names).not.toContain("no amount");
  });

  test("the same percent on actual and on forecast is two thresholds", async () => {
    const r = await call("POST", "/budgets", valid({ name: "Both bases", thresholds: [{ percent: 90, basis: "forecast" }, { percent: 90, basis: "actual" }] }));
    expect(r.status).toBe(201);
    expect(r.body.thresholds).toEqual([
      { percent: 90, basis: "actual" },
      { percent: 90, basis: "forecast" },
    ]);
  });

  test("names are unique per organization, case-insensitive: 409 budget_name_taken (create and rename)", async () => {
    expect((await call("POST", "/budgets", valid({ name: "Unique name" }))).status).toBe(201);
    const dup = await call("POST", "/budgets", valid({ name: "UNIQUE NAME" }));
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ type: "conflict", code: "budget_name_taken" });
    const other = (await call("POST", "/budgets", valid({ name: "Another" }))).body;
    const rename = await call("PATCH", `/budgets/${other.id}`, { name: "unique name" });
    expect(rename.status).toBe(409);
    expect(rename.body.code).toBe("budget_name_taken");
    // Another organization may use it.
    const org = await t.newOrg("Other names");
    expect((await t.request("POST", `/beta/v1/org/${org.id}/budgets`, { key: org.key, body: valid({ name: "Unique name" }) })).status).toBe(201);
  });

  test(`at most ${MAX_BUDGETS_PER_ORG} budgets per organization, exact under concurrent creates: 409 budget_limit_reached`, async () => {
    const org = await t.newOrg("Budget cap");
    const post = (i: number) => t.request("POST", `/beta/v1/org/${org.id}/budgets`, { key: org.key, body: valid({ name: `B${i}` }) });
    for (let i = 0; i < MAX_BUDGETS_PER_ORG - 5; i++) expect((await post(i)).status).toBe(201);
    const racing = await Promise.all(Array.from({ length: 12 }, (_, i) => post(1000 + i)));
    const statuses = racing.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    const refused = await (await post(5000)).json();
    expect(refused).toMatchObject({ code: "budget_limit_reached" });
    const page = await t.request("GET", `/beta/v1/org/${org.id}/budgets?page_size=30&page=4`, { key: org.key });
    expect(page.status).toBe(200);
    expect(await page.json()).toHaveLength(10);
    expect(JSON.parse(page.headers.get("x-pagination")!)).toEqual({ page: 4, page_size: 30, total_count: MAX_BUDGETS_PER_ORG, total_pages: 4 });
    expect(page.headers.get("link")).toContain('rel="prev"');
  }, 120_000);

  test("org isolation: another organization's budget is 404 for every operation, and absent from the list", async () => {
    const other = await t.newOrg("Isolated");
    const theirs = await (await t.request("POST", `/beta/v1/org/${other.id}/budgets`, { key: other.key, body: valid({ name: "Theirs" }) })).json();
    for (const [m, p, body] of [
      ["GET", `/budgets/${theirs.id}`],
      ["GET", `/budgets/${theirs.id}/history`],
      ["PATCH", `/budgets/${theirs.id}`, { name: "mine now" }],
      ["DELETE", `/budgets/${theirs.id}`],
    ] as const) {
      expect((await call(m, p, body)).status, `${m} ${p}`).toBe(404);
    }
    expect((await call("GET", "/budgets?page_size=500")).body.map((b: any) => b.id)).not.toContain(theirs.id);
    // Our key on their org's path: 403 (never says whether it exists).
    expect((await t.request("GET", `/beta/v1/org/${other.id}/budgets`)).status).toBe(403);
    const still = await t.request("GET", `/beta/v1/org/${other.id}/budgets/${theirs.id}`, { key: other.key });
    expect((await still.json()).name).toBe("Theirs");
  });

  test("scopes and roles: reads need budgets:read (viewers have it), changes budgets:write (admins only)", async () => {
    const created = (await call("POST", "/budgets", valid({ name: "Scoped" }))).body;
    const readOnly = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["budgets:read"] });
    const none = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["reports:read"] });
    expect((await call("GET", "/budgets", undefined, readOnly.key)).status).toBe(200);
    expect((await call("GET", `/budgets/${created.id}`, undefined, readOnly.key)).status).toBe(200);
    expect((await call("GET", `/budgets/${created.id}/history`, undefined, readOnly.key)).status).toBe(200);
    for (const [m, p, body] of [
      ["POST", "/budgets", valid({ name: "nope" })],
      ["PATCH", `/budgets/${created.id}`, { name: "nope" }],
      ["DELETE", `/budgets/${created.id}`],
    ] as const) {
      const r = await call(m, p, body, readOnly.key);
      expect(r.status, `${m} ${p}`).toBe(403);
    }
    for (const p of ["/budgets", `/budgets/${created.id}`, `/budgets/${created.id}/history`]) expect((await call("GET", p, undefined, none.key)).status).toBe(403);
    // Scope before body: a bad body without the scope is 403, not 422.
    expect((await call("POST", "/budgets", { bad: true }, readOnly.key)).status).toBe(403);

    for (const role of ["viewer", "member"] as const) {
      const user = await createUser(t.s.db, { email: `${role}.${driver}@example.com`, password: "correct horse battery", emailVerified: true });
      await addMember(t.s.db, { orgId: t.org.id, userId: user.id, role });
      const key = (await createApiKey(t.s.db, { orgId: t.org.id, createdBy: user.id })).key;
      expect((await call("GET", `/budgets/${created.id}`, undefined, key)).status, role).toBe(200);
      expect((await call("POST", "/budgets", valid({ name: `by ${role}` }), key)).status, role).toBe(403);
      expect((await call("DELETE", `/budgets/${created.id}`, undefined, key)).status, role).toBe(403);
    }
    const admin = await createUser(t.s.db, { email: `admin.${driver}@example.com`, password: "correct horse battery", emailVerified: true });
    await addMember(t.s.db, { orgId: t.org.id, userId: admin.id, role: "admin" });
    const adminKey = (await createApiKey(t.s.db, { orgId: t.org.id, createdBy: admin.id })).key;
    expect((await call("POST", "/budgets", valid({ name: "by admin" }), adminKey)).status).toBe(201);
    expect((await call("GET", "/budgets", undefined, "")).status).toBe(401);
  });

  test("Idempotency-Key: a retried create replays the first answer", async () => {
    const headers = { "idempotency-key": `budget-${driver}` };
    const a = await t.orgRequest("POST", "/budgets", { body: valid({ name: "Retried" }), headers });
    const b = await t.orgRequest("POST", "/budgets", { body: valid({ name: "Retried" }), headers });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotency-replayed")).toBe("true");
    expect((await b.json()).id).toBe((await a.json()).id);
  });
});
