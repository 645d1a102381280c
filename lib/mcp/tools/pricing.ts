/**
 * Ad-hoc pricing: the catalog search of REST /catalog-skus (lib/catalog/search.ts) and the
 * pricing of SKUs under every commitment option without saving an estimate, through the same
 * money model and display rounding as a saved estimate (lib/pricing priceEstimate +
 * displayEstimatePricing, lib/catalog loadPricingInputs), so the numbers are those a cost
 * estimate with the same lines shows through REST, to the cent.
 */
import * as z from "zod";
import { and, eq, inArray, or } from "drizzle-orm";
import { searchCatalogSkus } from "../../catalog/search.ts";
import { ensurePublicCatalogOnce } from "../../catalog/seed.ts";
import { loadPricingInputs } from "../../catalog/pricingInputs.ts";
import { catalogSkuDescriptor } from "../../catalog/descriptor.ts";
import { PUBLIC_CATALOG } from "../../catalog/model.ts";
import { catalogSkus } from "../../db/schema/index.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { applicableLeases, QUANTITY_BASES, type CommitmentOption, type CommitmentSelection, type PricingLine, type QuantityBasis, priceEstimate, LINE_STATUSES } from "../../pricing/index.ts";
import { displayEstimatePricing, fromCents, toCents } from "../../pricing/display.ts";
import { ALL_COMMITMENT_TYPES, CONTRACT_TERMS, PAYMENT_OPTIONS } from "../../templates/enums.ts";
import { defineTool, providerEnum, type ToolContext } from "./common.ts";
import { CATALOG_CURRENCY } from "../../catalog/model.ts";
import { freshnessOf, freshnessSentence } from "../../catalog/freshness.ts";

const MAX_LINES = 50;

const text = (max: number) => z.string().trim().min(1).max(max);

const skuOut = z.object({
  catalog_sku_id: z.string(),
  catalog_sku_org_id: z.string(),
  provider: z.string(),
  provider_sku_id: z.string(),
  display_name: z.string(),
  instance_type: z.string(),
  instance_family: z.string(),
  service: z.string(),
  provider_service: z.string(),
  region_code: z.string(),
  operating_system: z.string(),
  database_engine: z.string(),
  cache_engine: z.string(),
  usage_type: z.string(),
  usage_unit: z.string(),
  is_available: z.boolean(),
  source: z.string(),
  as_of: z.string(),
});

export const searchCatalogTool = defineTool({
  name: "search_catalog",
  title: "Search the price catalog",
  description:
    "Searches the catalog SKUs this organization can price (the public catalog plus its custom-priced SKUs, which hide the public SKU of the same provider SKU id), as REST GET /catalog-skus does: by provider, free text (each word must match the display name, instance type, region or service), exact region, service and instance type. Returns each SKU's catalog_sku_id (to pass to price_sku), display name, instance type and family, region, operating system, usage unit and availability; no prices (use price_sku for on-demand and commitment prices).",
  scopes: ["estimates:read"],
  input: {
    provider: providerEnum.describe("Cloud provider."),
    q: text(200).optional().describe("Free text, e.g. 'm5.large linux' or 'postgres'. Every word must match."),
    region: text(100).optional().describe("Exact region code, e.g. us-east-1, eastus, europe-west1."),
    service: text(100).optional().describe("Exact service, e.g. compute, AmazonEC2, AmazonRDS."),
    instance_type: text(100).optional().describe("Exact instance type, e.g. m5.large, Standard_D2s_v5, e2-standard-2."),
    page: z.number().int().min(1).max(10_000).default(1).describe("Page of results (1-based)."),
    limit: z.number().int().min(1).max(200).default(25).describe("SKUs per page (1-200)."),
  },
  output: {
    total_count: z.number().int(),
    page: z.number().int(),
    total_pages: z.number().int(),
    returned_count: z.number().int(),
    truncated: z.boolean(),
    skus: z.array(skuOut),
  },
  async run(ctx, a) {
    await ensurePublicCatalogOnce(ctx.s.db);
    const r = await searchCatalogSkus(ctx.s.db, ctx.orgId, { provider: a.provider, q: a.q, region: a.region, service: a.service, instanceType: a.instance_type, page: a.page, pageSize: a.limit });
    const skus = r.items.map((s) => ({ ...s }));
    return {
      structured: { total_count: r.totalCount, page: r.page, total_pages: r.totalPages, returned_count: skus.length, truncated: r.page < r.totalPages, skus },
      summary: r.totalCount
        ? `${r.totalCount} ${a.provider} SKU(s) match (page ${r.page} of ${r.totalPages}): ${skus.slice(0, 5).map((s) => s.display_name).join("; ")}${skus.length > 5 ? "; …" : ""}.`
        : `No ${a.provider} SKU matches.`,
    };
  },
});

// --- price_sku -------------------------------------------------------------------------------

const optionOut = z.object({
  commitment_type: z.string(),
  contract_term: z.string(),
  payment_option: z.string(),
  offering_class: z.string().nullable(),
  plan_type: z.string().nullable(),
  display_name: z.string(),
  is_flexible: z.boolean(),
  duration_seconds: z.number().int(),
  /** Units (instances) or $/hour for spend-based types, 6 decimals. */
  selected_amount: z.number(),
  discount_rate: z.number(),
  breakeven_days: z.number(),
  upfront_cost: z.number(),
  monthly_commitment_cost: z.number(),
  monthly_recurring_cost: z.number(),
  monthly_amortized_upfront: z.number(),
  monthly_service_premium: z.number(),
  covered_ondemand_cost: z.number(),
  monthly_net_savings: z.number(),
  monthly_gross_savings: z.number(),
  lease_menu_item_id: z.string(),
  offer_id: z.string(),
  offer_org_id: z.string(),
});
type OptionOut = z.infer<typeof optionOut>;

/** A shown (already rounded) CommitmentOption, flat: the same numbers, no re-rounding. */
function flatOption(o: CommitmentOption): OptionOut {
  const f = o.commitment_financials_monthly_rate;
  return {
    commitment_type: o.commitment_type,
    contract_term: o.contract_term,
    payment_option: o.payment_option,
    offering_class: o.offer.offering_class,
    plan_type: o.offer.plan_type,
    display_name: o.offer.display_name,
    is_flexible: o.offer.is_flexible,
    duration_seconds: o.offer.duration_seconds,
    selected_amount: o.selected_amount,
    discount_rate: o.discount_rate,
    breakeven_days: o.breakeven_days,
    upfront_cost: o.commitment_upfront_cost,
    monthly_commitment_cost: f.commitment_cost.total,
    monthly_recurring_cost: f.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring,
    monthly_amortized_upfront: f.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront,
    monthly_service_premium: f.commitment_cost.breakdown.service_premium,
    covered_ondemand_cost: f.covered_ondemand_cost,
    monthly_net_savings: f.commitment_savings.net,
    monthly_gross_savings: f.commitment_savings.gross,
    lease_menu_item_id: o.lease_menu_item_id,
    offer_id: o.offer_id,
    offer_org_id: o.offer_org_id,
  };
}

const optionKey = (o: { commitment_type: string; contract_term: string; payment_option: string; offering_class: string | null }) =>
  `${o.commitment_type}/${o.contract_term}/${o.payment_option}${o.offering_class ? `/${o.offering_class}` : ""}`;

const selectionIn = z
  .object({
    commitment_type: z.enum(ALL_COMMITMENT_TYPES as [string, ...string[]]).describe("e.g. reserved_instance, compute_savings_plan, reservation, savings_plan, resource_cud."),
    contract_term: z.enum(CONTRACT_TERMS).describe("one_year, three_year, or the insured thirty_day_gris / one_year_gris."),
    payment_option: z.enum(PAYMENT_OPTIONS).describe("no_upfront, partial_upfront or all_upfront."),
    offering_class: z.enum(["standard", "convertible"]).optional().describe("AWS reserved instances: standard or convertible (needed when both are offered)."),
  })
  .describe("Price the line under this commitment option (as a cost estimate line's selected option): its estimated cost, savings and upfront enter the totals.");

const lineIn = z.object({
  catalog_sku_id: z.string().uuid().optional().describe("The SKU (from search_catalog). Or give instance_type + region instead."),
  instance_type: text(100).optional().describe("Instead of catalog_sku_id: the instance type, with region (and provider on the call)."),
  region: text(100).optional().describe("With instance_type: the region code."),
  operating_system: text(50).optional().describe("With instance_type: the operating system (default: Linux when several match)."),
  quantity: z.number().min(0).max(1_000_000).default(1).describe("How much: instances (resource_count, the default), hours or usage units."),
  quantity_basis: z.enum(QUANTITY_BASES as [QuantityBasis, ...QuantityBasis[]]).default("resource_count").describe("resource_count: instances running all month (730 h); usage_hours; usage_quantity (in the SKU's usage unit)."),
  label: z.string().max(200).optional().describe("Your name for the line (echoed back)."),
  selected_option: selectionIn.optional(),
});
type LineIn = z.infer<typeof lineIn>;

const lineOut = z.object({
  line: z.number().int(),
  label: z.string().nullable(),
  catalog_sku: z.object({
    catalog_sku_id: z.string(),
    catalog_sku_org_id: z.string(),
    provider: z.string(),
    provider_sku_id: z.string(),
    display_name: z.string(),
    instance_type: z.string(),
    region_code: z.string(),
    operating_system: z.string(),
    usage_unit: z.string(),
  }),
  quantity: z.number(),
  quantity_basis: z.string(),
  status: z.enum(LINE_STATUSES),
  detail: z.string(),
  prices_as_of: z.string().nullable(),
  ondemand_monthly_cost: z.number(),
  estimated_monthly_cost: z.number(),
  monthly_net_savings: z.number(),
  upfront_cost: z.number(),
  selected_option: optionOut.nullable(),
  options_count: z.number().int(),
  options: z.array(optionOut),
});

const optionTotal = z.object({
  option: z.string(),
  commitment_type: z.string(),
  contract_term: z.string(),
  payment_option: z.string(),
  offering_class: z.string().nullable(),
  lines_offered: z.number().int(),
  monthly_commitment_cost: z.number(),
  ondemand_monthly_cost_of_other_lines: z.number(),
  estimated_monthly_cost: z.number(),
  monthly_net_savings: z.number(),
  upfront_cost: z.number(),
});

type SkuRow = typeof catalogSkus.$inferSelect;

/** The SKUs of the lines: by id (visible to the org: public or its own), or by instance type + region. */
async function resolveSkus(ctx: ToolContext, provider: string | undefined, lines: LineIn[]): Promise<SkuRow[]> {
  const ids = [...new Set(lines.flatMap((l) => (l.catalog_sku_id ? [l.catalog_sku_id.toLowerCase()] : [])))];
  const visible = or(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), eq(catalogSkus.catalogSkuOrgId, ctx.orgId));
  const byId = new Map<string, SkuRow>();
  if (ids.length) for (const r of await ctx.s.db.select().from(catalogSkus).where(and(inArray(catalogSkus.id, ids), visible))) byId.set(r.id, r);
  const out: SkuRow[] = [];
  for (const [i, l] of lines.entries()) {
    const at = `lines[${i}]`;
    if (l.catalog_sku_id) {
      const row = byId.get(l.catalog_sku_id.toLowerCase());
      if (!row) throw new NotFoundError(`${at}: no catalog SKU ${l.catalog_sku_id} in the public catalog or this organization's custom SKUs (find SKUs with search_catalog).`);
      if (provider && row.provider !== provider) throw new ValidationError(`${at}: the SKU is a ${row.provider} SKU, not ${provider}.`, { [`${at}.catalog_sku_id`]: [`must be a ${provider} SKU`] });
      out.push(row);
      continue;
    }
    if (!l.instance_type || !l.region || !provider) {
      throw new ValidationError(`${at}: give catalog_sku_id, or instance_type and region with the call's provider.`, { [`${at}`]: ["needs catalog_sku_id or instance_type + region + provider"] });
    }
    // The same search as REST /catalog-skus (custom SKUs hide the public ones they reprice).
    const found = await searchCatalogSkus(ctx.s.db, ctx.orgId, { provider: provider as any, region: l.region, instanceType: l.instance_type, page: 1, pageSize: 200 });
    let hits = found.items;
    if (l.operating_system) hits = hits.filter((h) => h.operating_system.toLowerCase() === l.operating_system!.toLowerCase());
    else if (hits.length > 1 && hits.some((h) => /^linux$/i.test(h.operating_system))) hits = hits.filter((h) => /^linux$/i.test(h.operating_system));
    if (hits.length > 1) {
      throw new ValidationError(`${at}: ${hits.length} SKUs match ${l.instance_type} in ${l.region} (${hits.map((h) => h.provider_sku_id).join(", ")}): give operating_system or catalog_sku_id.`, { [`${at}`]: ["matches several SKUs"] });
    }
    if (!hits.length) throw new NotFoundError(`${at}: no ${provider} SKU for ${l.instance_type} in ${l.region}${l.operating_system ? ` (${l.operating_system})` : ""} in the catalog (try search_catalog).`);
    const [row] = await ctx.s.db.select().from(catalogSkus).where(eq(catalogSkus.id, hits[0]!.catalog_sku_id));
    out.push(row!);
  }
  return out;
}

export const priceSkuTool = defineTool({
  name: "price_sku",
  title: "Price SKUs under every commitment option",
  description:
    "Prices up to 50 lines (a catalog SKU, by catalog_sku_id from search_catalog or by instance_type + region, and a quantity) on demand and under EVERY commitment option the catalog offers for it (reserved instances, savings plans, reservations, CUDs, insured 30-day/1-year lock-in options; each term and payment), without saving anything. Per line: the monthly on-demand cost and, per option, the upfront cost, monthly commitment cost (recurring + amortized upfront + service premium), covered on-demand cost, monthly net and gross savings, discount rate and breakeven days. `option_totals` sums each option over the lines that offer it (the other lines at on-demand). A line's selected_option is priced as a cost estimate's selected option and enters `totals`. Money in USD, rounded to cents, rates to 6 decimals: exactly what a saved cost estimate with the same lines shows (REST GET /cost-estimates/{id}?include_options=true); totals are sums of the shown parts. prices_as_of (overall and per line) is the oldest day the prices used were confirmed current; stale says it is more than PRICE_STALE_DAYS days old (the catalog needs a refresh). Use it for what-if questions ('what would 10 m5.large cost on a 3-year RI vs a savings plan?').",
  scopes: ["estimates:read"],
  input: {
    provider: providerEnum.optional().describe("Cloud provider: needed for lines given by instance_type + region; lines by id must match it."),
    lines: z.array(lineIn).min(1).max(MAX_LINES).describe("1-50 lines to price."),
    commitment_type: z.enum(ALL_COMMITMENT_TYPES as [string, ...string[]]).optional().describe("Show only options of this commitment type (the pricing is unchanged)."),
    contract_term: z.enum(CONTRACT_TERMS).optional().describe("Show only options of this term."),
    payment_option: z.enum(PAYMENT_OPTIONS).optional().describe("Show only options with this payment."),
    only_most_flexible_commitment_type: z.boolean().default(false).describe("Limit each SKU's options to its most flexible commitment type (as the estimate's flag)."),
  },
  output: {
    currency: z.string(),
    lines: z.array(lineOut),
    totals: z.object({ ondemand_monthly_cost: z.number(), estimated_monthly_cost: z.number(), monthly_net_savings: z.number(), commitment_upfront_cost: z.number() }),
    option_totals: z.array(optionTotal),
    prices_as_of: z.string().nullable(),
    stale: z.boolean(),
  },
  async run(ctx, a) {
    await ensurePublicCatalogOnce(ctx.s.db);
    const skus = await resolveSkus(ctx, a.provider, a.lines);
    const inputs = await loadPricingInputs(ctx.s.db, ctx.orgId, skus.map((s) => s.id));
    // The lines as a cost estimate holds them; a selection is the option of the SKU's grid it names.
    const pricingLines: PricingLine[] = a.lines.map((l, i) => {
      let selected: CommitmentSelection | null = null;
      if (l.selected_option) {
        const want = l.selected_option;
        const inp = inputs.get(skus[i]!.id);
        const leases = (inp?.sku.isAvailable ? applicableLeases(inp) : []).filter(
          (x) => x.offer.commitmentType === want.commitment_type && x.offer.contractTerm === want.contract_term && x.offer.paymentOption === want.payment_option && (!want.offering_class || x.offer.offeringClass === want.offering_class),
        );
        const classes = [...new Set(leases.map((x) => x.offer.offeringClass ?? ""))];
        if (!leases.length) {
          const offered = inp ? [...new Set(applicableLeases(inp).map((x) => optionKey({ commitment_type: x.offer.commitmentType, contract_term: x.offer.contractTerm, payment_option: x.offer.paymentOption, offering_class: x.offer.offeringClass })))] : [];
          throw new ValidationError(`lines[${i}]: ${skus[i]!.displayName} has no ${want.commitment_type} ${want.contract_term} ${want.payment_option} option${want.offering_class ? ` (${want.offering_class})` : ""}; offered: ${offered.join(", ") || "none"}.`, { [`lines.${i}.selected_option`]: ["is not offered for this SKU"] });
        }
        if (classes.length > 1) throw new ValidationError(`lines[${i}]: both ${classes.join(" and ")} ${want.commitment_type} are offered: give offering_class.`, { [`lines.${i}.selected_option.offering_class`]: ["is required"] });
        const lease = leases[0]!;
        selected = { commitment_type: lease.offer.commitmentType, contract_term: lease.offer.contractTerm, payment_option: lease.offer.paymentOption, lease_menu_item_id: lease.leaseMenuItemId, offer_id: lease.offer.id, offer_org_id: lease.offer.orgId };
      }
      return { id: String(i + 1), catalogSkuId: skus[i]!.id, quantity: l.quantity, quantityBasis: l.quantity_basis, isEnabled: true, selected };
    });
    const freshness = freshnessOf(ctx.s);
    const shown = displayEstimatePricing(pricingLines, priceEstimate(pricingLines, inputs, { includeOptions: true, onlyMostFlexibleCommitmentType: a.only_most_flexible_commitment_type, freshness }));
    const keep = (o: OptionOut) => (!a.commitment_type || o.commitment_type === a.commitment_type) && (!a.contract_term || o.contract_term === a.contract_term) && (!a.payment_option || o.payment_option === a.payment_option);

    const lines = shown.line_items.map((p, i) => {
      const sku = skus[i]!;
      const grid = (p.commitment_options ?? []).map(flatOption);
      return {
        line: i + 1,
        label: a.lines[i]!.label ?? null,
        catalog_sku: { ...pick(catalogSkuDescriptor(sku)), usage_unit: sku.usageUnit },
        quantity: a.lines[i]!.quantity,
        quantity_basis: a.lines[i]!.quantity_basis,
        status: p.status,
        detail: p.detail,
        prices_as_of: p.prices_as_of,
        ondemand_monthly_cost: p.ondemand_monthly_cost,
        estimated_monthly_cost: p.estimated_monthly_cost,
        monthly_net_savings: p.monthly_net_savings,
        upfront_cost: p.matched_commitment_option ? p.matched_commitment_option.commitment_upfront_cost : 0,
        selected_option: p.matched_commitment_option ? flatOption(p.matched_commitment_option) : null,
        options_count: grid.length,
        options: grid.filter(keep),
        grid,
      };
    });

    // Each option over the lines offering it (the first entry of a SKU's grid under a key), the
    // other lines at on-demand; summed in cents from the shown values.
    const byKey = new Map<string, { o: OptionOut; lines: Set<number>; commitment: number; net: number; upfront: number }>();
    for (const l of lines) {
      for (const o of l.grid.filter(keep)) {
        const k = optionKey(o);
        let acc = byKey.get(k);
        if (!acc) byKey.set(k, (acc = { o, lines: new Set(), commitment: 0, net: 0, upfront: 0 }));
        if (acc.lines.has(l.line)) continue;
        acc.lines.add(l.line);
        acc.commitment += toCents(o.monthly_commitment_cost);
        acc.net += toCents(o.monthly_net_savings);
        acc.upfront += toCents(o.upfront_cost);
      }
    }
    const option_totals = [...byKey.entries()].map(([k, acc]) => {
      const others = lines.filter((l) => !acc.lines.has(l.line)).reduce((c, l) => c + toCents(l.ondemand_monthly_cost), 0);
      return {
        option: k,
        commitment_type: acc.o.commitment_type,
        contract_term: acc.o.contract_term,
        payment_option: acc.o.payment_option,
        offering_class: acc.o.offering_class,
        lines_offered: acc.lines.size,
        monthly_commitment_cost: fromCents(acc.commitment),
        ondemand_monthly_cost_of_other_lines: fromCents(others),
        estimated_monthly_cost: fromCents(acc.commitment + others),
        monthly_net_savings: fromCents(acc.net),
        upfront_cost: fromCents(acc.upfront),
      };
    });
    const best = [...option_totals].sort((x, y) => y.monthly_net_savings - x.monthly_net_savings)[0];
    const asOf = freshnessSentence(shown.prices_as_of, shown.stale, freshness.staleDays);
    return {
      structured: { currency: CATALOG_CURRENCY, lines: lines.map(({ grid: _grid, ...l }) => l), totals: shown.totals, option_totals, prices_as_of: shown.prices_as_of, stale: shown.stale },
      summary:
        `${lines.length} line(s): on-demand ${CATALOG_CURRENCY} ${shown.totals.ondemand_monthly_cost}/month` +
        (shown.totals.ondemand_monthly_cost !== shown.totals.estimated_monthly_cost ? `, ${CATALOG_CURRENCY} ${shown.totals.estimated_monthly_cost}/month with the selected options (net savings ${shown.totals.monthly_net_savings}, upfront ${shown.totals.commitment_upfront_cost})` : "") +
        (best ? `; ${option_totals.length} commitment option(s), the highest net savings ${CATALOG_CURRENCY} ${best.monthly_net_savings}/month with ${best.option} (upfront ${best.upfront_cost}).` : "; no commitment option offered.") +
        (asOf ? ` ${asOf}` : ""),
    };
  },
});

/** The descriptor fields a priced line shows. */
function pick(d: ReturnType<typeof catalogSkuDescriptor>) {
  return {
    catalog_sku_id: d.catalog_sku_id,
    catalog_sku_org_id: d.catalog_sku_org_id,
    provider: d.provider,
    provider_sku_id: d.provider_sku_id,
    display_name: d.display_name,
    instance_type: d.instance_type,
    region_code: d.region_code,
    operating_system: d.operating_system,
  };
}

export const pricingTools = [searchCatalogTool, priceSkuTool];
