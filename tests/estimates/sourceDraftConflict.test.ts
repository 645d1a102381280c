import { beforeAll, expect, test } from "bun:test";
import { and, eq, isNull } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { costEstimates } from "../../lib/db/schema/index.ts";
import { line, seedCatalog } from "./helpers.ts";

describeEachDb("cost estimates: source_draft_id of another provider", (driver) => {
  const t = useTestApp(driver);
  let ids: Awaited<ReturnType<typeof seedCatalog>>;
  beforeAll(async () => {
    ids = await seedCatalog(t.s);
  });

  const liveRows = (draft: string) =>
    t.s.db.select().from(costEstimates).where(and(eq(costEstimates.orgId, t.org.id), eq(costEstimates.sourceDraftId, draft), isNull(costEstimates.deletedAt)));

  test("a draft imported for aws, posted for gcp → 409 source_draft_conflict; the same provider still gets the estimate unchanged", async () => {
    const draft = crypto.randomUUID();
    const first = await (await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Imported", source_draft_id: draft, line_items: [line(ids.awsM5, { quantity: 2 })] } })).json();

    const r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "gcp", name: "Same draft, other cloud", source_draft_id: draft, line_items: [line(ids.gcpE2)] } });
    expect(r.status).toBe(409);
    const err = await r.json();
    expect(err).toMatchObject({ type: "conflict", code: "source_draft_conflict" });
    expect(typeof err.error).toBe("string");
    expect(typeof err.timestamp).toBe("string");
    expect(err.errors).toEqual({});
    // names the estimate that holds the draft, so the client can open or delete it
    expect(err.message).toContain(first.id);
    expect(err.message).toContain("aws");
    // nothing was written: no gcp estimate, the aws one untouched
    expect(await (await t.orgRequest("GET", "/cost-estimates?provider=gcp")).json()).toEqual([]);
    const rows = await liveRows(draft);
    expect(rows.map((x) => x.id)).toEqual([first.id]);
    const after = await (await t.orgRequest("GET", `/cost-estimates/${first.id}`)).json();
    expect(after).toEqual(first);

    // rule 1 is unchanged for the same provider
    const again = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Changed", source_draft_id: draft, line_items: [] } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(first);

    // deleting the estimate releases the draft id for any provider
    expect((await t.orgRequest("DELETE", `/cost-estimates/${first.id}`)).status).toBe(204);
    const moved = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "gcp", source_draft_id: draft, line_items: [line(ids.gcpE2)] } });
    expect(moved.status).toBe(200);
    const gcp = await moved.json();
    expect(gcp).toMatchObject({ provider: "gcp", source_draft_id: draft });
    expect(gcp.id).not.toBe(first.id);
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", source_draft_id: draft } })).status).toBe(409);
  });

  test("the draft id is per organization: another org may import it for any provider", async () => {
    const draft = crypto.randomUUID();
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", source_draft_id: draft } })).status).toBe(200);
    const other = await t.newOrg("draft-elsewhere");
    const r = await t.request("POST", `/beta/v1/org/${other.id}/cost-estimates`, { key: other.key, body: { provider: "azure", source_draft_id: draft } });
    expect(r.status).toBe(200);
    expect((await r.json()).provider).toBe("azure");
  });

  test("simultaneous imports of one draft for two providers: one estimate; its provider gets it, the other 409", async () => {
    const draft = crypto.randomUUID();
    const bodies = Array.from({ length: 10 }, (_, i) =>
      i % 2 === 0
        ? { provider: "aws", name: "aws import", source_draft_id: draft, line_items: [line(ids.awsM5, { quantity: 3 })] }
        : { provider: "azure", name: "azure import", source_draft_id: draft, line_items: [line(ids.azureB2ms, { quantity: 3 })] },
    );
    const responses = await Promise.all(bodies.map((body) => t.orgRequest("POST", "/cost-estimates", { body })));
    const results = await Promise.all(responses.map(async (r, i) => ({ provider: bodies[i]!.provider, status: r.status, body: await r.json() })));
    const rows = await liveRows(draft);
    expect(rows.length).toBe(1);
    const winner = rows[0]!;
    for (const r of results) {
      if (r.provider === winner.provider) {
        expect(r.status).toBe(200);
        expect(r.body.id).toBe(winner.id);
        expect(r.body.line_items.length).toBe(1);
      } else {
        expect(r.status).toBe(409);
        expect(r.body.code).toBe("source_draft_conflict");
      }
    }
  });
});
