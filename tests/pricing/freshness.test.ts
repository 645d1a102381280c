/**
 * Freshness in pricing (DESIGN §15, issue 16): every Pricing says `prices_as_of` (the oldest day
 * its prices were confirmed current) and `stale` past PRICE_STALE_DAYS; each pricing line says
 * its own `prices_as_of`; the MCP pricing tools say it in words. Through the real app, both
 * drivers. Feeds are moved with direct SQL, as a refresh writes them.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { and, eq, type SQL } from "drizzle-orm";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { connectMcp } from "../mcp/fixtures.ts";
import { line, seedCatalog, SKU } from "../estimates/helpers.ts";
import { catalogFeeds, catalogSkus, leaseMenuItems, offers } from "../../lib/db/schema/index.ts";
import { bumpCatalogGeneration, loadPricingInputs } from "../../lib/catalog/pricingInputs.ts";
import { isStale, normalizeAsOf } from "../../lib/catalog/freshness.ts";
import { loadConfig } from "../../lib/config.ts";
import type { DbOrTx } from "../../lib/db/index.ts";

const DAY = 86_400_000;
const ymd = (d: Date) => d.toISOString().slice(0, 10);

describe("freshness rules", () => {
  test("as_of is read as a day: months to their first day, leading marks stripped, nonsense unknown", () => {
    expect(normalizeAsOf("2024-04-04")).toBe("2024-04-04");
    expect(normalizeAsOf("2025-06")).toBe("2025-06-01");
    expect(normalizeAsOf("~2025-06")).toBe("2025-06-01");
    expect(normalizeAsOf("approx. 2025-06-30")).toBe("2025-06-30");
    expect(normalizeAsOf("2025-06-30T10:00:00Z")).toBe("2025-06-30");
    for (const bad of ["", "unknown", "2025-13", "2025-02-30", "2025-6", "20250601"]) expect(normalizeAsOf(bad)).toBeNull();
  });

  test("stale: more than PRICE_STALE_DAYS whole days before today (UTC); unknown is never stale", () => {
    const now = new Date("2026-11-20T23:59:00Z");
    expect(isStale("2026-10-15", { now, staleDays: 35 })).toBe(true); // 36 days
    expect(isStale("2026-10-16", { now, staleDays: 35 })).toBe(false); // 35 days
    expect(isStale("2026-10-15", { now, staleDays: 36 })).toBe(false);
    expect(isStale(null, { now, staleDays: 0 })).toBe(false);
    expect(loadConfig({}).priceStaleDays).toBe(35);
    expect(loadConfig({ PRICE_STALE_DAYS: "7" }).priceStaleDays).toBe(7);
  });
});

describeEachDb("pricing freshness: prices_as_of and stale", (driver) => {
  const TODAY = new Date("2026-11-20T12:00:00Z");
  let clock = TODAY;
  const t = useTestApp(driver, { now: () => clock });
  let ids: Record<keyof typeof SKU, string>;
  let client: Client;

  const json = async (r: Response, status = 200) => {
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(status);
    return body;
  };
  const create = async (provider: string, lines: unknown[], org = t.org) =>
    json(await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { body: { provider, line_items: lines }, key: org.key }));
  const get = async (id: string, query = "") => json(await t.orgRequest("GET", `/cost-estimates/${id}${query}`));
  const getLine = async (id: string, lineId: string) => json(await t.orgRequest("GET", `/cost-estimates/${id}/line-items/${lineId}`));
  const tool = async (name: string, args: Record<string, unknown>) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return { text: r.content[0].text as string, out: r.structuredContent as any };
  };

  /** A refresh's record of a live feed: last confirmed current at `checkedAt`. */
  const liveFeed = async (feed: string, provider: "aws" | "azure" | "gcp", checkedAt: Date) => {
    await t.s.db.insert(catalogFeeds).values({ feed, provider, checkedAt, changedAt: checkedAt }).onConflictDoUpdate({ target: catalogFeeds.feed, set: { checkedAt } });
  };
  /** The SKU's row and its lease menu items now belong to `feed`, as a refresh that wrote them leaves them. */
  const moveToFeed = async (skuId: string, feed: string) => {
    await t.s.db.update(catalogSkus).set({ feed }).where(eq(catalogSkus.id, skuId));
    await t.s.db.update(leaseMenuItems).set({ feed }).where(eq(leaseMenuItems.catalogSkuId, skuId));
    await bumpCatalogGeneration(t.s.db);
  };
  const stale = (day: string, days = 35) => `These prices are stale: last confirmed ${day}, more than ${days} days ago; the figures may differ from the providers' current prices until the price catalog is refreshed (an administrator runs \`catalog refresh\`).`;

  beforeAll(async () => {
    ids = await seedCatalog(t.s);
    client = await connectMcp(t, t.org.key);
  });

  test("snapshot prices: the oldest as_of of each SKU and its commitment options, as a day; stale long after", async () => {
    // The bundled snapshot: c5.xlarge Windows and all its options are "2025-06"; m5.large's
    // on-demand price is 2026-07-20, its reserved instance 2023-10-10.
    const e = await create("aws", [line(ids.awsC5Win), line(ids.awsM5)]);
    expect(e.pricing.line_items.map((p: any) => p.prices_as_of)).toEqual(["2025-06-01", "2023-10-10"]);
    expect(e.pricing.prices_as_of).toBe("2023-10-10");
    expect(e.pricing.stale).toBe(true);
    const read = await get(e.id, "?include_options=true");
    expect(read.pricing.prices_as_of).toBe("2023-10-10");
    expect(read.pricing.stale).toBe(true);
    expect((await get(e.id, "?include_pricing=false")).pricing).toBeNull();
    // The single-line read shows the line's own.
    expect((await getLine(e.id, e.line_items[0].id)).pricing).toMatchObject({ prices_as_of: "2025-06-01", stale: true });
    expect((await getLine(e.id, e.line_items[1].id)).pricing.prices_as_of).toBe("2023-10-10");
    // Every response with pricing carries it: rename, add lines.
    const renamed = await json(await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "renamed" } }));
    expect([renamed.pricing.prices_as_of, renamed.pricing.stale]).toEqual(["2023-10-10", true]);
    const gcp = await create("gcp", [line(ids.gcpE2)]);
    expect([gcp.pricing.prices_as_of, gcp.pricing.stale]).toEqual(["2026-07-30", true]);
    const added = await json(await t.orgRequest("POST", `/cost-estimates/${gcp.id}/line-items`, { body: { line_items: [line(ids.gcpE2, { quantity: 3 })] } }));
    expect(added.pricing.line_items.map((p: any) => p.prices_as_of)).toEqual(["2026-07-30", "2026-07-30"]);
  });

  test("no priced line: prices_as_of null and not stale; an unpriced line is left out of the date", async () => {
    const empty = await create("gcp", []);
    expect(empty.pricing).toMatchObject({ line_items: [], prices_as_of: null, stale: false });
    // The org's own SKU without an on-demand price (sku_unavailable), dated long ago.
    const [own] = await t.s.db
      .insert(catalogSkus)
      .values({ catalogSkuOrgId: t.org.id, provider: "gcp", providerSkuId: "test:unpriced", displayName: "unpriced", instanceType: "x1", regionCode: "europe-west1", source: "test", feed: "test-manual", asOf: "2001-01-01" })
      .returning();
    const alone = await create("gcp", [line(own!.id, { catalog_sku_org_id: t.org.id })]);
    expect(alone.pricing.line_items[0]).toMatchObject({ status: "sku_unavailable", prices_as_of: null });
    expect([alone.pricing.prices_as_of, alone.pricing.stale]).toEqual([null, false]);
    const mixed = await create("gcp", [line(own!.id, { catalog_sku_org_id: t.org.id }), line(ids.gcpE2)]);
    expect(mixed.pricing.prices_as_of).toBe("2026-07-30");
  });

  test("a live feed confirmed today: prices_as_of today, not stale, and the MCP tools say so", async () => {
    await liveFeed("test:gcp:compute", "gcp", TODAY);
    await moveToFeed(ids.gcpE2, "test:gcp:compute");
    const e = await create("gcp", [line(ids.gcpE2, { quantity: 2 })]);
    expect(e.pricing.line_items[0].prices_as_of).toBe("2026-11-20");
    expect([e.pricing.prices_as_of, e.pricing.stale]).toEqual(["2026-11-20", false]);
    expect((await getLine(e.id, e.line_items[0].id)).pricing).toMatchObject({ prices_as_of: "2026-11-20", stale: false });

    const adHoc = await tool("price_sku", { lines: [{ catalog_sku_id: ids.gcpE2, quantity: 2 }] });
    expect(adHoc.text).toEndWith(" Prices as of 2026-11-20.");
    expect(adHoc.text).not.toContain("stale");
    expect([adHoc.out.prices_as_of, adHoc.out.stale, adHoc.out.lines[0].prices_as_of]).toEqual(["2026-11-20", false, "2026-11-20"]);
    const saved = await tool("price_cost_estimate", { estimate_id: e.id });
    expect(saved.text).toEndWith(" Prices as of 2026-11-20.");
    expect(saved.out.pricing).toEqual((await get(e.id)).pricing);
  });

  test("PRICE_STALE_DAYS 35: confirmed 36 days ago is stale, 35 and 34 are not; a no-change refresh makes it fresh again", async () => {
    const e = await create("gcp", [line(ids.gcpE2)]);
    const at = async (daysAgo: number) => {
      // Only the feed's check time moves (no catalog row changes, no generation bump).
      await liveFeed("test:gcp:compute", "gcp", new Date(TODAY.getTime() - daysAgo * DAY));
      return (await get(e.id)).pricing;
    };
    expect(await at(36)).toMatchObject({ prices_as_of: "2026-10-15", stale: true });
    let adHoc = await tool("price_sku", { lines: [{ catalog_sku_id: ids.gcpE2 }] });
    expect(adHoc.text).toEndWith(` ${stale("2026-10-15")}`);
    expect([adHoc.out.prices_as_of, adHoc.out.stale]).toEqual(["2026-10-15", true]);
    const saved = await tool("price_cost_estimate", { estimate_id: e.id });
    expect(saved.text).toEndWith(` ${stale("2026-10-15")}`);
    expect([saved.out.pricing.prices_as_of, saved.out.pricing.stale]).toEqual(["2026-10-15", true]);

    expect(await at(35)).toMatchObject({ prices_as_of: "2026-10-16", stale: false });
    expect(await at(34)).toMatchObject({ prices_as_of: "2026-10-17", stale: false });
    // The same catalog read later by the clock: 36 days old again.
    clock = new Date(TODAY.getTime() + 2 * DAY);
    try {
      expect((await get(e.id)).pricing).toMatchObject({ prices_as_of: "2026-10-17", stale: true });
      // A service started with PRICE_STALE_DAYS=40 does not call it stale.
      t.s.config.priceStaleDays = 40;
      expect((await get(e.id)).pricing.stale).toBe(false);
      expect((await tool("price_sku", { lines: [{ catalog_sku_id: ids.gcpE2 }] })).text).toEndWith(" Prices as of 2026-10-17.");
      t.s.config.priceStaleDays = 30;
      adHoc = await tool("price_sku", { lines: [{ catalog_sku_id: ids.gcpE2 }] });
      expect(adHoc.text).toEndWith(` ${stale("2026-10-17", 30)}`);
    } finally {
      t.s.config.priceStaleDays = 35;
      clock = TODAY;
    }
    expect(await at(0)).toMatchObject({ prices_as_of: "2026-11-20", stale: false });
  });

  test("a commitment option from an older feed drags the line down; withdrawn options and other orgs' prices do not", async () => {
    const e = await create("gcp", [line(ids.gcpE2), line(ids.gcpE2, { quantity: 4 })]);
    expect(e.pricing.prices_as_of).toBe("2026-11-20");
    const [threeYear] = await t.s.db
      .select({ id: leaseMenuItems.id })
      .from(leaseMenuItems)
      .innerJoin(offers, eq(offers.id, leaseMenuItems.offerId))
      .where(and(eq(leaseMenuItems.catalogSkuId, ids.gcpE2), eq(offers.contractTerm, "three_year")));
    const olderDay = new Date(TODAY.getTime() - 50 * DAY);
    await liveFeed("test:gcp:cud", "gcp", olderDay);
    await t.s.db.update(leaseMenuItems).set({ feed: "test:gcp:cud" }).where(eq(leaseMenuItems.id, threeYear!.id));
    await bumpCatalogGeneration(t.s.db);
    let doc = await get(e.id);
    expect(doc.pricing.line_items.map((p: any) => p.prices_as_of)).toEqual([ymd(olderDay), ymd(olderDay)]);
    expect([doc.pricing.prices_as_of, doc.pricing.stale]).toEqual([ymd(olderDay), true]);
    expect((await getLine(e.id, e.line_items[1].id)).pricing.prices_as_of).toBe(ymd(olderDay));

    // Withdrawn: no longer a price the line can be priced with.
    await t.s.db.update(leaseMenuItems).set({ isAvailable: false }).where(eq(leaseMenuItems.id, threeYear!.id));
    await bumpCatalogGeneration(t.s.db);
    expect((await get(e.id)).pricing).toMatchObject({ prices_as_of: "2026-11-20", stale: false });
    await t.s.db.update(leaseMenuItems).set({ isAvailable: true, feed: "test:gcp:compute" }).where(eq(leaseMenuItems.id, threeYear!.id));
    await bumpCatalogGeneration(t.s.db);

    // Another org's negotiated option on the same public SKU dates only that org's pricing.
    const other = await t.newOrg("Other org");
    const [own] = await t.s.db
      .insert(offers)
      .values({ offerOrgId: other.id, provider: "gcp", offerKey: "test:negotiated", commitmentType: "resource_cud", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, displayName: "negotiated CUD", lockInDays: 365, source: "test", feed: "test-negotiated", asOf: "2001-01" })
      .returning();
    await t.s.db.insert(leaseMenuItems).values({ offerId: own!.id, catalogSkuId: ids.gcpE2, recurringHourlyRate: "0.03", upfrontCost: "0", source: "test", feed: "test-negotiated", asOf: "2001-01" });
    await bumpCatalogGeneration(t.s.db);
    doc = await get(e.id);
    expect([doc.pricing.prices_as_of, doc.pricing.stale]).toEqual(["2026-11-20", false]);
    const theirs = await create("gcp", [line(ids.gcpE2)], other);
    expect([theirs.pricing.line_items[0].prices_as_of, theirs.pricing.prices_as_of, theirs.pricing.stale]).toEqual(["2001-01-01", "2001-01-01", true]);
  });

  test("pricing inputs read only the requested SKUs: 20,000 more SKUs with options change nothing", async () => {
    const BULK = 20_000;
    // unit price of bulk SKU i: ((i % 97) + 1) / 1000 per hour; its one RI at 60 % of it.
    await t.s.handle.query(`
      INSERT INTO catalog_skus (catalog_sku_org_id, provider, provider_sku_id, display_name, instance_type, region_code, source, feed, as_of)
      SELECT 'public', 'aws', 'test:bulk:' || i, 'bulk ' || i, 'bulk' || i || '.large', 'us-east-1', 'test', 'test-bulk', '2026-11-01' FROM generate_series(1, ${BULK}) i`);
    await t.s.handle.query(`
      INSERT INTO sku_price_tiers (catalog_sku_id, start_quantity, unit_price, source, as_of)
      SELECT id, 0, ((substring(provider_sku_id FROM 11)::int % 97) + 1) / 1000.0, 'test', '2026-11-01' FROM catalog_skus WHERE feed = 'test-bulk'`);
    const [ri] = await t.s.handle.query<{ id: string }>(`
      INSERT INTO offers (offer_org_id, provider, offer_key, commitment_type, contract_term, payment_option, offering_class, duration_seconds, display_name, lock_in_days, source, feed, as_of)
      VALUES ('public', 'aws', 'test:bulk:ri', 'reserved_instance', 'one_year', 'no_upfront', 'standard', 31536000, 'bulk RI', 365, 'test', 'test-bulk', '2026-11-01') RETURNING id`);
    await t.s.handle.query(
      `INSERT INTO lease_menu_items (offer_id, catalog_sku_id, recurring_hourly_rate, upfront_cost, source, feed, as_of)
       SELECT $1::uuid, s.id, t.unit_price * 0.6, 0, 'test', 'test-bulk', '2026-11-01' FROM catalog_skus s JOIN sku_price_tiers t ON t.catalog_sku_id = s.id WHERE s.feed = 'test-bulk'`,
      [ri!.id],
    );
    await bumpCatalogGeneration(t.s.db);
    const [{ n }] = (await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM lease_menu_items")) as [{ n: number }];
    expect(n).toBeGreaterThan(BULK);
    const [bulk] = await t.s.db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, "public"), eq(catalogSkus.providerSkuId, "test:bulk:12345")));
    const hourly = ((12345 % 97) + 1) / 1000;

    // The database as the service reaches it, counting statements and the rows they return.
    let statements = 0;
    let rowsRead = 0;
    const counting = {
      execute: async (q: SQL) => {
        statements++;
        const r: any = await t.s.db.execute(q);
        rowsRead += (Array.isArray(r) ? r : r.rows).length;
        return r;
      },
    } as unknown as DbOrTx;
    const inputs = await loadPricingInputs(counting, t.org.id, [bulk!.id, ids.awsC5Win, bulk!.id]);
    expect([...inputs.keys()]).toEqual([bulk!.id, ids.awsC5Win]);
    const b = inputs.get(bulk!.id)!;
    expect(b.tiers).toEqual([{ startQuantity: 0, endQuantity: null, unitPrice: hourly }]);
    expect(b.leases.map((l) => [l.offer.id, l.recurringHourlyRate, l.upfrontCost])).toEqual([[ri!.id, hourly * 0.6, 0]]);
    expect(b.pricesAsOf).toBe("2026-11-01");
    expect(inputs.get(ids.awsC5Win)!.pricesAsOf).toBe("2025-06-01");
    // The generation, then the two SKUs, their tiers and their options: nothing of the other 20,000.
    expect(statements).toBeLessThanOrEqual(4);
    expect(rowsRead).toBeLessThan(60);
    // Read again at the same generation: only the generation query.
    statements = 0;
    const again = await loadPricingInputs(counting, t.org.id, [ids.awsC5Win, bulk!.id]);
    expect(statements).toBe(1);
    expect(again.get(bulk!.id)).toEqual(b);

    const e = await create("aws", [line(bulk!.id, { quantity: 2 }), line(ids.awsC5Win)]);
    expect(e.pricing.line_items[0].ondemand_monthly_cost).toBe(Math.round(2 * 730 * hourly * 100) / 100);
    expect(e.pricing.line_items[0].prices_as_of).toBe("2026-11-01");
    expect(e.pricing.line_items[1].ondemand_monthly_cost).toBe(290.54);
    expect([e.pricing.prices_as_of, e.pricing.stale]).toEqual(["2025-06-01", true]);
  }, 120_000);
});
