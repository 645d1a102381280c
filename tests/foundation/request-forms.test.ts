/**
 * The forms a header or query value must have, through the real app: an `Idempotency-Key` of
 * visible ASCII only, and `page` / `page_size` on every list read by one parser (plain whole
 * numbers; `1e3`, `0x10`, ` 1` are refused, not coerced). Also the billing runs list's `limit`,
 * the alias of `page_size` its documentation promises.
 */
import { beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { linksOf, paginationOf } from "../helpers/paging.ts";
import { emitEvent } from "../../lib/events/emit.ts";

/** Values a required query parameter of a list takes here; a list with another one fails the test until it is added. */
const REQUIRED_QUERY: Record<string, string> = { provider: "aws" };

describeEachDb("forms of headers and paging parameters", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  let connectionId = "";
  let budgetId = "";
  let endpointId = "";
  let deliveryId = "";

  beforeAll(async () => {
    const r = await t.orgRequest("POST", "/billing-connections", {
      body: {
        name: "Runs",
        kind: "aws_data_exports",
        config: { bucket: "acme-billing", prefix: "cur", export_name: "focus", region: "us-east-1", access_key_id: "AKIAEXAMPLE0000000001", endpoint_url: "http://127.0.0.1:9" },
        secrets: { secret_access_key: "not-used" },
      },
    });
    expect({ status: r.status, body: r.status === 201 ? null : await r.clone().json() }).toEqual({ status: 201, body: null });
    connectionId = ((await r.json()) as any).id;
    const budget = await t.orgRequest("POST", "/budgets", { body: { name: "Lists", amount: 100, currency: "USD", thresholds: [{ percent: 80, basis: "actual" }] } });
    expect(budget.status).toBe(201);
    budgetId = ((await budget.json()) as any).id;
    const endpoint = await t.orgRequest("POST", "/webhook-endpoints", { body: { url: "http://127.0.0.1:9/hook", event_types: ["*"], enabled: false } });
    expect(endpoint.status).toBe(201);
    endpointId = ((await endpoint.json()) as any).id;
    // A delivery to list attempts of: an event fanned out to the endpoint while it is enabled.
    await t.s.handle.query("UPDATE webhook_endpoints SET enabled = true WHERE id = $1", [endpointId]);
    await t.s.db.transaction((tx) => emitEvent(tx, { orgId: t.org.id, type: "billing_sync.stale", occurredAt: new Date(), data: {} }));
    await t.s.handle.query("UPDATE webhook_endpoints SET enabled = false WHERE id = $1", [endpointId]);
    deliveryId = (await t.s.handle.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE endpoint_id = $1", [endpointId]))[0]!.id;
  });

  test("Idempotency-Key: a space anywhere (or a control character) → 400 naming the header; visible ASCII passes", async () => {
    const send = (key: string) => t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Forms" }, headers: { "idempotency-key": key } });
    for (const bad of ["a b", "key with spaces", "tab\there", "a".repeat(256)]) {
      const r = await send(bad);
      expect(r.status).toBe(400);
      const body = (await r.json()) as any;
      expect(body.errors["Idempotency-Key"]).toEqual(["must be 1 to 255 visible ASCII characters"]);
      expect(body.message).toContain("Idempotency-Key");
    }
    const [count] = await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM cost_estimates WHERE org_id = $1", [t.org.id]);
    expect(Number(count!.n)).toBe(0);
    expect((await send("a-b_c.d~e!#$%&'*+/=?^`{|}")).status).toBe(200);
    expect((await send("x".repeat(255))).status).toBe(200);
  });

  /** Every list of the API (a GET with a `page` parameter in the OpenAPI document), as a request path. */
  async function listPaths(): Promise<{ path: string; params: string[] }[]> {
    const doc = (await (await t.request("GET", "/openapi.json", { key: null })).json()) as any;
    const out: { path: string; params: string[] }[] = [];
    for (const [template, item] of Object.entries<any>(doc.paths)) {
      const params: any[] = item.get?.parameters ?? [];
      if (!params.some((p) => p.in === "query" && p.name === "page")) continue;
      for (const name of ["page", "page_size"]) {
        const p = params.find((x) => x.in === "query" && x.name === name);
        // Published as an integer with its range, whatever the route reads it with.
        expect(p?.schema).toMatchObject({ type: "integer", minimum: 1 });
      }
      const path = template
        .replace("{org_id}", t.org.id)
        .replace("{report_type}", "cloud_bill_by_service")
        .replace("{connection_id}", connectionId)
        .replace("{budget_id}", budgetId)
        .replace("{endpoint_id}", endpointId)
        .replace("{delivery_id}", deliveryId);
      expect(path).not.toContain("{");
      const required = params.filter((p) => p.in === "query" && p.required).map((p) => `${p.name}=${REQUIRED_QUERY[p.name] ?? expect.unreachable(`no value for ${p.name}`)}`);
      out.push({ path: required.length ? `${path}?${required.join("&")}` : path, params: params.filter((p) => p.in === "query").map((p) => p.name) });
    }
    return out;
  }

  test("page and page_size on every list: 1e3, 0x10, ' 1', +1, 1.0 → 400 naming the field; plain digits pass", async () => {
    const lists = await listPaths();
    // The lists of the API, so that one that stops being found (or a new one) is noticed.
    expect(lists.length).toBeGreaterThanOrEqual(14);
    for (const { path } of lists) {
      const sep = path.includes("?") ? "&" : "?";
      const ok = await t.request("GET", `${path}${sep}page=1&page_size=1`);
      expect({ path, status: ok.status }).toEqual({ path, status: 200 });
      expect(paginationOf(ok)).toMatchObject({ page: 1, page_size: 1 });
      const padded = await t.request("GET", `${path}${sep}page=01&page_size=002`);
      expect({ path, status: padded.status }).toEqual({ path, status: 200 });
      expect(paginationOf(padded)).toMatchObject({ page: 1, page_size: 2 });
      for (const field of ["page", "page_size"]) {
        for (const bad of ["1e3", "0x10", "%201", "1%20", "+1", "1.0", "-1", "0", ""]) {
          const r = await t.request("GET", `${path}${sep}${field}=${bad}`);
          const body = (await r.json()) as any;
          expect({ path, field, bad, status: r.status }).toEqual({ path, field, bad, status: 400 });
          expect(body.errors[field]?.[0]).toStartWith("must be a whole number from 1 to ");
          expect(body.message).toContain(field);
        }
      }
    }
  });

  test("billing runs: the documented ?limit= is page_size's alias (1–200); links carry page_size; both at once → 400", async () => {
    const runs = `/billing-connections/${connectionId}/runs`;
    for (let i = 0; i < 3; i++) {
      await t.s.handle.query(`INSERT INTO billing_connection_runs (connection_id, org_id, trigger, status, created_at) VALUES ($1, $2, 'schedule', 'succeeded', now() - ($3 || ' minutes')::interval)`, [connectionId, t.org.id, String(i + 1)]);
    }
    const r = await t.orgRequest("GET", `${runs}?limit=2`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as any[]).length).toBe(2);
    expect(paginationOf(r)).toEqual({ page: 1, page_size: 2, total_count: 3, total_pages: 2 });
    const next = new URL(linksOf(r).next!);
    expect(next.searchParams.get("limit")).toBeNull();
    expect(next.searchParams.get("page_size")).toBe("2");
    const page2 = await t.request("GET", `${next.pathname}${next.search}`);
    expect(page2.status).toBe(200);
    expect(((await page2.json()) as any[]).length).toBe(1);
    for (const bad of ["0", "201", "1e2", "0x10", "%205"]) {
      const refused = await t.orgRequest("GET", `${runs}?limit=${bad}`);
      expect({ bad, status: refused.status }).toEqual({ bad, status: 400 });
      expect(((await refused.json()) as any).errors.limit[0]).toBe("must be a whole number from 1 to 200");
    }
    expect((await t.orgRequest("GET", `${runs}?limit=200`)).status).toBe(200);
    const both = await t.orgRequest("GET", `${runs}?limit=2&page_size=2`);
    expect(both.status).toBe(400);
    expect(((await both.json()) as any).errors.limit).toBeDefined();
  });
});
