import { beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { costEstimates, estimateShares, leaseMenuItems, offers } from "../../lib/db/schema/index.ts";
import { applyCatalogBatch } from "../../lib/catalog/store.ts";
import { bumpCatalogGeneration } from "../../lib/catalog/pricingInputs.ts";
import { line, seedCatalog, selectionOf } from "./helpers.ts";

describeEachDb("cost estimates API", (driver) => {
  const t = useTestApp(driver);
  let ids: Awaited<ReturnType<typeof seedCatalog>>;
  beforeAll(async () => {
    ids = await seedCatalog(t.s);
  });

  const create = async (body: Record<string, unknown>) => {
    const r = await t.orgRequest("POST", "/cost-estimates", { body });
    expect(r.status).toBe(200);
    return r.json();
  };
  const get = async (id: string, qs = "") => {
    const r = await t.orgRequest("GET", `/cost-estimates/${id}${qs}`);
    expect(r.status).toBe(200);
    return r.json();
  };
  const optionsOf = async (estimateId: string, lineId: string, qs = "") => {
    const r = await t.orgRequest("GET", `/cost-estimates/${estimateId}/line-items/${lineId}${qs}`);
    expect(r.status).toBe(200);
    return (await r.json()).pricing.commitment_options as any[];
  };

  test("create with defaults, then list by provider, most recently updated first", async () => {
    const a = await create({ provider: "azure" });
    expect(a).toMatchObject({ provider: "azure", name: "Untitled estimate", description: null, source_draft_id: null, line_items: [] });
    expect(a.pricing.totals).toEqual({ ondemand_monthly_cost: 0, estimated_monthly_cost: 0, monthly_net_savings: 0, commitment_upfront_cost: 0 });
    const b = await create({ provider: "azure", name: "Second", description: "d", line_items: [line(ids.azureB2ms, { quantity: 2 })] });
    await create({ provider: "gcp", name: "Other provider" });
    let list = await (await t.orgRequest("GET", "/cost-estimates?provider=azure")).json();
    expect(list.map((e: any) => e.id)).toEqual([b.id, a.id]);
    expect(list[0]).toEqual({ id: b.id, provider: "azure", name: "Second", description: "d", line_count: 1, created_at: b.created_at, updated_at: b.updated_at });
    // touching a line of the older estimate moves it to the top
    await t.orgRequest("POST", `/cost-estimates/${a.id}/line-items`, { body: { line_items: [line(ids.azureB2ms)] } });
    list = await (await t.orgRequest("GET", "/cost-estimates?provider=azure")).json();
    expect(list.map((e: any) => e.id)).toEqual([a.id, b.id]);
    expect(list[0].line_count).toBe(1);
  });

  test("list requires a valid provider (400)", async () => {
    expect((await t.orgRequest("GET", "/cost-estimates")).status).toBe(400);
    const r = await t.orgRequest("GET", "/cost-estimates?provider=oracle");
    expect(r.status).toBe(400);
    expect((await r.json()).type).toBe("invalid_request");
  });

  test("rule 1: source_draft_id makes creation idempotent; deleting releases the draft id", async () => {
    const draft = crypto.randomUUID();
    const first = await create({ provider: "aws", name: "Imported", source_draft_id: draft, line_items: [line(ids.awsM5, { quantity: 3 })] });
    const again = await create({ provider: "aws", name: "Changed name", source_draft_id: draft, line_items: [] });
    expect(again.id).toBe(first.id);
    expect(again.name).toBe("Imported");
    expect(again.line_items.length).toBe(1);
    expect(again.updated_at).toBe(first.updated_at);
    // another org may use the same draft id
    const other = await t.newOrg("draft-other");
    const o = await t.request("POST", `/beta/v1/org/${other.id}/cost-estimates`, { key: other.key, body: { provider: "aws", source_draft_id: draft } });
    expect(o.status).toBe(200);
    expect((await o.json()).id).not.toBe(first.id);
    expect((await t.orgRequest("DELETE", `/cost-estimates/${first.id}`)).status).toBe(204);
    const reimported = await create({ provider: "aws", source_draft_id: draft });
    expect(reimported.id).not.toBe(first.id);
    expect(reimported.line_items).toEqual([]);
  });

  test("rule 2: delete is soft: gone from reads, row and share links kept", async () => {
    const e = await create({ provider: "aws", name: "to delete" });
    await t.s.db.insert(estimateShares).values({ orgId: t.org.id, estimateId: e.id });
    const r = await t.orgRequest("DELETE", `/cost-estimates/${e.id}`);
    expect(r.status).toBe(204);
    expect(await r.text()).toBe("");
    expect((await t.orgRequest("GET", `/cost-estimates/${e.id}`)).status).toBe(404);
    const list = await (await t.orgRequest("GET", "/cost-estimates?provider=aws")).json();
    expect(list.some((x: any) => x.id === e.id)).toBe(false);
    const [row] = await t.s.db.select().from(costEstimates).where(eq(costEstimates.id, e.id));
    expect(row!.deletedAt).not.toBeNull();
    const shares = await t.s.db.select().from(estimateShares).where(eq(estimateShares.estimateId, e.id));
    expect(shares.length).toBe(1);
    expect((await t.orgRequest("DELETE", `/cost-estimates/${e.id}`)).status).toBe(404);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "x" } })).status).toBe(404);
    expect((await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.awsM5)] } })).status).toBe(404);
  });

  test("rule 3: lines resolve against public + own custom SKUs, must match the provider, descriptor snapshotted", async () => {
    const e = await create({ provider: "aws" });
    let r = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.gcpE2)] } });
    expect(r.status).toBe(422);
    expect((await r.json()).code).toBe("provider_mismatch");
    r = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(crypto.randomUUID())] } });
    expect(r.status).toBe(422);
    const body = await r.json();
    expect(body.code).toBe("unknown_catalog_sku");
    expect(Object.keys(body.errors)).toEqual(["line_items.0.catalog_sku_id"]);
    // wrong catalog org for a public SKU
    r = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [{ ...line(ids.awsM5), catalog_sku_org_id: t.org.id }] } });
    expect((await r.json()).code).toBe("unknown_catalog_sku");
    // a failed batch writes nothing (one transaction)
    r = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.awsM5), line(ids.gcpE2)] } });
    expect(r.status).toBe(422);
    expect((await get(e.id)).line_items).toEqual([]);

    // custom-priced SKUs: visible to their org only
    const other = await t.newOrg("custom-other");
    await applyCatalogBatch(t.s.db, {
      provider: "aws",
      orgId: t.org.id,
      source: "test-custom",
      skus: [{ providerSkuId: "aws:ec2:us-east-1:m5.large:linux", displayName: "m5.large negotiated", instanceType: "m5.large", regionCode: "us-east-1", service: "compute", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.08 }], asOf: "2026-11-01" }],
      offers: [],
    });
    const search = await (await t.orgRequest("GET", "/catalog-skus?provider=aws&q=m5.large%20us-east-1&instance_type=m5.large")).json();
    const custom = search.find((s: any) => s.catalog_sku_org_id === t.org.id);
    expect(custom).toBeDefined();
    // the custom SKU hides the public one with the same provider_sku_id for this org
    expect(search.filter((s: any) => s.provider_sku_id === "aws:ec2:us-east-1:m5.large:linux").length).toBe(1);
    const oe = await (await t.request("POST", `/beta/v1/org/${other.id}/cost-estimates`, { key: other.key, body: { provider: "aws" } })).json();
    r = await t.request("POST", `/beta/v1/org/${other.id}/cost-estimates/${oe.id}/line-items`, {
      key: other.key,
      body: { line_items: [{ catalog_sku_id: custom.catalog_sku_id, catalog_sku_org_id: t.org.id }] },
    });
    expect(r.status).toBe(422);
    expect((await r.json()).code).toBe("unknown_catalog_sku");

    const doc = await (await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [{ catalog_sku_id: custom.catalog_sku_id, catalog_sku_org_id: t.org.id, quantity: 1 }] } })).json();
    const li = doc.line_items[0];
    expect(li.catalog_sku).toEqual({
      catalog_sku_org_id: t.org.id,
      catalog_sku_id: custom.catalog_sku_id,
      provider: "aws",
      provider_sku_id: "aws:ec2:us-east-1:m5.large:linux",
      display_name: "m5.large negotiated",
      instance_type: "m5.large",
      service: "compute",
      provider_service: "",
      region_code: "us-east-1",
      operating_system: "",
      database_engine: "",
      cache_engine: "",
      usage_type: "",
    });
    // priced with the org's own price: 730 × 0.08 = 58.4
    expect(doc.pricing.line_items[0].ondemand_monthly_cost).toBeCloseTo(58.4, 9);
    // the snapshot survives a later rename of the catalog SKU
    await applyCatalogBatch(t.s.db, {
      provider: "aws",
      orgId: t.org.id,
      source: "test-custom",
      skus: [{ providerSkuId: "aws:ec2:us-east-1:m5.large:linux", displayName: "renamed", instanceType: "m5.large", regionCode: "us-east-1", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.07 }], asOf: "2026-11-15" }],
      offers: [],
    });
    const after = await get(e.id);
    expect(after.line_items[0].catalog_sku.display_name).toBe("m5.large negotiated");
    // …but pricing is live (rule 5): 730 × 0.07 = 51.1
    expect(after.pricing.line_items[0].ondemand_monthly_cost).toBeCloseTo(51.1, 9);
  });

  test("rule 4: the same SKU in several lines (partial coverage)", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsC5Win, { quantity: 2 }), line(ids.awsC5Win, { quantity: 1, label: "burst" })] });
    expect(e.line_items.length).toBe(2);
    const opts = await optionsOf(e.id, e.line_items[0].id);
    const ri = opts.find((o) => o.commitment_type === "reserved_instance" && o.contract_term === "one_year" && o.payment_option === "no_upfront");
    await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${e.line_items[0].id}`, { body: { selected_commitment_option: selectionOf(ri) } });
    const doc = await get(e.id);
    // 2 instances under RI (0.319 × 730 × 2 = 465.74) + 1 on-demand (0.398 × 730 = 290.54)
    expect(doc.pricing.totals.ondemand_monthly_cost).toBeCloseTo(0.398 * 730 * 3, 9);
    expect(doc.pricing.totals.estimated_monthly_cost).toBeCloseTo(465.74 + 290.54, 9);
    expect(doc.pricing.totals.monthly_net_savings).toBeCloseTo(115.34, 9);
  });

  test("rule 5: live pricing, options only with include_options, pricing null with include_pricing=false", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsC5Win, { quantity: 2 })] });
    const plain = await get(e.id);
    expect(plain.pricing.line_items[0].commitment_options).toBeUndefined();
    expect(plain.pricing.line_items[0]).toMatchObject({ line_item_id: e.line_items[0].id, status: "ok", matched_commitment_option: null });
    expect(plain.pricing.line_items[0].ondemand_monthly_cost).toBeCloseTo(581.08, 9);
    const withOpts = await get(e.id, "?include_options=true");
    const grid = withOpts.pricing.line_items[0].commitment_options;
    // real calculator grid: RI 3 payments × 2 terms, compute SP 6, EC2 instance SP 6, insured on 3-year no-upfront (×2 terms × 3 types)
    expect(grid.length).toBe(24);
    const allUp = grid.find((o: any) => o.commitment_type === "reserved_instance" && o.contract_term === "one_year" && o.payment_option === "all_upfront");
    // 2714 upfront per instance: amortized 2714/12 × 2 = 452.3333… shown in cents, upfront 5428
    expect(allUp.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront).toBe(452.33);
    expect(allUp.commitment_upfront_cost).toBeCloseTo(5428, 9);
    expect(allUp.offer).toMatchObject({ provider: "aws", type: "reserved_instance", offering_class: "standard", payment_option: "all_upfront", duration_seconds: 31536000, is_flexible: false });
    const insured = grid.filter((o: any) => o.contract_term.endsWith("_gris"));
    expect(insured.length).toBe(6);
    for (const o of insured) expect(o.commitment_financials_monthly_rate.commitment_cost.breakdown.service_premium).toBeGreaterThan(0);
    const none = await get(e.id, "?include_pricing=false");
    expect(none.pricing).toBeNull();
    expect(none.line_items.length).toBe(1);
    expect((await t.orgRequest("GET", `/cost-estimates/${e.id}?include_options=maybe`)).status).toBe(400);
  });

  test("rule 6: only_most_flexible_commitment_type limits options to the most flexible type", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsC5Win)] });
    const all = await optionsOf(e.id, e.line_items[0].id);
    expect(new Set(all.map((o) => o.commitment_type))).toEqual(new Set(["compute_savings_plan", "ec2_instance_savings_plan", "reserved_instance"]));
    const flex = await optionsOf(e.id, e.line_items[0].id, "?only_most_flexible_commitment_type=true");
    expect(new Set(flex.map((o) => o.commitment_type))).toEqual(new Set(["compute_savings_plan"]));
    const doc = await get(e.id, "?include_options=true&only_most_flexible_commitment_type=true");
    expect(new Set(doc.pricing.line_items[0].commitment_options.map((o: any) => o.commitment_type))).toEqual(new Set(["compute_savings_plan"]));
    // azure: savings plan beats reservation
    const az = await create({ provider: "azure", line_items: [line(ids.azureB2ms)] });
    const azFlex = await optionsOf(az.id, az.line_items[0].id, "?only_most_flexible_commitment_type=true");
    expect(azFlex.length).toBeGreaterThan(0);
    expect(azFlex.every((o) => o.commitment_type === "savings_plan")).toBe(true);
  });

  test("rule 7: a line's pricing ignores its siblings; tiers apply within a line", async () => {
    const e = await create({ provider: "gcp", line_items: [line(ids.gcpE2, { quantity: 730, quantity_basis: "usage_hours" })] });
    const alone = (await get(e.id, "?include_options=true")).pricing.line_items[0];
    await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.gcpE2, { quantity: 50 }), line(ids.gcpE2, { quantity: 0 })] } });
    const withSiblings = (await get(e.id, "?include_options=true")).pricing.line_items[0];
    expect(withSiblings).toEqual(alone);
    // 730 h × 0.073715 = 53.81195, shown in cents
    expect(alone.ondemand_monthly_cost).toBe(53.81);
  });

  test("rule 8: line PATCH merges; quantity_basis needs quantity (422 quantity_required)", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsM5, { quantity: 4, label: "web", is_enabled: true })] });
    const lid = e.line_items[0].id;
    let r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { label: "frontend" } });
    expect(r.status).toBe(200);
    let li = await r.json();
    expect(li).toMatchObject({ id: lid, label: "frontend", quantity: 4, quantity_basis: "resource_count", is_enabled: true, selected_commitment_option: null });
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { quantity_basis: "usage_hours" } });
    expect(r.status).toBe(422);
    const err = await r.json();
    expect(err.code).toBe("quantity_required");
    expect(err.errors.quantity).toBeDefined();
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { quantity_basis: "usage_hours", quantity: 365 } });
    li = await r.json();
    expect(li).toMatchObject({ quantity: 365, quantity_basis: "usage_hours", label: "frontend" });
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { is_enabled: false, label: null } });
    li = await r.json();
    expect(li).toMatchObject({ is_enabled: false, label: null, quantity: 365 });
    const doc = await get(e.id);
    // disabled: priced on the line, excluded from the totals
    expect(doc.pricing.line_items[0].ondemand_monthly_cost).toBeGreaterThan(0);
    expect(doc.pricing.totals.ondemand_monthly_cost).toBe(0);
    expect(Date.parse(doc.updated_at)).toBeGreaterThanOrEqual(Date.parse(e.updated_at));
  });

  test("rules 9–10: choose an option by its six fields, revert with null", async () => {
    const e = await create({ provider: "gcp", line_items: [line(ids.gcpE2, { quantity: 1 })] });
    const lid = e.line_items[0].id;
    const opts = await optionsOf(e.id, lid);
    const gris = opts.find((o) => o.contract_term === "thirty_day_gris");
    expect(gris).toBeDefined();
    let r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: selectionOf(gris) } });
    expect(r.status).toBe(200);
    expect((await r.json()).selected_commitment_option).toEqual(selectionOf(gris));
    let doc = await get(e.id);
    const p = doc.pricing.line_items[0];
    expect(p.status).toBe("ok");
    expect(p.matched_commitment_option.lease_menu_item_id).toBe(gris.lease_menu_item_id);
    // shown in cents: covered 730 × 0.073715 = 53.81, provider cost 730 × 0.033172 = 24.22,
    // premium 30 % × 29.59639 = 8.88; gross 53.81 − 24.22 = 29.59, net 29.59 − 8.88 = 20.71,
    // total 24.22 + 8.88 = 33.10 (derived from the shown parts, not the rounded 20.717473 / 33.094477)
    expect(doc.pricing.totals.monthly_net_savings).toBe(20.71);
    expect(doc.pricing.totals.estimated_monthly_cost).toBe(33.1);
    // a whole copied entry is accepted too (extra fields ignored)
    const cud = opts.find((o) => o.contract_term === "one_year");
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: cud } });
    expect(r.status).toBe(200);
    expect((await r.json()).selected_commitment_option).toEqual(selectionOf(cud));
    // one field off → 422 unknown_commitment_option, nothing changed
    for (const bad of [
      { ...selectionOf(gris), contract_term: "one_year_gris" },
      { ...selectionOf(gris), lease_menu_item_id: crypto.randomUUID() },
      { ...selectionOf(gris), offer_org_id: t.org.id },
    ]) {
      r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: bad } });
      expect(r.status).toBe(422);
      expect((await r.json()).code).toBe("unknown_commitment_option");
    }
    // missing one of the six → 422 validation
    const { offer_id: _, ...missing } = selectionOf(gris);
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: missing } });
    expect(r.status).toBe(422);
    expect((await r.json()).type).toBe("validation_error");
    // an option of another SKU is not a current option of this line
    const az = await create({ provider: "azure", line_items: [line(ids.azureB2ms)] });
    const azOpt = (await optionsOf(az.id, az.line_items[0].id))[0];
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: selectionOf(azOpt) } });
    expect((await r.json()).code).toBe("unknown_commitment_option");
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: null } });
    expect((await r.json()).selected_commitment_option).toBeNull();
    doc = await get(e.id);
    expect(doc.pricing.line_items[0].matched_commitment_option).toBeNull();
    expect(doc.pricing.totals.estimated_monthly_cost).toBe(53.81);
    // selection at creation is validated the same way
    r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "gcp", line_items: [line(ids.gcpE2, { selected_commitment_option: { ...selectionOf(gris), payment_option: "all_upfront" } })] } });
    expect((await r.json()).code).toBe("unknown_commitment_option");
    const ok = await create({ provider: "gcp", line_items: [line(ids.gcpE2, { selected_commitment_option: selectionOf(gris) })] });
    expect(ok.pricing.line_items[0].matched_commitment_option.lease_menu_item_id).toBe(gris.lease_menu_item_id);
  });

  test("a withdrawn option: selection_unavailable, priced on-demand", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsC5Win, { quantity: 1 })] });
    const lid = e.line_items[0].id;
    const opt = (await optionsOf(e.id, lid)).find((o) => o.commitment_type === "ec2_instance_savings_plan" && o.contract_term === "three_year" && o.payment_option === "all_upfront");
    await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: selectionOf(opt) } });
    // withdraw the offer behind the catalog's back (as an import would), then tell readers
    await t.s.db.update(offers).set({ isAvailable: false }).where(eq(offers.id, opt.offer_id));
    await bumpCatalogGeneration(t.s.db);
    try {
      const p = (await get(e.id)).pricing.line_items[0];
      expect(p.status).toBe("selection_unavailable");
      expect(p.matched_commitment_option).toBeNull();
      expect(p.ondemand_monthly_cost).toBeCloseTo(290.54, 9);
      const r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { selected_commitment_option: selectionOf(opt) } });
      expect((await r.json()).code).toBe("unknown_commitment_option");
    } finally {
      await t.s.db.update(offers).set({ isAvailable: true }).where(eq(offers.id, opt.offer_id));
      await bumpCatalogGeneration(t.s.db);
    }
    // lease menu item withdrawn but the offer is still sold: re-matched by the offer → no match here (one lease per offer) …
    await t.s.db.update(leaseMenuItems).set({ isAvailable: false }).where(and(eq(leaseMenuItems.id, opt.lease_menu_item_id)));
    await bumpCatalogGeneration(t.s.db);
    try {
      expect((await get(e.id)).pricing.line_items[0].status).toBe("selection_unavailable");
    } finally {
      await t.s.db.update(leaseMenuItems).set({ isAvailable: true }).where(eq(leaseMenuItems.id, opt.lease_menu_item_id));
      await bumpCatalogGeneration(t.s.db);
    }
    expect((await get(e.id)).pricing.line_items[0].status).toBe("ok");
  });

  test("rule 11: estimate PATCH changes name and description only", async () => {
    const e = await create({ provider: "aws", name: "n", description: "d", line_items: [line(ids.awsM5)] });
    let r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "renamed" } });
    expect(r.status).toBe(200);
    let doc = await r.json();
    expect(doc).toMatchObject({ name: "renamed", description: "d", provider: "aws" });
    expect(doc.line_items.length).toBe(1);
    r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { description: null } });
    expect((await r.json()).description).toBeNull();
    for (const body of [{ provider: "gcp" }, { line_items: [] }, { source_draft_id: crypto.randomUUID() }]) {
      r = await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body });
      expect(r.status).toBe(422);
    }
    doc = await get(e.id);
    expect(doc).toMatchObject({ provider: "aws", name: "renamed", source_draft_id: null });
  });

  test("limits: name 1..255 and label ≤ 255 code points, quantity ≥ 0", async () => {
    const emoji255 = "😀".repeat(255);
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: emoji255 } })).status).toBe(200);
    const r256 = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "😀".repeat(256) } });
    expect(r256.status).toBe(422);
    expect(Object.keys((await r256.json()).errors)).toContain("name");
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "" } })).status).toBe(422);
    const e = await create({ provider: "aws", line_items: [line(ids.awsM5, { label: "é".repeat(255) })] });
    const lid = e.line_items[0].id;
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { label: "😀".repeat(255) } })).status).toBe(200);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { label: "a".repeat(256) } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { quantity: -1 } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { quantity: 0 } })).status).toBe(200);
    expect((await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.awsM5, { quantity: -0.5 })] } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { quantity_basis: "per_gb", quantity: 1 } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${lid}`, { body: { unknown: 1 } })).status).toBe(422);
  });

  test("limits on the other writes: PATCH name 1..255 code points, label ≤ 255 when adding lines; add-lines answers 200 with the document", async () => {
    const e = await create({ provider: "aws", name: "keep" });
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "" } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "😀".repeat(256) } })).status).toBe(422);
    expect((await get(e.id)).name).toBe("keep"); // refused edits change nothing
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}`, { body: { name: "😀".repeat(255) } })).status).toBe(200);
    const bad = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.awsM5, { label: "a".repeat(256) })] } });
    expect(bad.status).toBe(422);
    expect((await get(e.id)).line_items).toHaveLength(0);
    const ok = await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [line(ids.awsM5, { label: "a".repeat(255) })] } });
    expect(ok.status).toBe(200);
    const doc = await ok.json();
    expect(doc.id).toBe(e.id);
    expect(doc.line_items).toHaveLength(1);
    expect(typeof doc.pricing.totals.ondemand_monthly_cost).toBe("number");
  });

  test("rule 2: deleting an estimate keeps the links from generated plans", async () => {
    const e = await create({ provider: "aws", name: "planned" });
    const [plan] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO commitment_plans (org_id, provider, cost_estimate_id, lookback_days, total_upfront_cost, monthly_cost, monthly_net_savings)
       VALUES ($1, 'aws', $2, 30, 0, 0, 0) RETURNING id`,
      [t.org.id, e.id],
    );
    expect((await t.orgRequest("DELETE", `/cost-estimates/${e.id}`)).status).toBe(204);
    expect((await t.orgRequest("GET", `/cost-estimates/${e.id}`)).status).toBe(404);
    const [after] = await t.s.handle.query<{ cost_estimate_id: string }>(`SELECT cost_estimate_id FROM commitment_plans WHERE id = $1`, [plan!.id]);
    expect(after!.cost_estimate_id).toBe(e.id);
  });

  test("bad input: 400 malformed JSON / bad ids, 422 bad body, 404 unknown, never 500", async () => {
    let r = await t.orgRequest("POST", "/cost-estimates", { rawBody: "{not json" });
    expect(r.status).toBe(400);
    r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "oracle" } });
    expect(r.status).toBe(422);
    r = await t.orgRequest("POST", "/cost-estimates", { body: { name: "no provider" } });
    expect(r.status).toBe(422);
    r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", source_draft_id: "not-a-uuid" } });
    expect(r.status).toBe(422);
    r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", line_items: [{ catalog_sku_id: "x", catalog_sku_org_id: "public" }] } });
    expect(r.status).toBe(422);
    expect((await t.orgRequest("GET", "/cost-estimates/not-a-uuid")).status).toBe(400);
    r = await t.orgRequest("GET", `/cost-estimates/${crypto.randomUUID()}`);
    expect(r.status).toBe(404);
    expect((await r.json()).code).toBe("not_found");
    const e = await create({ provider: "aws", line_items: [line(ids.awsM5)] });
    expect((await t.orgRequest("GET", `/cost-estimates/${e.id}/line-items/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${crypto.randomUUID()}`, { body: { quantity: 1 } })).status).toBe(404);
    expect((await t.orgRequest("DELETE", `/cost-estimates/${e.id}/line-items/${crypto.randomUUID()}`)).status).toBe(404);
    // a line of another estimate is not found through this one
    const other = await create({ provider: "aws" });
    expect((await t.orgRequest("GET", `/cost-estimates/${other.id}/line-items/${e.line_items[0].id}`)).status).toBe(404);
    expect((await t.orgRequest("PUT", `/cost-estimates/${e.id}`, { body: {} })).status).toBe(405);
    // text the database cannot store is refused up front, not a 500
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", description: "a\u0000b" } })).status).toBe(422);
    expect((await t.orgRequest("POST", `/cost-estimates/${e.id}/line-items`, { body: { line_items: [{ ...line(ids.awsM5), catalog_sku_org_id: "pub\u0000lic" }] } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${e.id}/line-items/${e.line_items[0].id}`, { body: { label: "\ud800" } })).status).toBe(422);
    expect((await t.orgRequest("GET", "/catalog-skus?provider=aws&q=%00")).status).toBe(400);
    expect((await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", line_items: [line(ids.awsM5, { quantity: 1e13 })] } })).status).toBe(422);
  });

  test("line GET and DELETE; DELETE moves the estimate's updated_at", async () => {
    const e = await create({ provider: "aws", line_items: [line(ids.awsC5Win, { quantity: 2 }), line(ids.awsM5)] });
    const r = await t.orgRequest("GET", `/cost-estimates/${e.id}/line-items/${e.line_items[0].id}`);
    const body = await r.json();
    expect(body.line_item).toEqual(e.line_items[0]);
    expect(body.pricing.line_item_id).toBe(e.line_items[0].id);
    expect(body.pricing.commitment_options.length).toBe(24);
    await new Promise((res) => setTimeout(res, 5));
    const d = await t.orgRequest("DELETE", `/cost-estimates/${e.id}/line-items/${e.line_items[0].id}`);
    expect(d.status).toBe(204);
    const doc = await get(e.id);
    expect(doc.line_items.map((l: any) => l.id)).toEqual([e.line_items[1].id]);
    expect(Date.parse(doc.updated_at)).toBeGreaterThan(Date.parse(e.updated_at));
  });

  test("org isolation: another org's estimate is 404 and leaks nothing", async () => {
    const e = await create({ provider: "aws", name: "secret basket", line_items: [line(ids.awsM5)] });
    const other = await t.newOrg("intruder");
    const base = `/beta/v1/org/${other.id}/cost-estimates`;
    for (const [method, path, body] of [
      ["GET", `${base}/${e.id}`],
      ["PATCH", `${base}/${e.id}`, { name: "pwned" }],
      ["DELETE", `${base}/${e.id}`],
      ["POST", `${base}/${e.id}/line-items`, { line_items: [line(ids.awsM5)] }],
      ["GET", `${base}/${e.id}/line-items/${e.line_items[0].id}`],
      ["PATCH", `${base}/${e.id}/line-items/${e.line_items[0].id}`, { quantity: 9 }],
      ["DELETE", `${base}/${e.id}/line-items/${e.line_items[0].id}`],
    ] as [string, string, unknown?][]) {
      const r = await t.request(method, path, { key: other.key, body });
      expect(r.status).toBe(404);
      expect(await r.text()).not.toContain("secret basket");
    }
    const list = await (await t.request("GET", `${base}?provider=aws`, { key: other.key })).json();
    expect(list).toEqual([]);
    // the other org's key on this org's path → 403
    expect((await t.orgRequest("GET", `/cost-estimates/${e.id}`, { key: other.key })).status).toBe(403);
    const doc = await get(e.id);
    expect(doc.name).toBe("secret basket");
    expect(doc.line_items[0].quantity).toBe(1);
  });

  test("auth: no token 401, missing scope 403", async () => {
    expect((await t.orgRequest("GET", "/cost-estimates?provider=aws", { key: null })).status).toBe(401);
    const reader = await t.newOrg("reader", ["estimates:read"]);
    const base = `/beta/v1/org/${reader.id}`;
    expect((await t.request("GET", `${base}/cost-estimates?provider=aws`, { key: reader.key })).status).toBe(200);
    expect((await t.request("GET", `${base}/catalog-skus?provider=aws`, { key: reader.key })).status).toBe(200);
    const w = await t.request("POST", `${base}/cost-estimates`, { key: reader.key, body: { provider: "aws" } });
    expect(w.status).toBe(403);
    const nobody = await t.newOrg("no-estimates", ["reports:read"]);
    expect((await t.request("GET", `/beta/v1/org/${nobody.id}/cost-estimates?provider=aws`, { key: nobody.key })).status).toBe(403);
    expect((await t.request("GET", `/beta/v1/org/${nobody.id}/catalog-skus?provider=aws`, { key: nobody.key })).status).toBe(403);
  });
});
