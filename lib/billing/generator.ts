/**
 * Realistic, spec-consistent FOCUS 1.2 data for the demo and the benchmarks: several providers,
 * a billing (payer) account and linked accounts each, compute and database fleets whose size
 * follows a daily and weekly shape, and commitments (RIs / reservations / resource CUDs, savings
 * plans / spend CUDs, insured `_gris` ones) with Purchase, Used and Unused rows. All commitments
 * are no-upfront, so per commitment and month Σ(Used + Unused) EffectiveCost = Σ Purchase
 * BilledCost exactly (to 1e-10). Rows are produced lazily (a generator), so any size streams.
 */
import { INSURED_TERMS } from "../catalog/insured.ts";
import { stringify } from "csv-stringify/sync";
import type { Writable } from "node:stream";
import type { Provider } from "./sql.ts";

export const FOCUS_GENERATOR_COLUMNS = [
  "ProviderName", "PublisherName", "InvoiceIssuerName", "BillingAccountId", "BillingAccountName", "SubAccountId", "SubAccountName", "BillingCurrency",
  "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
  "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ListUnitPrice", "ContractedUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit",
  "ConsumedQuantity", "ConsumedUnit", "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SkuPriceDetails", "ResourceId", "ResourceName", "ResourceType",
  "RegionId", "RegionName", "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountCategory", "CommitmentDiscountType", "CommitmentDiscountStatus",
  "CommitmentDiscountQuantity", "CommitmentDiscountUnit", "Tags",
  "x_CommitmentType", "x_ContractTerm", "x_PaymentOption", "x_FeeRate", "x_CommitmentStart", "x_CommitmentEnd",
] as const;
type Col = (typeof FOCUS_GENERATOR_COLUMNS)[number];
const IDX = Object.fromEntries(FOCUS_GENERATOR_COLUMNS.map((c, i) => [c, i])) as Record<Col, number>;

export interface GeneratorOptions {
  /** Data ends at this hour (exclusive); the last month is `now`'s month. */
  now: Date;
  /** Months of data, ending with the current one. */
  months?: number;
  providers?: Provider[];
  accountsPerProvider?: number;
  /** Compute/database fleets per linked account. */
  resourcesPerAccount?: number;
  /** Row grain of usage: one row per hour, per day or per month. */
  grain?: "hourly" | "daily" | "monthly";
  seed?: number;
  /** Commitments (default true). */
  commitments?: boolean;
}

interface InstanceSpec { service: string; category: string; type: string; price: number; unit: string; family: string; resourceType: string }
interface ProviderSpec {
  provider: Provider;
  name: string;
  billingAccountId: string;
  billingAccountName: string;
  account(i: number): { id: string; name: string };
  regions: [string, string][];
  instances: InstanceSpec[];
  storage: { service: string; price: number };
  resourceId(acct: string, region: string, i: number, type: string): string;
  usageType: string; // focus type for resource commitments
  spendType: string;
  usageCommitment: string; // DESIGN §5 type
  spendCommitment: string;
  commitmentId(kind: string, i: number): string;
}

const SPECS: Record<Provider, ProviderSpec> = {
  aws: {
    provider: "aws",
    name: "AWS",
    billingAccountId: "900000000001",
    billingAccountName: "Acme Corp Payer",
    account: (i) => ({ id: String(210000000000 + i), name: ["prod-platform", "data-analytics", "staging", "ml-training", "shared-services", "sandbox"][i % 6] + (i >= 6 ? `-${i}` : "") }),
    regions: [["us-east-1", "US East (N. Virginia)"], ["eu-west-1", "EU (Ireland)"]],
    instances: [
      { service: "Amazon Elastic Compute Cloud", category: "Compute", type: "m6i.large", price: 0.096, unit: "Hours", family: "m6i", resourceType: "Instance" },
      { service: "Amazon Elastic Compute Cloud", category: "Compute", type: "c5.xlarge", price: 0.17, unit: "Hours", family: "c5", resourceType: "Instance" },
      { service: "Amazon Relational Database Service", category: "Databases", type: "db.r6g.large", price: 0.258, unit: "Hours", family: "db", resourceType: "DB Instance" },
    ],
    storage: { service: "Amazon Simple Storage Service", price: 0.023 },
    resourceId: (acct, region, i, type) => `arn:aws:ec2:${region}:${acct}:instance/i-${type.replace(/\W/g, "")}${String(i).padStart(8, "0")}`,
    usageType: "Reserved Instance",
    spendType: "Savings Plan",
    usageCommitment: "reserved_instance",
    spendCommitment: "compute_savings_plan",
    commitmentId: (kind, i) => (kind === "usage" ? `arn:aws:ec2:us-east-1:900000000001:reserved-instances/ri-${String(i).padStart(8, "0")}` : `arn:aws:savingsplans::900000000001:savingsplan/sp-${String(i).padStart(8, "0")}`),
  },
  azure: {
    provider: "azure",
    name: "Microsoft",
    billingAccountId: "/providers/Microsoft.Billing/billingAccounts/70000001",
    billingAccountName: "Acme Corp EA",
    account: (i) => ({ id: `/subscriptions/0000a${String(i).padStart(3, "0")}-1111-2222-3333-444455556666`, name: ["Prod", "Analytics", "Dev", "Shared"][i % 4] + (i >= 4 ? ` ${i}` : "") }),
    regions: [["eastus", "East US"], ["westeurope", "West Europe"]],
    instances: [
      { service: "Virtual Machines", category: "Compute", type: "Standard_D2s_v5", price: 0.096, unit: "Hours", family: "Standard_Ds_v", resourceType: "Virtual machine" },
      { service: "Virtual Machines", category: "Compute", type: "Standard_E4s_v5", price: 0.252, unit: "Hours", family: "Standard_Es_v", resourceType: "Virtual machine" },
      { service: "Azure SQL Database", category: "Databases", type: "GP_Gen5_2", price: 0.5044, unit: "Hours", family: "GP_Gen", resourceType: "SQL database" },
    ],
    storage: { service: "Storage", price: 0.0184 },
    resourceId: (acct, region, i, type) => `${acct}/resourceGroups/rg-${region}/providers/Microsoft.Compute/virtualMachines/vm-${type.toLowerCase().replace(/\W/g, "")}-${i}`,
    usageType: "Reservation",
    spendType: "Savings Plan",
    usageCommitment: "reservation",
    spendCommitment: "savings_plan",
    commitmentId: (kind, i) => `/providers/Microsoft.Capacity/reservationOrders/${kind === "usage" ? "ro" : "sp"}-${String(i).padStart(6, "0")}`,
  },
  gcp: {
    provider: "gcp",
    name: "Google Cloud",
    billingAccountId: "01A2B3-C4D5E6-F7A8B9",
    billingAccountName: "Acme Corp GCP Billing",
    account: (i) => ({ id: `acme-${["prod", "data", "dev", "ml"][i % 4]}-${100 + i}`, name: `Acme ${["Prod", "Data", "Dev", "ML"][i % 4]} ${100 + i}` }),
    regions: [["us-central1", "Iowa"], ["europe-west1", "Belgium"]],
    instances: [
      { service: "Compute Engine", category: "Compute", type: "n2-standard-4", price: 0.194236, unit: "Hours", family: "n2", resourceType: "Compute Instance" },
      { service: "Compute Engine", category: "Compute", type: "e2-standard-2", price: 0.067006, unit: "Hours", family: "e2", resourceType: "Compute Instance" },
      { service: "Cloud SQL", category: "Databases", type: "db-custom-2-7680", price: 0.1645, unit: "Hours", family: "db", resourceType: "Cloud SQL Instance" },
    ],
    storage: { service: "Cloud Storage", price: 0.02 },
    resourceId: (acct, region, i, type) => `//compute.googleapis.com/projects/${acct}/zones/${region}-a/instances/${type}-${i}`,
    usageType: "Committed Use Discount",
    spendType: "Committed Use Discount",
    usageCommitment: "resource_cud",
    spendCommitment: "spend_cud",
    commitmentId: (kind, i) => `projects/acme-billing/regions/us-central1/commitments/${kind === "usage" ? "rcud" : "scud"}-${i}`,
  },
};

/** Deterministic PRNG (mulberry32): generated data is reproducible from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const r10 = (x: number) => Math.round(x * 1e10) / 1e10;
const money = (x: number) => r10(x).toFixed(10);
const isoZ = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, "Z");
const HOUR = 3_600_000;

interface Fleet { provider: Provider; acct: { id: string; name: string }; spec: InstanceSpec; region: [string, string]; id: string; base: number }
interface Commitment {
  provider: Provider;
  id: string;
  name: string;
  kind: "usage" | "spend";
  focusType: string;
  type: string;
  term: string;
  feeRate: number | null;
  /** Usage: instance type and count; spend: $/hour. */
  instanceType?: string;
  count?: number;
  hourly: number;
  discount: number;
  holding: { id: string; name: string };
  start: Date;
  end: Date;
}

/** Fleet size multiplier: daytime peak, night trough, quieter weekends. */
function shape(t: Date): number {
  const h = t.getUTCHours();
  const daily = 1 + 0.35 * Math.sin(((h - 8) / 24) * 2 * Math.PI);
  const dow = t.getUTCDay();
  return daily * (dow === 0 || dow === 6 ? 0.7 : 1);
}

/** Instance-hours of a fleet over [s, e): hourly shape summed. */
function instanceHours(f: Fleet, s: Date, e: Date): number {
  let sum = 0;
  for (let t = s.getTime(); t < e.getTime(); t += HOUR) sum += Math.max(0, Math.round(f.base * shape(new Date(t))));
  return sum;
}

/** Generates FOCUS rows (arrays in FOCUS_GENERATOR_COLUMNS order), lazily. */
export function* generateFocusRows(opts: GeneratorOptions): Generator<(string | null)[]> {
  const providers = opts.providers ?? ["aws", "azure", "gcp"];
  const months = opts.months ?? 3;
  const nAcc = opts.accountsPerProvider ?? 3;
  const nRes = opts.resourcesPerAccount ?? 3;
  const grain = opts.grain ?? "hourly";
  const rand = rng(opts.seed ?? 42);
  const end = new Date(Math.floor(opts.now.getTime() / HOUR) * HOUR);
  const firstMonth = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - (months - 1), 1));

  for (const p of providers) {
    const spec = SPECS[p];
    const accounts = Array.from({ length: nAcc }, (_, i) => spec.account(i));
    const fleets: Fleet[] = [];
    for (const acct of accounts)
      for (let i = 0; i < nRes; i++) {
        const inst = spec.instances[Math.floor(rand() * spec.instances.length)]!;
        const region = spec.regions[i % spec.regions.length]!;
        fleets.push({ provider: p, acct, spec: inst, region, id: spec.resourceId(acct.id, region[0], fleets.length, inst.type), base: 1 + Math.floor(rand() * 4) });
      }
    // Commitments sized on average usage so troughs leave some Unused.
    const commits: Commitment[] = [];
    if (opts.commitments !== false && fleets.length) {
      const avgOd = fleets.reduce((s, f) => s + f.base * f.spec.price * 0.91, 0);
      const holding = accounts[0]!;
      const started = new Date(Date.UTC(firstMonth.getUTCFullYear(), firstMonth.getUTCMonth() - 2, 1));
      const main = fleets[0]!.spec;
      const riCount = Math.max(1, Math.round(fleets.filter((f) => f.spec.type === main.type).reduce((s, f) => s + f.base, 0) * 0.4));
      const usageDiscount = 0.38;
      commits.push({
        provider: p, id: spec.commitmentId("usage", 1), name: `${spec.usageType} ${main.type} x${riCount}`, kind: "usage", focusType: spec.usageType, type: spec.usageCommitment,
        term: "one_year", feeRate: null, instanceType: main.type, count: riCount, hourly: riCount * main.price * (1 - usageDiscount), discount: usageDiscount,
        holding, start: started, end: new Date(started.getTime() + 365 * 24 * HOUR),
      });
      const spDiscount = 0.28;
      const spHourly = Math.round(avgOd * 0.3 * (1 - spDiscount) * 1000) / 1000 || 0.001;
      commits.push({
        provider: p, id: spec.commitmentId("spend", 2), name: `${spec.spendType} 3y $${spHourly}/h`, kind: "spend", focusType: spec.spendType, type: spec.spendCommitment,
        term: "three_year", feeRate: null, hourly: spHourly, discount: spDiscount, holding, start: started, end: new Date(started.getTime() + 1095 * 24 * HOUR),
      });
      // Insured (_gris): a 3-year no-upfront commitment bought by the service; thirty-day lock-in ended → rebates of unused value.
      const insHourly = Math.round(avgOd * 0.2 * (1 - spDiscount) * 1000) / 1000 || 0.001;
      const insStart = new Date(Date.UTC(firstMonth.getUTCFullYear(), firstMonth.getUTCMonth() - 1, 1));
      commits.push({
        provider: p, id: spec.commitmentId("spend", 3), name: `Insured ${spec.spendType} $${insHourly}/h (thirty_day_gris)`, kind: "spend", focusType: spec.spendType,
        type: spec.spendCommitment, term: "thirty_day_gris", feeRate: INSURED_TERMS.find((g) => g.contractTerm === "thirty_day_gris")!.feeRate, hourly: insHourly, discount: spDiscount, holding, start: insStart, end: new Date(insStart.getTime() + 1095 * 24 * HOUR),
      });
    }

    for (let m = new Date(firstMonth); m < end; m = new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1))) {
      const mEnd = new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1));
      const bpStart = isoZ(m);
      const bpEnd = isoZ(mEnd);
      const periodEnd = mEnd < end ? mEnd : end;
      const base = (acct: { id: string; name: string }): (string | null)[] => {
        const row: (string | null)[] = new Array(FOCUS_GENERATOR_COLUMNS.length).fill(null);
        row[IDX.ProviderName] = spec.name;
        row[IDX.PublisherName] = spec.name;
        row[IDX.InvoiceIssuerName] = spec.name;
        row[IDX.BillingAccountId] = spec.billingAccountId;
        row[IDX.BillingAccountName] = spec.billingAccountName;
        row[IDX.SubAccountId] = acct.id;
        row[IDX.SubAccountName] = acct.name;
        row[IDX.BillingCurrency] = "USD";
        row[IDX.BillingPeriodStart] = bpStart;
        row[IDX.BillingPeriodEnd] = bpEnd;
        return row;
      };

      // Purchase rows: the recurring fee of the part of the month generated.
      for (const c of commits) {
        const s = c.start > m ? c.start : m;
        const e = c.end < periodEnd ? c.end : periodEnd;
        if (s >= e) continue;
        const hours = (e.getTime() - s.getTime()) / HOUR;
        const row = base(c.holding);
        row[IDX.ChargePeriodStart] = isoZ(s);
        row[IDX.ChargePeriodEnd] = isoZ(e);
        row[IDX.ChargeCategory] = "Purchase";
        row[IDX.ChargeFrequency] = "Recurring";
        row[IDX.ChargeDescription] = `${c.name} recurring fee`;
        row[IDX.BilledCost] = money(r10(c.hourly) * hours);
        row[IDX.EffectiveCost] = money(0);
        row[IDX.ListCost] = money(r10(c.hourly) * hours);
        row[IDX.ContractedCost] = money(r10(c.hourly) * hours);
        row[IDX.PricingCategory] = "Standard";
        row[IDX.PricingQuantity] = String(hours);
        row[IDX.PricingUnit] = "Hours";
        row[IDX.ServiceCategory] = "Compute";
        row[IDX.ServiceName] = c.kind === "usage" ? SPECS[p].instances[0]!.service : spec.spendType;
        row[IDX.RegionId] = spec.regions[0]![0];
        row[IDX.RegionName] = spec.regions[0]![1];
        setCommitment(row, c, null);
        row[IDX.CommitmentDiscountQuantity] = c.kind === "usage" ? String(c.count) : String(c.hourly);
        row[IDX.CommitmentDiscountUnit] = c.kind === "usage" ? "Instances" : "USD/Hour";
        row[IDX.x_CommitmentType] = c.type;
        row[IDX.x_ContractTerm] = c.term;
        row[IDX.x_PaymentOption] = "no_upfront";
        row[IDX.x_FeeRate] = c.feeRate === null ? null : String(c.feeRate);
        row[IDX.x_CommitmentStart] = isoZ(c.start);
        row[IDX.x_CommitmentEnd] = isoZ(c.end);
        if (c.kind === "usage") row[IDX.SkuPriceDetails] = JSON.stringify({ InstanceType: c.instanceType });
        yield row;
      }

      // Usage slots of the month.
      const step = grain === "hourly" ? HOUR : grain === "daily" ? 24 * HOUR : 0;
      for (let t = m.getTime(); t < periodEnd.getTime(); t = step ? t + step : periodEnd.getTime()) {
        const s = new Date(t);
        const e = new Date(step ? Math.min(t + step, periodEnd.getTime()) : periodEnd.getTime());
        const hours = (e.getTime() - s.getTime()) / HOUR;
        const active = commits.filter((c) => c.start <= s && c.end >= e);
        // Instance-hours per fleet in this slot, then coverage: usage commitments first, then spend ones.
        const byBase = new Map<number, number>();
        const qty = fleets.map((f) => {
          if (grain === "hourly") return Math.max(0, Math.round(f.base * shape(s)));
          if (!byBase.has(f.base)) byBase.set(f.base, instanceHours(f, s, e));
          return byBase.get(f.base)!;
        });
        const remainingQty = [...qty];
        const used: { f: number; c: Commitment; qty: number; od: number; eff: number }[] = [];
        for (const c of active.filter((x) => x.kind === "usage")) {
          let cap = c.count! * hours;
          const rate = r10(c.hourly / c.count!);
          let usedEff = 0;
          fleets.forEach((f, i) => {
            if (cap <= 0 || f.spec.type !== c.instanceType || remainingQty[i]! <= 0) return;
            const q = Math.min(cap, remainingQty[i]!);
            cap -= q;
            remainingQty[i]! -= q;
            const eff = r10(q * rate);
            usedEff += eff;
            used.push({ f: i, c, qty: q, od: r10(q * f.spec.price), eff });
          });
          yield* unusedRow(c, s, e, r10(r10(c.hourly) * hours - usedEff));
        }
        const remainingOd = fleets.map((f, i) => remainingQty[i]! * f.spec.price);
        // Insured commitments are applied first (the service sizes them to be used), then the others.
        for (const c of active.filter((x) => x.kind === "spend").sort((a, b) => Number(b.feeRate !== null) - Number(a.feeRate !== null))) {
          let budget = r10(r10(c.hourly) * hours);
          let usedEff = 0;
          fleets.forEach((f, i) => {
            if (budget <= 1e-10 || remainingOd[i]! <= 1e-10 || f.spec.category !== "Compute") return;
            const coverOd = Math.min(remainingOd[i]!, budget / (1 - c.discount));
            const eff = r10(Math.min(budget, coverOd * (1 - c.discount)));
            budget = r10(budget - eff);
            remainingOd[i]! -= coverOd;
            usedEff += eff;
            used.push({ f: i, c, qty: coverOd / f.spec.price, od: r10(coverOd), eff });
          });
          yield* unusedRow(c, s, e, r10(r10(c.hourly) * hours - usedEff));
        }
        for (const u of used) {
          const f = fleets[u.f]!;
          const row = usageRow(f, s, e, u.qty);
          row[IDX.ChargeDescription] = `${f.spec.type} covered by ${u.c.name}`;
          row[IDX.BilledCost] = money(0);
          row[IDX.EffectiveCost] = money(u.eff);
          row[IDX.ListCost] = money(u.od);
          row[IDX.ContractedCost] = money(u.od);
          row[IDX.PricingCategory] = "Committed";
          setCommitment(row, u.c, "Used");
          yield row;
        }
        for (let i = 0; i < fleets.length; i++) {
          const f = fleets[i]!;
          const od = r10(remainingOd[i]!);
          if (od <= 1e-9) continue;
          const row = usageRow(f, s, e, od / f.spec.price);
          row[IDX.ChargeDescription] = `On-demand ${f.spec.type}`;
          row[IDX.BilledCost] = money(od);
          row[IDX.EffectiveCost] = money(od);
          row[IDX.ListCost] = money(od);
          row[IDX.ContractedCost] = money(od);
          row[IDX.PricingCategory] = "Standard";
          yield row;
        }
        // Storage per account, daily or coarser.
        if (grain !== "hourly" || s.getUTCHours() === 0) {
          const storageHours = grain === "hourly" ? 24 : hours;
          for (const acct of accounts) {
            const gbMonth = (200 + (acct.id.length * 37) % 500) * (storageHours / 730);
            const row = base(acct);
            row[IDX.ChargePeriodStart] = isoZ(s);
            row[IDX.ChargePeriodEnd] = isoZ(new Date(s.getTime() + storageHours * HOUR > periodEnd.getTime() ? periodEnd.getTime() : s.getTime() + storageHours * HOUR));
            row[IDX.ChargeCategory] = "Usage";
            row[IDX.ChargeFrequency] = "Usage-Based";
            row[IDX.ChargeDescription] = `${spec.storage.service} standard storage`;
            const cost = r10(gbMonth * spec.storage.price);
            row[IDX.BilledCost] = money(cost);
            row[IDX.EffectiveCost] = money(cost);
            row[IDX.ListCost] = money(cost);
            row[IDX.ContractedCost] = money(cost);
            row[IDX.ListUnitPrice] = String(spec.storage.price);
            row[IDX.ContractedUnitPrice] = String(spec.storage.price);
            row[IDX.PricingCategory] = "Standard";
            row[IDX.PricingQuantity] = gbMonth.toFixed(6);
            row[IDX.PricingUnit] = "GB-Month";
            row[IDX.ConsumedQuantity] = gbMonth.toFixed(6);
            row[IDX.ConsumedUnit] = "GB-Month";
            row[IDX.ServiceCategory] = "Storage";
            row[IDX.ServiceName] = spec.storage.service;
            row[IDX.RegionId] = spec.regions[0]![0];
            row[IDX.RegionName] = spec.regions[0]![1];
            row[IDX.ResourceId] = `${acct.id}/storage/bucket-main`;
            row[IDX.ResourceType] = "Bucket";
            yield row;
          }
        }
      }
      // Monthly tax on the holding account, and a credit on the second account.
      if (periodEnd.getTime() === mEnd.getTime()) {
        const tax = base(accounts[0]!);
        tax[IDX.ChargePeriodStart] = bpStart;
        tax[IDX.ChargePeriodEnd] = bpEnd;
        tax[IDX.ChargeCategory] = "Tax";
        tax[IDX.ChargeFrequency] = "One-Time";
        tax[IDX.ChargeDescription] = "Sales tax";
        tax[IDX.BilledCost] = money(12.5);
        tax[IDX.EffectiveCost] = money(12.5);
        tax[IDX.ListCost] = money(12.5);
        tax[IDX.ContractedCost] = money(12.5);
        tax[IDX.ServiceCategory] = "Other";
        tax[IDX.ServiceName] = "Tax";
        yield tax;
        const credit = base(accounts[Math.min(1, accounts.length - 1)]!);
        credit[IDX.ChargePeriodStart] = bpStart;
        credit[IDX.ChargePeriodEnd] = bpEnd;
        credit[IDX.ChargeCategory] = "Credit";
        credit[IDX.ChargeFrequency] = "One-Time";
        credit[IDX.ChargeDescription] = "Promotional credit";
        credit[IDX.BilledCost] = money(-5);
        credit[IDX.EffectiveCost] = money(-5);
        credit[IDX.ListCost] = money(-5);
        credit[IDX.ContractedCost] = money(-5);
        credit[IDX.ServiceCategory] = "Other";
        credit[IDX.ServiceName] = "Credits";
        yield credit;
      }

      function usageRow(f: Fleet, s: Date, e: Date, qty: number): (string | null)[] {
        const row = base(f.acct);
        row[IDX.ChargePeriodStart] = isoZ(s);
        row[IDX.ChargePeriodEnd] = isoZ(e);
        row[IDX.ChargeCategory] = "Usage";
        row[IDX.ChargeFrequency] = "Usage-Based";
        row[IDX.ListUnitPrice] = String(f.spec.price);
        row[IDX.ContractedUnitPrice] = String(f.spec.price);
        row[IDX.PricingQuantity] = qty.toFixed(6);
        row[IDX.PricingUnit] = f.spec.unit;
        row[IDX.ConsumedQuantity] = qty.toFixed(6);
        row[IDX.ConsumedUnit] = f.spec.unit;
        row[IDX.ServiceCategory] = f.spec.category;
        row[IDX.ServiceName] = f.spec.service;
        row[IDX.SkuId] = `${p}-${f.spec.type}`;
        row[IDX.SkuPriceId] = `${p}-${f.spec.type}-${f.region[0]}`;
        row[IDX.SkuPriceDetails] = JSON.stringify({ InstanceType: f.spec.type });
        row[IDX.ResourceId] = f.id;
        row[IDX.ResourceName] = f.id.split("/").pop()!;
        row[IDX.ResourceType] = f.spec.resourceType;
        row[IDX.RegionId] = f.region[0];
        row[IDX.RegionName] = f.region[1];
        row[IDX.Tags] = JSON.stringify({ team: f.acct.name, env: f.acct.name.includes("prod") || f.acct.name.includes("Prod") ? "prod" : "nonprod" });
        return row;
      }
      function* unusedRow(c: Commitment, s: Date, e: Date, eff: number): Generator<(string | null)[]> {
        if (eff <= 0) return;
        const row = base(c.holding);
        row[IDX.ChargePeriodStart] = isoZ(s);
        row[IDX.ChargePeriodEnd] = isoZ(e);
        row[IDX.ChargeCategory] = "Usage";
        row[IDX.ChargeFrequency] = "Usage-Based";
        row[IDX.ChargeDescription] = `Unused ${c.name}`;
        row[IDX.BilledCost] = money(0);
        row[IDX.EffectiveCost] = money(eff);
        row[IDX.ListCost] = money(0);
        row[IDX.ContractedCost] = money(0);
        row[IDX.PricingCategory] = "Committed";
        row[IDX.ServiceCategory] = "Compute";
        row[IDX.ServiceName] = c.kind === "usage" ? SPECS[p].instances[0]!.service : spec.spendType;
        row[IDX.RegionId] = spec.regions[0]![0];
        row[IDX.RegionName] = spec.regions[0]![1];
        setCommitment(row, c, "Unused");
        yield row;
      }
    }
  }
}

function setCommitment(row: (string | null)[], c: Commitment, status: "Used" | "Unused" | null) {
  row[IDX.CommitmentDiscountId] = c.id;
  row[IDX.CommitmentDiscountName] = c.name;
  row[IDX.CommitmentDiscountCategory] = c.kind === "usage" ? "Usage" : "Spend";
  row[IDX.CommitmentDiscountType] = c.focusType;
  row[IDX.CommitmentDiscountStatus] = status;
}

/** Writes generated rows as CSV to a stream (backpressure respected); returns the row count. */
export async function writeFocusCsv(opts: GeneratorOptions & { maxRows?: number }, out: Writable): Promise<number> {
  const write = (s: string) => (out.write(s) ? Promise.resolve() : new Promise<void>((r) => out.once("drain", () => r())));
  await write(stringify([FOCUS_GENERATOR_COLUMNS as unknown as string[]]));
  let n = 0;
  let buf: (string | null)[][] = [];
  for (const row of generateFocusRows(opts)) {
    buf.push(row);
    n++;
    if (buf.length >= 2000) {
      await write(stringify(buf));
      buf = [];
    }
    if (opts.maxRows && n >= opts.maxRows) break;
  }
  if (buf.length) await write(stringify(buf));
  return n;
}
