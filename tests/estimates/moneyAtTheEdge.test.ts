import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { and, eq } from "drizzle-orm";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { catalogSkus } from "../../lib/db/schema/index.ts";
import { ensurePublicCatalog } from "../../lib/catalog/seed.ts";
import { loadPricingInputs } from "../../lib/catalog/pricingInputs.ts";
import { applicableLeases, QUANTITY_BASES, type CommitmentSelection, type Provider } from "../../lib/pricing/index.ts";
import { expectShownLine, expectShownPricing } from "../pricing/shown.ts";
import { sel } from "../pricing/fixtures.ts";

/** A public SKU of the seeded catalog and the six fields of each of its current options. */
interface SkuChoice {
  id: string;
  options: CommitmentSelection[];
}

const RUNS = Number(process.env.MONEY_EDGE_RUNS ?? 40);

describeEachDb("cost estimates: money at the edge (DESIGN §12)", (driver) => {
  const t = useTestApp(driver);
  const byProvider = new Map<Provider, SkuChoice[]>();
  let mcp: Client;

  beforeAll(async () => {
    await ensurePublicCatalog(t.s.db);
    const rows = await t.s.db
      .select({ id: catalogSkus.id, provider: catalogSkus.provider })
      .from(catalogSkus)
      .where(and(eq(catalogSkus.catalogSkuOrgId, "public"), eq(catalogSkus.isAvailable, true)));
    const inputs = await loadPricingInputs(t.s.db, t.org.id, rows.map((r) => r.id));
    for (const r of rows) {
      const leases = applicableLeases(inputs.get(r.id)!);
      const options = leases.map(sel);
      const list = byProvider.get(r.provider as Provider) ?? [];
      list.push({ id: r.id, options });
      byProvider.set(r.provider as Provider, list);
    }
    const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), {
      fetch: (url, init) => t.app.handle(new Request(url, init)),
      requestInit: { headers: { authorization: `Bearer ${t.org.key}` } },
    });
    mcp = new Client({ name: "money-at-the-edge", version: "1.0.0" });
    await mcp.connect(transport);
  });
  afterAll(async () => {
    await mcp?.close();
  });

  const arbQuantity = fc.oneof(
    fc.integer({ min: 0, max: 40 }),
    fc.integer({ min: 0, max: 5_000_000 }).map((n) => n / 1000),
    fc.constantFrom(1 / 3, 2 / 3, 0.1 + 0.2, 730, 8760),
  );
  const arbLine = fc.record({
    sku: fc.nat(),
    quantity: arbQuantity,
    quantity_basis: fc.constantFrom(...QUANTITY_BASES),
    is_enabled: fc.constantFrom(true, true, false),
    option: fc.integer({ min: -2, max: 30 }),
  });
  const arbEstimate = fc.record({
    provider: fc.constantFrom<Provider>("aws", "azure", "gcp"),
    lines: fc.array(arbLine, { maxLength: 6 }),
    onlyMostFlexible: fc.boolean(),
  });

  test(
    "every generated estimate adds up as displayed: REST create, read with options, single line, and the MCP tool",
    async () => {
      await fc.assert(
        fc.asyncProperty(arbEstimate, async (g) => {
          const skus = byProvider.get(g.provider)!;
          const lineItems = g.lines.map((l) => {
            const s = skus[l.sku % skus.length]!;
            // a negative pick, or one past the grid, leaves the line on-demand
            const chosen = l.option >= 0 ? s.options[l.option % Math.max(1, s.options.length)] : undefined;
            return {
              catalog_sku_id: s.id,
              catalog_sku_org_id: "public",
              quantity: l.quantity,
              quantity_basis: l.quantity_basis,
              is_enabled: l.is_enabled,
              selected_commitment_option: chosen ?? null,
            };
          });
          const r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: g.provider, name: "generated", line_items: lineItems } });
          expect(r.status).toBe(200);
          const created = await r.json();
          const enabled = created.line_items.map((l: any) => l.is_enabled);
          expectShownPricing(created.pricing, enabled);

          const qs = `?include_options=true&only_most_flexible_commitment_type=${g.onlyMostFlexible}`;
          const read = await (await t.orgRequest("GET", `/cost-estimates/${created.id}${qs}`)).json();
          expectShownPricing(read.pricing, enabled);
          // the grid does not change the shown line values or the totals
          expect(read.pricing.totals).toEqual(created.pricing.totals);
          expect(read.pricing.line_items.map(({ commitment_options: _, ...p }: any) => p)).toEqual(created.pricing.line_items);

          if (created.line_items.length) {
            const lineId = created.line_items[0].id;
            const one = await (await t.orgRequest("GET", `/cost-estimates/${created.id}/line-items/${lineId}?only_most_flexible_commitment_type=${g.onlyMostFlexible}`)).json();
            expectShownLine(one.pricing);
            // The single-line read adds whether its own prices are stale.
            const { stale, ...linePricing } = one.pricing;
            expect(linePricing).toEqual(read.pricing.line_items[0]);
            // (the bundled snapshot's prices are years old: any priced line is stale)
            expect(stale).toBe(linePricing.prices_as_of !== null);
          }

          const tool: any = await mcp.callTool({
            name: "price_cost_estimate",
            arguments: { estimate_id: created.id, include_options: true, only_most_flexible_commitment_type: g.onlyMostFlexible },
          });
          expect(tool.isError ?? false).toBe(false);
          expect(tool.structuredContent.pricing).toEqual(read.pricing);
          // the JSON text fallback carries the same numbers
          expect(JSON.parse(tool.content[1].text).pricing).toEqual(read.pricing);
        }),
        { numRuns: RUNS },
      );
    },
    60_000,
  );
});
