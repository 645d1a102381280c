/**
 * GET /support/tickets: the tickets an organization filed, newest first, paged (DESIGN §12),
 * through the real HTTP app and database after filings through POST /support/bug-reports and
 * /support/feature-requests: content (the same view as one ticket read back), paging, the kind
 * filter, org isolation and the scope of the single read (`support:write`).
 */
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { linksOf, paginationOf, walkPages } from "../helpers/paging.ts";
import { validBug, validFeature } from "./fixtures.ts";

const START = new Date("2026-03-10T08:00:00Z");

describeEachDb("support: the list of an organization's tickets", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { config: { supportDailyCap: 100 }, now: () => clock });
  let org: { id: string; key: string };
  let other: { id: string; key: string };
  const P = () => `/beta/v1/org/${org.id}`;
  /** Keys in filing order (oldest first). */
  const filed: { key: string; kind: "bug" | "feature" }[] = [];
  let theirKey = "";

  async function file(o: { id: string; key: string }, kind: "bug" | "feature", n: number) {
    const body = kind === "bug" ? { ...validBug(), summary: `Bug ${n}`, provider: "aws" } : { ...validFeature(), summary: `Feature ${n}` };
    const r = await t.request("POST", `/beta/v1/org/${o.id}/support/${kind === "bug" ? "bug-reports" : "feature-requests"}`, { key: o.key, body });
    expect(r.status).toBe(200);
    const res = (await r.json()) as any;
    expect(res.status).toBe("created");
    return res.ticket_key as string;
  }

  async function get(path: string, key = org.key) {
    const r = await t.request("GET", path, { key });
    return { r, status: r.status, body: (await r.json()) as any };
  }

  beforeAll(async () => {
    org = await t.newOrg("Tickets org");
    other = await t.newOrg("Other tickets org");
    const kinds: ("bug" | "feature")[] = ["bug", "feature", "bug", "bug", "feature", "bug", "feature"];
    for (const [n, kind] of kinds.entries()) {
      clock = new Date(START.getTime() + n * 60_000);
      filed.push({ key: await file(org, kind, n), kind });
      if (n === 3) theirKey = await file(other, "bug", 99);
    }
    clock = START;
  });

  test("GET /support/tickets: every ticket of the org, newest first, each as it reads back", async () => {
    const { status, body } = await get(`${P()}/support/tickets`);
    expect(status).toBe(200);
    expect(body.map((x: any) => x.ticket_key)).toEqual(filed.map((f) => f.key).reverse());
    expect(body.map((x: any) => x.ticket_key)).not.toContain(theirKey);
    for (const ticket of body) {
      const one = await get(`${P()}/support/tickets/${ticket.ticket_key}`);
      expect(one.status).toBe(200);
      expect(ticket).toEqual(one.body);
      expect(ticket.org_id).toBe(org.id);
    }
    const newest = body[0];
    expect(newest).toMatchObject({ kind: "feature", summary: "Feature 6", ...{ problem: validFeature().problem } });
    expect(newest.created_at).toBe(new Date(START.getTime() + 6 * 60_000).toISOString());
    expect(body[1]).toMatchObject({ kind: "bug", summary: "Bug 5", provider: "aws", what_happened: validBug().what_happened });
  });

  test("pages: page 2 of 7 with page_size 3; Link next until the last page; the links work", async () => {
    const all = await walkPages(t, `${P()}/support/tickets`, 3, { key: org.key, expectTotal: 7, idOf: (x) => x.ticket_key });
    const page2 = await get(`${P()}/support/tickets?page=2&page_size=3`);
    expect(page2.body.map((x: any) => x.ticket_key)).toEqual(all.slice(3, 6).map((x) => x.ticket_key));
    expect(paginationOf(page2.r)).toEqual({ page: 2, page_size: 3, total_count: 7, total_pages: 3 });
    expect(linksOf(page2.r).next).toContain("page=3");
    const last = await get(`${P()}/support/tickets?page=3&page_size=3`);
    expect(last.body).toHaveLength(1);
    expect(linksOf(last.r).next).toBeUndefined();
  });

  test("filter by kind; bad query values → 400", async () => {
    const bugs = await walkPages(t, `${P()}/support/tickets?kind=bug`, 2, { key: org.key, expectTotal: 4, idOf: (x) => x.ticket_key });
    expect(bugs.map((x) => x.ticket_key)).toEqual(filed.filter((f) => f.kind === "bug").map((f) => f.key).reverse());
    const features = await get(`${P()}/support/tickets?kind=feature`);
    expect(features.body.map((x: any) => x.kind)).toEqual(["feature", "feature", "feature"]);
    expect((await get(`${P()}/support/tickets?kind=question`)).status).toBe(400);
    expect((await get(`${P()}/support/tickets?page_size=1000`)).status).toBe(400);
    expect((await get(`${P()}/support/tickets?page=abc`)).status).toBe(400);
  });

  test("org isolation: the other org lists only its own; another org's ticket key → 404", async () => {
    const theirs = await get(`/beta/v1/org/${other.id}/support/tickets`, other.key);
    expect(theirs.body.map((x: any) => x.ticket_key)).toEqual([theirKey]);
    expect((await get(`${P()}/support/tickets/${theirKey}`)).status).toBe(404);
    const empty = await t.newOrg("No tickets");
    const none = await get(`/beta/v1/org/${empty.id}/support/tickets`, empty.key);
    expect(none.body).toEqual([]);
    expect(paginationOf(none.r)).toEqual({ page: 1, page_size: 100, total_count: 0, total_pages: 1 });
    expect(linksOf(none.r).next).toBeUndefined();
  });

  test("scope: support:write, as the single read; a key without it or of another org → 403", async () => {
    const reportsOnly = await t.newOrg("Reports only", ["reports:read"]);
    expect((await t.request("GET", `/beta/v1/org/${reportsOnly.id}/support/tickets`, { key: reportsOnly.key })).status).toBe(403);
    expect((await t.request("GET", `/beta/v1/org/${reportsOnly.id}/support/tickets/${theirKey}`, { key: reportsOnly.key })).status).toBe(403);
    expect((await t.request("GET", `${P()}/support/tickets`, { key: other.key })).status).toBe(403);
    expect((await t.request("GET", `${P()}/support/tickets`, { key: null })).status).toBe(401);
    const filer = await t.newOrg("Filer", ["support:write"]);
    expect((await t.request("GET", `/beta/v1/org/${filer.id}/support/tickets`, { key: filer.key })).status).toBe(200);
  });
});
