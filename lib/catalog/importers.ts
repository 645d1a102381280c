/**
 * Parsers of the providers' published price formats into catalog batches (lib/catalog/model.ts).
 * Pure: they take the parsed JSON and return a batch; `applyCatalogBatch` writes it.
 *
 * Identity: SKUs get the same `provider_sku_id` scheme as the bundled snapshot
 * (`aws:ec2:<region>:<type>:<os>`, `azure:vm:<region>:<arm sku>:<os>`), so importing a
 * provider file refreshes the seeded rows in place (ids stay stable for estimate lines).
 */
import { withInsuredOffers } from "./insured.ts";
import { CATALOG_CURRENCY, PUBLIC_CATALOG, instanceFamilyOf, termName, termSeconds, type CatalogBatch, type OfferInput, type SkuInput } from "./model.ts";

export class ImportFormatError extends Error {}

const PAYMENT: Record<string, string> = { "No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront" };
const PAYMENT_LABEL: Record<string, string> = { no_upfront: "no upfront", partial_upfront: "partial upfront", all_upfront: "all upfront" };
const OS: Record<string, string> = { Linux: "linux", Windows: "windows", RHEL: "rhel", SUSE: "suse", "Red Hat Enterprise Linux": "rhel" };

function price(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
}

function dateOf(v: unknown): string {
  const s = typeof v === "string" ? v : "";
  return /^\d{4}-\d{2}-\d{2}/.test(s) ? s.slice(0, 10) : s || "unknown";
}

function years(v: string): number {
  const m = /^(\d+)\s*(yr|year|years|Year|Years)/.exec(v.trim());
  if (!m) throw new ImportFormatError(`unknown term length "${v}"`);
  return Number(m[1]);
}

function offerKey(commitmentType: string, offeringClass: string | null, term: string, payment: string, scope: string): string {
  return [commitmentType, offeringClass ?? "", term, payment, scope].join("|");
}

export interface ImportOptions {
  /** PUBLIC_CATALOG (default) or an org id for custom-priced SKUs. */
  orgId?: string;
  /** Feed name: a re-import of the same feed withdraws what it no longer lists. */
  feed?: string;
}

// ---- AWS Price List offer file (e.g. offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json)

export function awsOfferFileBatch(doc: any, opts: ImportOptions = {}): CatalogBatch {
  if (!doc || typeof doc.products !== "object" || typeof doc.terms !== "object") throw new ImportFormatError("not an AWS Price List offer file (products/terms missing)");
  const offerCode = String(doc.offerCode ?? "unknown");
  const asOf = dateOf(doc.publicationDate);
  const source = `aws_price_list:${offerCode}:${doc.version ?? asOf}`;
  const skus: SkuInput[] = [];
  const offers: OfferInput[] = [];
  const idOf = new Map<string, string>();
  for (const [awsSku, p] of Object.entries<any>(doc.products)) {
    const a = p?.attributes ?? {};
    const isInstance = offerCode === "AmazonEC2" && p.productFamily === "Compute Instance";
    if (isInstance && (a.tenancy !== "Shared" || (a.preInstalledSw && a.preInstalledSw !== "NA") || (a.capacitystatus && a.capacitystatus !== "Used"))) continue;
    const os = OS[a.operatingSystem] ?? (a.operatingSystem ? String(a.operatingSystem).toLowerCase() : "");
    const providerSkuId = isInstance ? `aws:ec2:${a.regionCode}:${a.instanceType}:${os}` : `aws:${offerCode}:${awsSku}`;
    const od = Object.values<any>(doc.terms.OnDemand?.[awsSku] ?? {})[0];
    const dims = Object.values<any>(od?.priceDimensions ?? {});
    const tiers = dims
      .map((d) => ({ startQuantity: price(d.beginRange) ?? 0, endQuantity: d.endRange === "Inf" || d.endRange === undefined ? null : price(d.endRange), unitPrice: price(d.pricePerUnit?.USD) }))
      .filter((t): t is { startQuantity: number; endQuantity: number | null; unitPrice: number } => t.unitPrice !== null)
      .sort((x, y) => x.startQuantity - y.startQuantity);
    const unit = dims[0]?.unit ?? "Hrs";
    idOf.set(awsSku, providerSkuId);
    skus.push({
      providerSkuId,
      displayName: isInstance ? `AWS ${a.instanceType} ${a.operatingSystem} ${a.regionCode}` : `AWS ${offerCode} ${a.usagetype ?? awsSku}`,
      instanceType: a.instanceType ?? "",
      service: isInstance ? "compute" : (p.productFamily ?? ""),
      providerService: offerCode,
      regionCode: a.regionCode ?? "",
      operatingSystem: a.operatingSystem ?? "",
      databaseEngine: a.databaseEngine ?? "",
      cacheEngine: a.cacheEngine ?? "",
      usageType: a.usagetype ?? "",
      usageUnit: unit,
      tiers,
      source,
      asOf,
    });
    for (const term of Object.values<any>(doc.terms.Reserved?.[awsSku] ?? {})) {
      const ta = term.termAttributes ?? {};
      const payment = PAYMENT[ta.PurchaseOption];
      if (!payment) continue;
      const y = years(String(ta.LeaseContractLength ?? ""));
      let upfront = 0;
      let recurring = 0;
      for (const d of Object.values<any>(term.priceDimensions ?? {})) {
        const v = price(d.pricePerUnit?.USD) ?? 0;
        if (d.unit === "Quantity") upfront += v;
        else recurring += v;
      }
      const offeringClass = ta.OfferingClass === "convertible" ? "convertible" : "standard";
      offers.push({
        offerKey: offerKey("reserved_instance", offeringClass, termName(y), payment, providerSkuId),
        commitmentType: "reserved_instance",
        contractTerm: termName(y),
        paymentOption: payment,
        offeringClass,
        durationSeconds: termSeconds(y),
        region: a.regionCode ?? null,
        instanceType: a.instanceType ?? null,
        instanceFamily: a.instanceType ? instanceFamilyOf(a.instanceType) : null,
        productDescription: a.operatingSystem ?? null,
        displayName: `AWS ${y}-year ${offeringClass === "convertible" ? "Convertible" : "Standard"} Reserved Instance, ${PAYMENT_LABEL[payment]} (${a.instanceType ?? awsSku} ${a.regionCode ?? ""})`.trim(),
        isFlexible: offeringClass === "convertible",
        lockInDays: y * 365,
        source,
        asOf: dateOf(term.effectiveDate) || asOf,
        leases: [{ providerSkuId, recurringHourlyRate: recurring, upfrontCost: upfront, source, asOf }],
      });
    }
  }
  return withInsuredOffers({ provider: "aws", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? `aws_price_list:${offerCode}`, skus, offers });
}

// ---- AWS Savings Plans rate file (savingsPlan/v1.0/aws/AWSComputeSavingsPlan/…/<region>/index.json)

const SP_OS: Record<string, string> = { RunInstances: "linux", "RunInstances:0002": "windows", "RunInstances:0010": "rhel", "RunInstances:000g": "suse" };

export function awsSavingsPlansBatch(doc: any, opts: ImportOptions = {}): CatalogBatch {
  if (!doc || !Array.isArray(doc.products) || !Array.isArray(doc.terms?.savingsPlan)) throw new ImportFormatError("not an AWS Savings Plans rate file (products/terms.savingsPlan missing)");
  const region = String(doc.regionCode ?? "");
  const asOf = dateOf(doc.publicationDate);
  const source = `aws_savings_plans:${doc.version ?? asOf}`;
  const products = new Map<string, any>(doc.products.map((p: any) => [p.sku, p]));
  const offers = new Map<string, OfferInput>();
  for (const term of doc.terms.savingsPlan) {
    const p = products.get(term.sku);
    if (!p) continue;
    const family = p.productFamily === "ComputeSavingsPlans" ? "compute_savings_plan" : p.productFamily === "EC2InstanceSavingsPlans" ? "ec2_instance_savings_plan" : null;
    const payment = PAYMENT[p.attributes?.purchaseOption];
    if (!family || !payment) continue;
    const y = term.leaseContractLength?.duration ? Number(term.leaseContractLength.duration) : years(String(p.attributes?.purchaseTerm ?? ""));
    if (y !== 1 && y !== 3) continue;
    for (const r of term.rates ?? []) {
      if (r.discountedServiceCode !== "AmazonEC2" || !/BoxUsage:/.test(r.discountedUsageType ?? "")) continue;
      const os = SP_OS[r.discountedOperation];
      const rate = price(r.discountedRate?.price);
      if (!os || rate === null) continue;
      const instanceType = String(r.discountedUsageType).split("BoxUsage:")[1]!;
      const instanceFamily = instanceFamilyOf(instanceType);
      const scope = family === "compute_savings_plan" ? "all" : `${region}|${instanceFamily}`;
      const key = offerKey(family, null, termName(y), payment, scope);
      let o = offers.get(key);
      if (!o) {
        o = {
          offerKey: key,
          commitmentType: family,
          contractTerm: termName(y),
          paymentOption: payment,
          offeringClass: null,
          planType: family === "compute_savings_plan" ? "compute" : "ec2_instance",
          durationSeconds: termSeconds(y),
          region: family === "compute_savings_plan" ? null : region,
          instanceFamily: family === "compute_savings_plan" ? null : instanceFamily,
          displayName: `AWS ${y}-year ${family === "compute_savings_plan" ? "Compute" : "EC2 Instance"} Savings Plan, ${PAYMENT_LABEL[payment]}${family === "compute_savings_plan" ? "" : ` (${instanceFamily} ${region})`}`,
          isFlexible: true,
          lockInDays: y * 365,
          source,
          asOf,
          leases: [],
        };
        offers.set(key, o);
      }
      // The file gives the effective hourly rate; AWS bills all-upfront entirely upfront, partial
      // upfront half upfront (the AWS Pricing Calculator's rule), no-upfront hourly.
      const hours = 8760 * y;
      const upfrontShare = payment === "all_upfront" ? 1 : payment === "partial_upfront" ? 0.5 : 0;
      o.leases.push({
        providerSkuId: `aws:ec2:${region}:${instanceType}:${os}`,
        recurringHourlyRate: rate * (1 - upfrontShare),
        upfrontCost: rate * hours * upfrontShare,
        source,
        asOf,
      });
    }
  }
  return withInsuredOffers({ provider: "aws", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? `aws_savings_plans:${region}`, skus: [], offers: [...offers.values()] });
}

// ---- Azure Retail Prices API pages (https://prices.azure.com/api/retail/prices)

export function azureRetailBatch(pages: any[], opts: ImportOptions = {}): CatalogBatch {
  const items: any[] = [];
  for (const page of pages) {
    if (!page || !Array.isArray(page.Items)) throw new ImportFormatError("not an Azure Retail Prices page (Items missing)");
    items.push(...page.Items);
  }
  const source = "azure_retail_prices";
  const skuMap = new Map<string, SkuInput>();
  const offers = new Map<string, OfferInput>();
  const vmKey = (i: any, os: string) => `azure:vm:${i.armRegionName}:${String(i.armSkuName).toLowerCase()}:${os}`;
  const offerFor = (key: string, make: () => OfferInput) => offers.get(key) ?? offers.set(key, make()).get(key)!;
  for (const i of items) {
    if (i.currencyCode && i.currencyCode !== CATALOG_CURRENCY) continue;
    if (/Spot|Low Priority/i.test(`${i.skuName} ${i.meterName}`)) continue;
    const asOf = dateOf(i.effectiveStartDate);
    const isVm = i.serviceName === "Virtual Machines" && i.armSkuName;
    const os = /Windows/i.test(i.productName ?? "") ? "windows" : "linux";
    const unitPrice = price(i.unitPrice ?? i.retailPrice);
    if (unitPrice === null) continue;
    if (i.type === "Consumption") {
      const id = isVm ? vmKey(i, os) : `azure:${String(i.serviceName).toLowerCase().replace(/\W+/g, "_")}:${i.armRegionName}:${i.meterId}`;
      let sku = skuMap.get(id);
      if (!sku) {
        sku = {
          providerSkuId: id,
          displayName: isVm ? `Azure ${i.armSkuName} ${os === "windows" ? "Windows" : "Linux"} ${i.armRegionName}` : `Azure ${i.productName} ${i.meterName} ${i.armRegionName}`,
          instanceType: isVm ? i.armSkuName : "",
          service: isVm ? "compute" : String(i.serviceFamily ?? ""),
          providerService: String(i.serviceName ?? ""),
          regionCode: String(i.armRegionName ?? ""),
          operatingSystem: isVm ? (os === "windows" ? "Windows" : "Linux") : "",
          usageType: String(i.meterName ?? ""),
          usageUnit: i.unitOfMeasure === "1 Hour" ? "Hrs" : String(i.unitOfMeasure ?? ""),
          tiers: [],
          source,
          asOf,
        };
        skuMap.set(id, sku);
      }
      sku.tiers.push({ startQuantity: price(i.tierMinimumUnits) ?? 0, endQuantity: null, unitPrice });
      for (const sp of i.savingsPlan ?? []) {
        const y = years(String(sp.term));
        const rate = price(sp.unitPrice ?? sp.retailPrice);
        if (rate === null || (y !== 1 && y !== 3)) continue;
        // Azure bills the same total upfront or monthly.
        for (const payment of ["no_upfront", "all_upfront"]) {
          const o = offerFor(offerKey("savings_plan", null, termName(y), payment, "all"), () => ({
            offerKey: offerKey("savings_plan", null, termName(y), payment, "all"),
            commitmentType: "savings_plan",
            contractTerm: termName(y),
            paymentOption: payment,
            planType: "compute",
            durationSeconds: termSeconds(y),
            displayName: `AZURE ${y}-year Savings Plan for Compute, ${PAYMENT_LABEL[payment]}`,
            isFlexible: true,
            lockInDays: y * 365,
            source,
            asOf,
            leases: [],
          }));
          o.leases.push({ providerSkuId: id, recurringHourlyRate: payment === "no_upfront" ? rate : 0, upfrontCost: payment === "all_upfront" ? rate * 8760 * y : 0, source, asOf });
        }
      }
    } else if (i.type === "Reservation" && isVm) {
      // A VM reservation covers the compute meter (the Linux price); the unit price is the
      // whole term's price per VM, payable upfront or in monthly instalments.
      const y = years(String(i.reservationTerm ?? ""));
      if (y !== 1 && y !== 3) continue;
      const id = vmKey(i, "linux");
      for (const payment of ["no_upfront", "all_upfront"]) {
        const key = offerKey("reservation", null, termName(y), payment, id);
        offerFor(key, () => ({
          offerKey: key,
          commitmentType: "reservation",
          contractTerm: termName(y),
          paymentOption: payment,
          durationSeconds: termSeconds(y),
          region: i.armRegionName,
          instanceType: i.armSkuName,
          displayName: `AZURE ${y}-year Reserved VM Instance, ${PAYMENT_LABEL[payment]} (${i.armSkuName} ${i.armRegionName})`,
          isFlexible: false,
          lockInDays: y * 365,
          source,
          asOf,
          leases: [{ providerSkuId: id, recurringHourlyRate: payment === "no_upfront" ? unitPrice / (8760 * y) : 0, upfrontCost: payment === "all_upfront" ? unitPrice : 0, source, asOf }],
        }));
      }
    }
  }
  // Tiers: each starts where it starts and ends where the next one begins.
  for (const s of skuMap.values()) {
    s.tiers.sort((a, b) => a.startQuantity - b.startQuantity);
    s.tiers.forEach((t, k) => (t.endQuantity = s.tiers[k + 1]?.startQuantity ?? null));
  }
  return withInsuredOffers({ provider: "azure", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? source, skus: [...skuMap.values()], offers: [...offers.values()] });
}

// ---- GCP Cloud Billing Catalog (services/{service}/skus)

function money(p: any): number | null {
  if (!p) return null;
  return price(Number(p.units ?? 0) + Number(p.nanos ?? 0) / 1e9);
}

/** "N2 Instance Core running in Americas" / "Commitment v1: N2 Cpu in Americas for 1 Year" → "n2|cpu|americas". */
function gcpResourceKey(description: string): string | null {
  const d = description.replace(/^Commitment v1:\s*/i, "");
  const m = /^(\S+)\s+(?:Instance\s+)?(Core|Cpu|Ram)\s+(?:running\s+)?in\s+(.+?)(?:\s+for\s+\d+\s+Years?)?$/i.exec(d);
  if (!m) return null;
  const resource = /ram/i.test(m[2]!) ? "ram" : "cpu";
  return `${m[1]!.toLowerCase()}|${resource}|${m[3]!.toLowerCase()}`;
}

export function gcpCatalogBatch(pages: any[], opts: ImportOptions = {}): CatalogBatch {
  const all: any[] = [];
  for (const page of pages) {
    if (!page || !Array.isArray(page.skus)) throw new ImportFormatError("not a GCP Cloud Billing Catalog SKU list (skus missing)");
    all.push(...page.skus);
  }
  const source = "gcp_cloud_billing_catalog";
  const skus: SkuInput[] = [];
  const onDemandByResource = new Map<string, string[]>();
  const commits: any[] = [];
  for (const s of all) {
    const usageType = s.category?.usageType;
    const info = (s.pricingInfo ?? [])[0];
    const expr = info?.pricingExpression;
    if (!expr) continue;
    if (usageType === "Commit1Yr" || usageType === "Commit3Yr") {
      commits.push(s);
      continue;
    }
    if (usageType !== "OnDemand") continue;
    const regions: string[] = s.serviceRegions?.length ? s.serviceRegions : ["global"];
    const tiers = (expr.tieredRates ?? [])
      .map((r: any) => ({ startQuantity: price(r.startUsageAmount) ?? 0, endQuantity: null as number | null, unitPrice: money(r.unitPrice) }))
      .filter((t: any) => t.unitPrice !== null)
      .sort((a: any, b: any) => a.startQuantity - b.startQuantity);
    tiers.forEach((t: any, k: number) => (t.endQuantity = tiers[k + 1]?.startQuantity ?? null));
    for (const region of regions) {
      const providerSkuId = `gcp:sku:${s.skuId}:${region}`;
      skus.push({
        providerSkuId,
        displayName: `GCP ${s.description} (${region})`,
        service: String(s.category?.resourceFamily ?? "").toLowerCase(),
        providerService: String(s.category?.serviceDisplayName ?? ""),
        regionCode: region,
        usageType: String(s.category?.resourceGroup ?? ""),
        usageUnit: expr.usageUnit === "h" ? "Hrs" : String(expr.usageUnit ?? ""),
        tiers,
        source,
        asOf: dateOf(info.effectiveTime),
      });
      const key = gcpResourceKey(String(s.description ?? ""));
      if (key) (onDemandByResource.get(`${key}|${region}`) ?? onDemandByResource.set(`${key}|${region}`, []).get(`${key}|${region}`)!).push(providerSkuId);
    }
  }
  const offers: OfferInput[] = [];
  for (const c of commits) {
    const key = gcpResourceKey(String(c.description ?? ""));
    const info = c.pricingInfo[0];
    const rate = money(info.pricingExpression.tieredRates?.[0]?.unitPrice);
    if (!key || rate === null) continue;
    const y = c.category.usageType === "Commit1Yr" ? 1 : 3;
    for (const region of c.serviceRegions ?? []) {
      for (const providerSkuId of onDemandByResource.get(`${key}|${region}`) ?? []) {
        offers.push({
          offerKey: offerKey("resource_cud", null, termName(y), "no_upfront", providerSkuId),
          commitmentType: "resource_cud",
          contractTerm: termName(y),
          paymentOption: "no_upfront",
          durationSeconds: termSeconds(y),
          region,
          instanceFamily: key.split("|")[0]!,
          displayName: `GCP ${y}-year resource-based committed use discount (${c.description})`,
          isFlexible: false,
          lockInDays: y * 365,
          source,
          asOf: dateOf(info.effectiveTime),
          leases: [{ providerSkuId, recurringHourlyRate: rate, upfrontCost: 0, source, asOf: dateOf(info.effectiveTime) }],
        });
      }
    }
  }
  return withInsuredOffers({ provider: "gcp", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? source, skus, offers });
}
