/**
 * GET /events and GET /events/{id}: paging (X-Pagination, Link, the pages together = the whole
 * log), newest or oldest first, filters by type (exact, comma-separated, repeated, `domain.*`)
 * and by time ([since, until)), 400 for bad filters, org isolation, the events:read scope, and
 * every answer validated against the OpenAPI document (each type's `data` schema included; objects
 * closed). An event whose transaction rolls back is not in the log. Both drivers.
 */
import { beforeAll, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { walkPages, paginationOf } from "../helpers/paging.ts";
import { emitEvent } from "../../lib/events/emit.ts";
import { EVENT_TYPES } from "../../lib/events/catalog.ts";
import type { EventType } from "../../lib/events/catalog.ts";

const T0 = Date.parse("2026-05-01T00:00:00Z");
const HOUR = 3_600_000;

/** Closes every object that lists properties (as tests/foundation/openapi-responses does): an undocumented field fails. */
function closed(node: any): any {
  if (Array.isArray(node)) return node.map(closed);
  if (!node || typeof node !== "object") return node;
  const out: any = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, closed(v)]));
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

describeEachDb("events: GET /events", (driver) => {
  const t = useTestApp(driver);
  let other: { id: string; key: string };
  let doc: any;
  let validateEvent: (v: unknown) => boolean;
  /** ids of the events written for t.org, in the order written (time order). */
  const written: { id: string; type: EventType; at: string }[] = [];

  async function write(orgId: string, type: EventType, at: number, data: Record<string, unknown>, extra: { resourcePath?: string; consolePath?: string } = {}) {
    const e = await t.s.db.transaction((tx) => emitEvent(tx, { orgId, type, occurredAt: new Date(at), data, ...extra }));
    return e!;
  }

  const stale = (i: number) => ({
    connection: { id: "00000000-0000-4000-8000-000000000001", name: `conn ${i}`, kind: "aws_data_exports", provider: "aws" },
    last_new_data_at: null,
    newest_month: null,
    days_without_new_data: 3 + i,
    stale_after_days: 3,
    last_synced_at: null,
    connection_status: "ok",
    last_error_cause: null,
  });
  const finalized = (m: number) => ({ provider: "aws", period: `2026-0${m}`, year: 2026, month: m, closed_at: null, finalized_at: "2026-05-01T00:00:00.000Z", reports: ["cloud_bill_by_account"] });

  beforeAll(async () => {
    other = await t.newOrg("Other org");
    const r = await t.request("GET", "/openapi.json");
    doc = await r.json();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: "doc", components: closed(doc.components) });
    validateEvent = ajv.compile({ $ref: "doc#/components/schemas/Event" });
    // 12 events over 12 hours: stale, finalized, stale, … (two domains), links on the finalized ones.
    for (let i = 0; i < 12; i++) {
      const type: EventType = i % 2 === 0 ? "billing_sync.stale" : "period.finalized";
      const e = await write(t.org.id, type, T0 + i * HOUR, type === "billing_sync.stale" ? stale(i) : finalized(1 + (i % 9)), type === "period.finalized" ? { resourcePath: `/beta/v1/org/${t.org.id}/allocation-reports`, consolePath: "/app/reports" } : {});
      written.push({ id: e.id, type, at: new Date(T0 + i * HOUR).toISOString() });
    }
    await write(other.id, "billing_sync.stale", T0, stale(99));
  });

  const ids = (rows: any[]) => rows.map((r) => r.id);

  test("newest first, paged: X-Pagination, Link, the pages together are the whole log; every event as the document says", async () => {
    const path = `/beta/v1/org/${t.org.id}/events`;
    const all = await walkPages(t, path, 5, { expectTotal: 12 });
    expect(ids(all)).toEqual(written.map((w) => w.id).reverse());
    for (const e of all) expect(validateEvent(e), JSON.stringify(e)).toBe(true);
    const first = all.at(-1);
    expect(first).toMatchObject({ type: "billing_sync.stale", version: 1, timestamp: "2026-05-01T00:00:00.000Z", org_id: t.org.id, links: { api: null, console: null } });
    const fin = all.find((e: any) => e.type === "period.finalized");
    expect(fin.links).toEqual({ api: `http://localhost/beta/v1/org/${t.org.id}/allocation-reports`, console: "http://localhost/app/reports" });
    const r = await t.orgRequest("GET", "/events?page=2&page_size=5");
    expect(paginationOf(r)).toEqual({ page: 2, page_size: 5, total_count: 12, total_pages: 3 });
  });

  test("oldest_first walks the log forward; the same events", async () => {
    const all = await walkPages(t, `/beta/v1/org/${t.org.id}/events?order=oldest_first`, 4, { expectTotal: 12 });
    expect(ids(all)).toEqual(written.map((w) => w.id));
  });

  test("type: exact, comma-separated, repeated and domain.* prefixes", async () => {
    const get = async (q: string) => {
      const r = await t.orgRequest("GET", `/events?${q}&order=oldest_first`);
      expect(r.status).toBe(200);
      return ids(await r.json());
    };
    const stales = written.filter((w) => w.type === "billing_sync.stale").map((w) => w.id);
    const all = written.map((w) => w.id);
    expect(await get("type=billing_sync.stale")).toEqual(stales);
    expect(await get("type=billing_sync.*")).toEqual(stales);
    expect(await get("type=billing_sync.stale,period.finalized")).toEqual(all);
    expect(await get("type=billing_sync.stale&type=period.*")).toEqual(all);
    expect(await get("type=purchase.*")).toEqual([]);
    expect(await get("type=anomaly.detected")).toEqual([]);
  });

  test("since (inclusive) and until (exclusive), as date-times with any offset or dates", async () => {
    const get = async (q: string) => {
      const r = await t.orgRequest("GET", `/events?${q}&order=oldest_first`);
      expect(r.status, q).toBe(200);
      return ids(await r.json());
    };
    const between = (a: number, b: number) => written.slice(a, b).map((w) => w.id);
    expect(await get("since=2026-05-01T03:00:00Z&until=2026-05-01T06:00:00Z")).toEqual(between(3, 6));
    // 05:00+02:00 = 03:00Z; a `+` sent unencoded arrives as a space and is read the same.
    expect(await get(`since=${encodeURIComponent("2026-05-01T05:00:00+02:00")}&until=2026-05-01T06:00:00.000Z`)).toEqual(between(3, 6));
    expect(await get("since=2026-05-01T05:00:00+02:00&until=2026-05-01T06:00:00Z")).toEqual(between(3, 6));
    expect(await get("since=2026-05-01T09:00:00Z")).toEqual(between(9, 12));
    expect(await get("until=2026-05-01T02:00:00Z")).toEqual(between(0, 2));
    expect(await get("since=2026-05-01&until=2026-05-02")).toEqual(between(0, 12));
    expect(await get("since=2026-05-02")).toEqual([]);
    expect(await get("type=period.finalized&since=2026-05-01T03:00:00Z&until=2026-05-01T06:00:00Z")).toEqual([written[3]!.id, written[5]!.id]);
  });

  test("bad filters: 400 invalid_parameter naming the field, never 500", async () => {
    const cases: [string, string][] = [
      ["type=billing_sync.nope", "type"],
      ["type=nope.*", "type"],
      ["type=*", "type"],
      [`type=${"x".repeat(5000)}`, "type"],
      [`type=${Array.from({ length: 21 }, () => "period.finalized").join(",")}`, "type"],
      ["since=yesterday", "since"],
      ["since=2026-02-30", "since"],
      ["since=2026-05-01T25:00:00Z", "since"],
      ["since=2026-05-01T10:00:00", "since"],
      [`since=${"2".repeat(100)}`, "since"],
      ["until=2026-13-01", "until"],
      ["since=2026-05-02&until=2026-05-01", "until"],
      ["since=2026-05-01&until=2026-05-01", "until"],
      ["since=2026-05-01&since=2026-05-02", "since"],
      ["order=sideways", "order"],
      ["page=0", "page"],
      ["page_size=501", "page_size"],
      ["colour=blue", "colour"],
    ];
    for (const [q, field] of cases) {
      const r = await t.orgRequest("GET", `/events?${q}`);
      const body = await r.json();
      expect(r.status, `${q}: ${JSON.stringify(body)}`).toBe(400);
      expect(body.type, q).toBe("invalid_request");
      expect(Object.keys(body.errors), q).toContain(field);
    }
  });

  test("GET /events/{id}: the event; another org's and unknown ids are 404; a malformed id is 400", async () => {
    const r = await t.orgRequest("GET", `/events/${written[1]!.id}`);
    expect(r.status).toBe(200);
    const e = await r.json();
    expect(e.id).toBe(written[1]!.id);
    expect(validateEvent(e)).toBe(true);
    const [theirs] = await (await t.request("GET", `/beta/v1/org/${other.id}/events`, { key: other.key })).json();
    expect(theirs.org_id).toBe(other.id);
    expect((await t.orgRequest("GET", `/events/${theirs.id}`)).status).toBe(404);
    expect((await t.orgRequest("GET", `/events/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await t.orgRequest("GET", `/events/not-a-uuid`)).status).toBe(400);
  });

  test("org isolation: each org sees only its own log; another org's path with this key is 403", async () => {
    const theirs = await (await t.request("GET", `/beta/v1/org/${other.id}/events?page_size=500`, { key: other.key })).json();
    expect(theirs.length).toBe(1);
    const mine = await (await t.orgRequest("GET", "/events?page_size=500")).json();
    expect(mine.some((e: any) => e.org_id !== t.org.id)).toBe(false);
    expect((await t.request("GET", `/beta/v1/org/${other.id}/events`)).status).toBe(403);
    expect((await t.request("GET", `/beta/v1/org/${other.id}/events/${theirs[0].id}`)).status).toBe(403);
  });

  test("scope: a key without events:read is 403 (list and one event); with only events:read, 200", async () => {
    const noScope = await t.newOrg("No events scope", ["reports:read"]);
    expect((await t.request("GET", `/beta/v1/org/${noScope.id}/events`, { key: noScope.key })).status).toBe(403);
    expect((await t.request("GET", `/beta/v1/org/${noScope.id}/events/00000000-0000-4000-8000-000000000000`, { key: noScope.key })).status).toBe(403);
    const reader = await t.newOrg("Events reader", ["events:read"]);
    expect((await t.request("GET", `/beta/v1/org/${reader.id}/events`, { key: reader.key })).status).toBe(200);
    expect((await t.request("GET", `/beta/v1/org/${t.org.id}/events`, { key: null })).status).toBe(401);
  });

  test("an event whose data predates its type's current schema is still listed (the log keeps events as written)", async () => {
    const org = await t.newOrg("Old data org");
    const e = await write(org.id, "period.finalized", T0, { month: "2026-04", written_by: "an earlier version" });
    const r = await t.request("GET", `/beta/v1/org/${org.id}/events`, { key: org.key });
    expect(r.status).toBe(200);
    expect((await r.json()).map((x: any) => [x.id, x.data.written_by])).toEqual([[e.id, "an earlier version"]]);
    expect((await t.request("GET", `/beta/v1/org/${org.id}/events/${e.id}`, { key: org.key })).status).toBe(200);
  });

  test("an event whose transaction rolls back is not in the log", async () => {
    const before = paginationOf(await t.orgRequest("GET", "/events")).total_count;
    await expect(
      t.s.db.transaction(async (tx) => {
        await emitEvent(tx, { orgId: t.org.id, type: "billing_sync.stale", occurredAt: new Date(T0), data: stale(50) });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(paginationOf(await t.orgRequest("GET", "/events")).total_count).toBe(before);
  });

  test("the OpenAPI document: every catalog type has its event and data schema, discriminated by type; the catalog is in the description", () => {
    const op = doc.paths["/beta/v1/org/{org_id}/events"].get;
    expect(op.responses["200"].content["application/json"].schema.items.$ref).toBe("#/components/schemas/Event");
    const event = doc.components.schemas.Event;
    expect(event.discriminator.propertyName).toBe("type");
    expect(Object.keys(event.discriminator.mapping).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const name = event.discriminator.mapping[type].split("/").pop();
      const member = doc.components.schemas[name];
      expect(member.properties.type.const, type).toBe(type);
      expect(member.properties.data.$ref, type).toMatch(/^#\/components\/schemas\/\w+Data$/);
      expect(op.description, type).toContain(`\`${type}\``);
      expect(doc.info.description, type).toContain(`- \`${type}\``);
    }
    expect(doc.components.schemas.CommitmentExpiringData.properties.notice_days).toBeDefined();
    expect(doc.paths["/beta/v1/org/{org_id}/events/{event_id}"].get.responses["200"].content["application/json"].schema.$ref).toBe("#/components/schemas/Event");
    const params = op.parameters.filter((p: any) => p.in === "query").map((p: any) => p.name).sort();
    expect(params).toEqual(["order", "page", "page_size", "since", "type", "until"]);
  });
});
