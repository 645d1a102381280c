/**
 * Parsers of the providers' published price formats into catalog batches (lib/catalog/model.ts).
 * Pure: they take the parsed JSON and return a batch; `applyCatalogBatch` writes it.
 *
 * Identity: SKUs get the same `provider_sku_id` scheme as the bundled snapshot
 * (`aws:ec2:<region>:<type>:<os>`, `azure:vm:<region>:<arm sku>:<os>`), so importing a
 * provider file refreshes the seeded rows in place (ids stay stable for estimate lines).
 */
import { withInsuredOffers } from "./insured.ts";
import { AZURE_RETAIL_SOURCE, azureRetailRows } from "./refresh/azure.ts";
import { GCP_CATALOG_SOURCE, gcpCatalogRows } from "./refresh/gcp.ts";
import { exactSum } from "../pricing/decimal.ts";
import { spendCommitmentSplit } from "../pricing/index.ts";
import { CATALOG_CURRENCY, PUBLIC_CATALOG, instanceFamilyOf, publishedDate, publishedPrice, termName, termSeconds, type CatalogBatch, type OfferInput, type SkuInput } from "./model.ts";

export class ImportFormatError extends Error {}

const PAYMENT: Record<string, string> = { "No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront" };
const PAYMENT_LABEL: Record<string, string> = { no_upfront: "no upfront", partial_upfront: "partial upfront", all_upfront: "all upfront" };
const OS: Record<string, string> = { Linux: "linux", Windows: "windows", RHEL: "rhel", SUSE: "suse", "Red Hat Enterprise Linux": "rhel" };

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
//
// One mapping, two drivers: `awsOfferFileBatch` walks a parsed document, `streamAwsOfferFile`
// (refresh/awsOfferStream.ts) feeds the same mapping product by product and term by term.

/** The instances of a service that become catalog SKUs with the snapshot's identity. */
interface AwsInstanceKind {
  families: readonly string[];
  /**
   * The usage type of the instance-hour charge itself, after at most a region prefix
   * (`USW2-BoxUsage:m5.large`). Other products of the same family and instance type are other
   * charges or placements (Extended Support surcharges, Outposts, capacity reservations, Multi-AZ):
   * they must not take the instance's id.
   */
  usage: RegExp;
  /** Whether this variant is the one the catalog prices (the others are skipped). */
  accepts(a: Record<string, string>): boolean;
  id(a: Record<string, string>): string;
  displayName(a: Record<string, string>): string;
  service: string;
  /** What the offers name as product description (OS or engine). */
  description(a: Record<string, string>): string;
  riLabel: string;
}

function slug(v: string | undefined): string {
  return String(v ?? "").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
}

const isByol = (a: Record<string, string>) => /bring your own license/i.test(a.licenseModel ?? "");
/** Outposts, Local and Wavelength Zones are priced apart from their parent region. */
const inRegion = (a: Record<string, string>) => !a.locationType || a.locationType === "AWS Region";
const awsOs = (a: Record<string, string>) => OS[a.operatingSystem ?? ""] ?? slug(a.operatingSystem);
const usageOf = (charge: string) => new RegExp(`^(?:[A-Z0-9]+-)?${charge}:`);

/** ElastiCache engine as the SKU id names it: AWS's labels change ("Redis" became "Redis OSS"), the id does not. */
export function awsCacheEngineKey(engine: string | undefined): string {
  const e = engine ?? "";
  return /valkey/i.test(e) ? "valkey" : /redis/i.test(e) ? "redis" : /memcached/i.test(e) ? "memcached" : slug(e);
}

/**
 * RDS engine as the SKU id names it: `mysql`, `postgresql`, `mariadb`, `aurora-mysql`; editions
 * and bring-your-own-license variants of the commercial engines keep their own id
 * (`sql-server-standard`, `oracle-standard-two-byol`), as do Aurora's I/O-optimized instances.
 */
export function awsRdsEngineKey(a: Record<string, string>): string {
  return [slug(a.databaseEngine), slug(a.databaseEdition), isByol(a) ? "byol" : "", /IOOptimized/i.test(a.usagetype ?? "") ? "io-optimized" : ""].filter(Boolean).join("-");
}

const INSTANCE_KINDS: Record<string, AwsInstanceKind> = {
  AmazonEC2: {
    families: ["Compute Instance", "Compute Instance (bare metal)"],
    usage: usageOf("BoxUsage"),
    accepts: (a) => a.tenancy === "Shared" && (!a.preInstalledSw || a.preInstalledSw === "NA") && (!a.capacitystatus || a.capacitystatus === "Used") && !isByol(a) && inRegion(a),
    id: (a) => `aws:ec2:${a.regionCode}:${a.instanceType}:${awsOs(a)}`,
    displayName: (a) => `AWS ${a.instanceType} ${a.operatingSystem} ${a.regionCode}`,
    service: "compute",
    description: (a) => a.operatingSystem ?? "",
    riLabel: "Reserved Instance",
  },
  AmazonRDS: {
    families: ["Database Instance"],
    usage: usageOf("InstanceUsage(?:IOOptimized)?"),
    // RDS Custom and RDS on Outposts list the same class, engine and edition at their own prices.
    accepts: (a) => a.deploymentOption === "Single-AZ" && inRegion(a) && !/custom/i.test(a.deploymentModel ?? "") && !/outpost/i.test(a.databaseEngine ?? ""),
    id: (a) => `aws:rds:${a.regionCode}:${a.instanceType}:${awsRdsEngineKey(a)}`,
    displayName: (a) => `AWS ${a.instanceType} ${[a.databaseEngine, a.databaseEdition].filter(Boolean).join(" ")} ${a.regionCode}`,
    service: "database",
    description: (a) => a.databaseEngine ?? "",
    riLabel: "Reserved DB Instance",
  },
  AmazonElastiCache: {
    families: ["Cache Instance"],
    usage: usageOf("NodeUsage"),
    accepts: inRegion,
    id: (a) => `aws:elasticache:${a.regionCode}:${a.instanceType}:${awsCacheEngineKey(a.cacheEngine)}`,
    displayName: (a) => `AWS ${a.instanceType} ${a.cacheEngine} ${a.regionCode}`,
    service: "cache",
    description: (a) => a.cacheEngine ?? "",
    riLabel: "Reserved Cache Node",
  },
  AmazonES: {
    families: ["Amazon OpenSearch Service Instance", "Elastic Search Instance"],
    usage: usageOf("ESInstance"),
    accepts: inRegion,
    id: (a) => `aws:opensearch:${a.regionCode}:${a.instanceType}`,
    displayName: (a) => `AWS OpenSearch ${a.instanceType} ${a.regionCode}`,
    service: "search",
    description: () => "OpenSearch",
    riLabel: "Reserved Instance",
  },
  AmazonRedshift: {
    families: ["Compute Instance"],
    usage: usageOf("Node"),
    accepts: inRegion,
    id: (a) => `aws:redshift:${a.regionCode}:${a.instanceType}`,
    displayName: (a) => `AWS Redshift ${a.instanceType} ${a.regionCode}`,
    service: "data_warehouse",
    description: () => "Redshift",
    riLabel: "Reserved Node",
  },
};

/** What an offer file says about itself before its products. */
export interface AwsOfferHeader {
  offerCode: string;
  version?: string | null;
  publicationDate?: string | null;
}

/** A product kept because it becomes a SKU: its descriptor without prices, and what its offers name. */
interface AwsKeptProduct {
  sku: Omit<SkuInput, "tiers">;
  /** An instance of the service's kind: only those have reserved offers (not e.g. Dedicated Host reservations). */
  instance: boolean;
  riLabel: string;
  description: string;
}

type Tier = SkuInput["tiers"][number];

/**
 * Maps an offer file's products and terms to SKUs and reserved offers (provider offers only).
 * Keeps only the products that become SKUs, each as a small descriptor, so a driver that sees
 * products first and terms later holds no more than that. Every product must be added before
 * any SKU or offer is asked for: two products of one id are settled by their AWS SKU codes
 * (the lowest wins), whatever their order in the file.
 */
export class AwsOfferMapping {
  readonly offerCode: string;
  readonly source: string;
  readonly asOf: string;
  private readonly kind: AwsInstanceKind | undefined;
  private readonly kept = new Map<string, AwsKeptProduct>();
  /** Provider SKU id → the AWS SKU code holding it (ids stay unique). */
  private readonly ids = new Map<string, string>();

  constructor(header: AwsOfferHeader) {
    this.offerCode = header.offerCode;
    this.asOf = publishedDate(header.publicationDate);
    this.source = `aws_price_list:${this.offerCode}:${header.version ?? this.asOf}`;
    this.kind = INSTANCE_KINDS[this.offerCode];
  }

  /**
   * Records a product; false when it does not become a SKU (another variant or charge, or an id
   * already held by a product of a lower SKU code). A product of a higher code gives way.
   */
  addProduct(awsSku: string, p: any): boolean {
    const a: Record<string, string> = p?.attributes ?? {};
    const isInstance = !!this.kind && this.kind.families.includes(p?.productFamily);
    if (isInstance && (!a.instanceType || !a.regionCode || !this.kind!.usage.test(a.usagetype ?? "") || !this.kind!.accepts(a))) return false;
    const providerSkuId = isInstance ? this.kind!.id(a) : `aws:${this.offerCode}:${awsSku}`;
    const holder = this.ids.get(providerSkuId);
    if (holder !== undefined) {
      if (holder <= awsSku) return false;
      this.kept.delete(holder);
    }
    this.ids.set(providerSkuId, awsSku);
    this.kept.set(awsSku, {
      sku: {
        providerSkuId,
        displayName: isInstance ? this.kind!.displayName(a) : `AWS ${this.offerCode} ${a.usagetype ?? awsSku}`,
        instanceType: a.instanceType ?? "",
        service: isInstance ? this.kind!.service : String(p?.productFamily ?? ""),
        providerService: this.offerCode,
        regionCode: a.regionCode ?? "",
        operatingSystem: a.operatingSystem ?? "",
        databaseEngine: a.databaseEngine ?? "",
        cacheEngine: a.cacheEngine ?? "",
        usageType: a.usagetype ?? "",
        source: this.source,
        asOf: this.asOf,
      },
      instance: isInstance,
      riLabel: isInstance ? this.kind!.riLabel : "Reserved Instance",
      description: isInstance ? this.kind!.description(a) : (a.operatingSystem ?? ""),
    });
    return true;
  }

  has(awsSku: string): boolean {
    return this.kept.has(awsSku);
  }

  /** The AWS SKU codes of the kept products. */
  keptSkus(): IterableIterator<string> {
    return this.kept.keys();
  }

  /** A kept product's SKU priced by its OnDemand terms (`{ offerTermCode: term }`, absent: no on-demand price). */
  sku(awsSku: string, onDemand: Record<string, any> | undefined): SkuInput | null {
    const k = this.kept.get(awsSku);
    if (!k) return null;
    const od = Object.values<any>(onDemand ?? {})[0];
    const dims = Object.values<any>(od?.priceDimensions ?? {});
    const tiers = dims
      .map((d) => ({ startQuantity: publishedPrice(d.beginRange) ?? 0, endQuantity: d.endRange === "Inf" || d.endRange === undefined ? null : publishedPrice(d.endRange), unitPrice: publishedPrice(d.pricePerUnit?.[CATALOG_CURRENCY]) }))
      .filter((t): t is Tier => t.unitPrice !== null)
      .sort((x, y) => x.startQuantity - y.startQuantity);
    return { ...k.sku, usageUnit: dims[0]?.unit ?? "Hrs", tiers };
  }

  /**
   * A kept instance's reserved terms (`{ offerTermCode: term }`) as offers. Legacy purchase
   * options ("Heavy Utilization", …), terms other than 1 or 3 years and the reservations of
   * other products (Dedicated Hosts) are skipped.
   */
  reservedOffers(awsSku: string, reserved: Record<string, any> | undefined): OfferInput[] {
    const k = this.kept.get(awsSku);
    if (!k?.instance) return [];
    const { providerSkuId, regionCode, instanceType } = k.sku;
    const offers: OfferInput[] = [];
    for (const term of Object.values<any>(reserved ?? {})) {
      const ta = term?.termAttributes ?? {};
      const payment = PAYMENT[ta.PurchaseOption];
      const y = termYears(ta.LeaseContractLength);
      if (!payment || (y !== 1 && y !== 3)) continue;
      const upfrontParts: [number, number][] = [];
      const recurringParts: [number, number][] = [];
      for (const d of Object.values<any>(term.priceDimensions ?? {})) {
        const v = publishedPrice(d.pricePerUnit?.[CATALOG_CURRENCY]) ?? 0;
        (d.unit === "Quantity" ? upfrontParts : recurringParts).push([v, 1]);
      }
      const upfront = exactSum(upfrontParts);
      const recurring = exactSum(recurringParts);
      const offeringClass = ta.OfferingClass === "convertible" ? "convertible" : "standard";
      offers.push({
        offerKey: offerKey("reserved_instance", offeringClass, termName(y), payment, providerSkuId),
        commitmentType: "reserved_instance",
        contractTerm: termName(y),
        paymentOption: payment,
        offeringClass,
        durationSeconds: termSeconds(y),
        region: regionCode || null,
        instanceType: instanceType || null,
        instanceFamily: instanceType ? instanceFamilyOf(instanceType) : null,
        productDescription: k.description || null,
        displayName: `AWS ${y}-year ${offeringClass === "convertible" ? "Convertible" : "Standard"} ${k.riLabel}, ${PAYMENT_LABEL[payment]} (${instanceType || awsSku} ${regionCode ?? ""})`.trim(),
        isFlexible: offeringClass === "convertible",
        lockInDays: y * 365,
        source: this.source,
        asOf: term.effectiveDate ? publishedDate(term.effectiveDate) : this.asOf,
        leases: [{ providerSkuId, recurringHourlyRate: recurring, upfrontCost: upfront, source: this.source, asOf: this.asOf }],
      });
    }
    return offers;
  }
}

/** "1yr" / "3 years" → 1 / 3; null when not a term length. */
function termYears(v: unknown): number | null {
  const m = /^(\d+)\s*(yr|year|years)\b/i.exec(String(v ?? "").trim());
  return m ? Number(m[1]) : null;
}

export function awsOfferFileBatch(doc: any, opts: ImportOptions = {}): CatalogBatch {
  if (!doc || typeof doc.products !== "object" || typeof doc.terms !== "object") throw new ImportFormatError("not an AWS Price List offer file (products/terms missing)");
  const m = new AwsOfferMapping({ offerCode: String(doc.offerCode ?? "unknown"), version: doc.version, publicationDate: doc.publicationDate });
  const skus: SkuInput[] = [];
  const offers: OfferInput[] = [];
  for (const [awsSku, p] of Object.entries<any>(doc.products)) m.addProduct(awsSku, p);
  for (const awsSku of m.keptSkus()) {
    skus.push(m.sku(awsSku, doc.terms.OnDemand?.[awsSku])!);
    offers.push(...m.reservedOffers(awsSku, doc.terms.Reserved?.[awsSku]));
  }
  return withInsuredOffers({ provider: "aws", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? `aws_price_list:${m.offerCode}`, skus, offers });
}

// ---- AWS Savings Plans rate file (savingsPlan/v1.0/aws/AWSComputeSavingsPlan/…/<region>/index.json)
//
// As for offer files: `awsSavingsPlansBatch` walks a parsed document, `streamAwsSavingsPlans`
// (refresh/awsSavingsPlans.ts) feeds the same mapping rate by rate.

const SP_OS: Record<string, string> = { RunInstances: "linux", "RunInstances:0002": "windows", "RunInstances:0010": "rhel", "RunInstances:000g": "suse" };

/** RDS operation codes (`CreateDBInstance:NNNN`) → the engine part of the RDS SKU id (awsRdsEngineKey). */
export const RDS_OPERATION_ENGINES: Record<string, string> = {
  "CreateDBInstance:0002": "mysql",
  "CreateDBInstance:0003": "oracle-standard-one-byol",
  "CreateDBInstance:0004": "oracle-standard-byol",
  "CreateDBInstance:0005": "oracle-enterprise-byol",
  "CreateDBInstance:0006": "oracle-standard-one",
  "CreateDBInstance:0008": "sql-server-standard-byol",
  "CreateDBInstance:0009": "sql-server-enterprise-byol",
  "CreateDBInstance:0010": "sql-server-express",
  "CreateDBInstance:0011": "sql-server-web",
  "CreateDBInstance:0012": "sql-server-standard",
  "CreateDBInstance:0014": "postgresql",
  "CreateDBInstance:0015": "sql-server-enterprise",
  "CreateDBInstance:0016": "aurora-mysql",
  "CreateDBInstance:0018": "mariadb",
  "CreateDBInstance:0019": "oracle-standard-two-byol",
  "CreateDBInstance:0020": "oracle-standard-two",
  "CreateDBInstance:0021": "aurora-postgresql",
};

interface SpPlan {
  commitmentType: "compute_savings_plan" | "ec2_instance_savings_plan" | "database_savings_plan";
  planType: string;
  label: string;
}
const SP_PLANS: Record<string, SpPlan> = {
  ComputeSavingsPlans: { commitmentType: "compute_savings_plan", planType: "compute", label: "Compute" },
  EC2InstanceSavingsPlans: { commitmentType: "ec2_instance_savings_plan", planType: "ec2_instance", label: "EC2 Instance" },
  DatabaseSavingsPlans: { commitmentType: "database_savings_plan", planType: "database", label: "Database" },
};

/** The Savings Plans offer code a plan family is published under (the files do not name it). */
export function awsSavingsPlansOfferCode(productFamily: string): string | null {
  const plan = SP_PLANS[productFamily];
  if (!plan) return null;
  return plan.commitmentType === "database_savings_plan" ? "AWSDatabaseSavingsPlans" : "AWSComputeSavingsPlan";
}

export interface AwsSavingsPlansHeader {
  regionCode: string;
  version?: string | null;
  publicationDate?: string | null;
  /** AWSComputeSavingsPlan / AWSDatabaseSavingsPlans; found from the plan families when absent. */
  offerCode?: string | null;
}

/** A savings plan term, as far as its rates need it. */
export interface AwsSavingsPlanTerm {
  sku: string;
  effectiveDate?: string | null;
  leaseContractLength?: { duration?: number | string; unit?: string } | null;
}

/**
 * The SKU a rate discounts, in the catalog's ids; null for usage the catalog does not price
 * (Fargate, Lambda, Multi-AZ, dedicated tenancy, Local Zones: their usage types carry a second prefix).
 */
function discountedSkuId(plan: SpPlan, region: string, r: any): { providerSkuId: string; instanceType: string } | null {
  const usageType = String(r?.discountedUsageType ?? "");
  if (plan.commitmentType === "database_savings_plan") {
    const m = /^(?:[A-Z0-9]+-)?InstanceUsage:(db\.[^:]+)$/.exec(usageType);
    const engine = RDS_OPERATION_ENGINES[r?.discountedOperation];
    if (r?.discountedServiceCode !== "AmazonRDS" || !m || !engine) return null;
    return { providerSkuId: `aws:rds:${region}:${m[1]}:${engine}`, instanceType: m[1]! };
  }
  const m = /^(?:[A-Z0-9]+-)?BoxUsage:([^:]+)$/.exec(usageType);
  const os = SP_OS[r?.discountedOperation];
  if (r?.discountedServiceCode !== "AmazonEC2" || !m || !os) return null;
  return { providerSkuId: `aws:ec2:${region}:${m[1]}:${os}`, instanceType: m[1]! };
}

/**
 * Maps a Savings Plans rate file to offers: one per (plan, term, payment) and, for EC2 instance
 * plans, instance family; each rate of a priced SKU becomes a lease. Keeps only each plan
 * product's few attributes and the offers being built.
 */
export class AwsSavingsPlansMapping {
  readonly region: string;
  readonly asOf: string;
  private readonly version: string;
  private code: string | null;
  private readonly plans = new Map<string, { plan: SpPlan; payment: string; years: number | null }>();
  private readonly byKey = new Map<string, OfferInput>();
  private readonly leased = new Set<string>();

  constructor(header: AwsSavingsPlansHeader) {
    this.region = String(header.regionCode ?? "");
    this.asOf = publishedDate(header.publicationDate);
    this.version = header.version ?? this.asOf;
    this.code = header.offerCode ?? null;
  }

  get offerCode(): string | null {
    return this.code;
  }

  get source(): string {
    return `aws_savings_plans:${this.code ?? "unknown"}:${this.version}`;
  }

  /** Records a plan product (`{ sku, productFamily, attributes: { purchaseOption, purchaseTerm } }`). */
  addProduct(p: any): void {
    const plan = SP_PLANS[p?.productFamily];
    const payment = PAYMENT[p?.attributes?.purchaseOption];
    if (!plan || !payment || typeof p.sku !== "string") return;
    this.code ??= awsSavingsPlansOfferCode(p.productFamily);
    this.plans.set(p.sku, { plan, payment, years: termYears(p.attributes?.purchaseTerm) });
  }

  /** Adds one rate of a term; ignored when its plan or discounted usage is not priced here (or the SKU already has a rate in that offer). */
  addRate(term: AwsSavingsPlanTerm, r: any): void {
    const p = this.plans.get(term.sku);
    if (!p) return;
    const y = term.leaseContractLength?.duration ? Number(term.leaseContractLength.duration) : p.years;
    const rate = publishedPrice(r?.discountedRate?.price);
    if ((y !== 1 && y !== 3) || rate === null || (r.discountedRate.currency && r.discountedRate.currency !== CATALOG_CURRENCY)) return;
    const target = discountedSkuId(p.plan, this.region, r);
    if (!target) return;
    const { commitmentType, planType, label } = p.plan;
    const perFamily = commitmentType === "ec2_instance_savings_plan";
    const instanceFamily = instanceFamilyOf(target.instanceType);
    const key = offerKey(commitmentType, null, termName(y), p.payment, perFamily ? `${this.region}|${instanceFamily}` : "all");
    let o = this.byKey.get(key);
    if (!o) {
      o = {
        offerKey: key,
        commitmentType,
        contractTerm: termName(y),
        paymentOption: p.payment,
        offeringClass: null,
        planType,
        durationSeconds: termSeconds(y),
        region: perFamily ? this.region : null,
        instanceFamily: perFamily ? instanceFamily : null,
        displayName: `AWS ${y}-year ${label} Savings Plan, ${PAYMENT_LABEL[p.payment]}${perFamily ? ` (${instanceFamily} ${this.region})` : ""}`,
        isFlexible: true,
        lockInDays: y * 365,
        source: this.source,
        asOf: this.asOf,
        leases: [],
      };
      this.byKey.set(key, o);
    }
    const leaseKey = `${key}|${target.providerSkuId}`;
    if (this.leased.has(leaseKey)) return;
    this.leased.add(leaseKey);
    // The file gives the effective hourly rate; the money model splits it by payment option (the
    // AWS Pricing Calculator's rule), in exact decimals: 0.5499 × 26,280 × 0.5 is 7,225.686.
    const split = spendCommitmentSplit(rate, 8760 * y, p.payment);
    o.leases.push({ providerSkuId: target.providerSkuId, recurringHourlyRate: split.hourly, upfrontCost: split.upfront, source: this.source, asOf: this.asOf });
  }

  /** The offers built so far, each with its leases. */
  offers(): OfferInput[] {
    return [...this.byKey.values()];
  }
}

export function awsSavingsPlansBatch(doc: any, opts: ImportOptions = {}): CatalogBatch {
  if (!doc || !Array.isArray(doc.products) || !Array.isArray(doc.terms?.savingsPlan)) throw new ImportFormatError("not an AWS Savings Plans rate file (products/terms.savingsPlan missing)");
  const m = new AwsSavingsPlansMapping({ regionCode: doc.regionCode, version: doc.version, publicationDate: doc.publicationDate });
  for (const p of doc.products) m.addProduct(p);
  for (const term of doc.terms.savingsPlan) for (const r of term?.rates ?? []) m.addRate(term, r);
  return withInsuredOffers({ provider: "aws", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? `aws_savings_plans:${m.region}`, skus: [], offers: m.offers() });
}

// ---- Azure Retail Prices API pages (https://prices.azure.com/api/retail/prices)

export function azureRetailBatch(pages: any[], opts: ImportOptions = {}): CatalogBatch {
  const items: any[] = [];
  for (const page of pages) {
    if (!page || !Array.isArray(page.Items)) throw new ImportFormatError("not an Azure Retail Prices page (Items missing)");
    items.push(...page.Items);
  }
  const { skus, offers } = azureRetailRows(items);
  return withInsuredOffers({ provider: "azure", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? AZURE_RETAIL_SOURCE, skus, offers });
}

// ---- GCP Cloud Billing Catalog (services/{service}/skus)

export function gcpCatalogBatch(pages: any[], opts: ImportOptions = {}): CatalogBatch {
  const all: any[] = [];
  for (const page of pages) {
    if (!page || !Array.isArray(page.skus)) throw new ImportFormatError("not a GCP Cloud Billing Catalog SKU list (skus missing)");
    all.push(...page.skus);
  }
  const { skus, offers } = gcpCatalogRows(all);
  return withInsuredOffers({ provider: "gcp", orgId: opts.orgId ?? PUBLIC_CATALOG, source: opts.feed ?? GCP_CATALOG_SOURCE, skus, offers });
}
