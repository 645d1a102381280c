import { beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { costEstimates, estimateLineItems } from "../../lib/db/schema/index.ts";
import { pgErrorCode } from "../../lib/db/index.ts";
import { line, seedCatalog } from "./helpers.ts";

describeEachDb("cost estimates: concurrent imports", (driver) => {
  const t = useTestApp(driver);
  let ids: Awaited<ReturnType<typeof seedCatalog>>;
  beforeAll(async () => {
    ids = await seedCatalog(t.s);
  });

  test("10 simultaneous POSTs with the same source_draft_id create exactly one estimate", async () => {
    const draft = crypto.randomUUID();
    const body = { provider: "aws", name: "Imported draft", source_draft_id: draft, line_items: [line(ids.awsM5, { quantity: 3 }), line(ids.awsC5Win)] };
    const responses = await Promise.all(Array.from({ length: 10 }, () => t.orgRequest("POST", "/cost-estimates", { body })));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    const docs = await Promise.all(responses.map((r) => r.json()));
    expect(new Set(docs.map((d) => d.id)).size).toBe(1);
    for (const d of docs) expect(d.line_items.length).toBe(2);
    const rows = await t.s.db.select().from(costEstimates).where(and(eq(costEstimates.orgId, t.org.id), eq(costEstimates.sourceDraftId, draft)));
    expect(rows.length).toBe(1);
    const lines = await t.s.db.select().from(estimateLineItems).where(eq(estimateLineItems.estimateId, rows[0]!.id));
    expect(lines.length).toBe(2);
  });

  test("the database refuses a second live estimate for a draft id even without the service", async () => {
    const draft = crypto.randomUUID();
    await t.s.db.insert(costEstimates).values({ orgId: t.org.id, provider: "aws", name: "a", sourceDraftId: draft });
    let refused = false;
    try {
      await t.s.db.insert(costEstimates).values({ orgId: t.org.id, provider: "aws", name: "b", sourceDraftId: draft });
    } catch (e) {
      refused = pgErrorCode(e) === "23505";
    }
    expect(refused).toBe(true);
    // a deleted one does not count
    await t.s.db.update(costEstimates).set({ deletedAt: new Date() }).where(eq(costEstimates.sourceDraftId, draft));
    await t.s.db.insert(costEstimates).values({ orgId: t.org.id, provider: "aws", name: "c", sourceDraftId: draft });
  });
});
