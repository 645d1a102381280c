/**
 * A loopback stand-in for the AWS purchase APIs the aws_purchasing connection calls, on one
 * endpoint: EC2 (Query protocol, 2016-11-15), RDS (Query, 2014-10-31), Savings Plans
 * (restJson1) and STS AssumeRole (Query, 2011-06-15). Requests are routed by the SigV4
 * credential scope's service name, as AWS's own endpoints are separate hosts. It keeps
 * offerings and purchases across requests (and across child processes, since it lives in the
 * test process), answers the way the real APIs answer (EC2 DryRunOperation, LimitPrice
 * refusal, RDS ReservedDBInstanceAlreadyExists, Savings Plans clientToken idempotency) and
 * records every call. Access keys starting with BAD are unknown; DENY ones are denied.
 * Signatures are not verified: only the Authorization header's shape and scope are read.
 */
import { createHash, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type AwsService = "ec2" | "rds" | "savingsplans" | "sts";
export type OfferingTypeName = "No Upfront" | "Partial Upfront" | "All Upfront";

export interface Ec2OfferingSeed {
  region: string;
  instanceType: string;
  durationSeconds: number;
  offeringType: OfferingTypeName;
  /** Upfront price of one instance. */
  fixedPrice: number;
  /** Recurring hourly charge of one instance. */
  hourly: number;
  productDescription?: string;
  instanceTenancy?: string;
  offeringClass?: "standard" | "convertible";
  /** Set for a zonal offering; null/absent for a regional one (Scope "Region"). */
  availabilityZone?: string | null;
  marketplace?: boolean;
  id?: string;
}
export interface RdsOfferingSeed {
  region: string;
  dbInstanceClass: string;
  durationSeconds: number;
  offeringType: OfferingTypeName;
  fixedPrice: number;
  hourly: number;
  productDescription?: string;
  multiAZ?: boolean;
  id?: string;
}
export interface SavingsPlanOfferingSeed {
  planType: "Compute" | "EC2Instance" | "Database" | "SageMaker";
  durationSeconds: number;
  paymentOption: OfferingTypeName;
  /** EC2 instance savings plans only. */
  region?: string;
  instanceFamily?: string;
  productTypes?: string[];
  currency?: string;
  id?: string;
}
export type AwsOfferingSeed = ({ service: "ec2" } & Ec2OfferingSeed) | ({ service: "rds" } & RdsOfferingSeed) | ({ service: "savingsplans" } & SavingsPlanOfferingSeed);
type Ec2Offering = Required<Omit<Ec2OfferingSeed, "availabilityZone">> & { availabilityZone: string | null };
type RdsOffering = Required<RdsOfferingSeed>;
type SavingsPlanOffering = Required<Omit<SavingsPlanOfferingSeed, "region" | "instanceFamily">> & { region: string | null; instanceFamily: string | null };

export interface Ec2ReservedInstanceRecord {
  reservedInstancesId: string;
  region: string;
  offeringId: string;
  instanceType: string;
  availabilityZone: string | null;
  instanceCount: number;
  fixedPrice: number;
  hourly: number;
  durationSeconds: number;
  offeringType: string;
  offeringClass: string;
  productDescription: string;
  instanceTenancy: string;
  start: Date;
  state: string;
  tags: Record<string, string>;
  /** LimitPrice.Amount of the purchase, when sent. */
  limitPrice: number | null;
}
export interface RdsReservedInstanceRecord {
  reservedDBInstanceId: string;
  region: string;
  offeringId: string;
  dbInstanceClass: string;
  count: number;
  fixedPrice: number;
  hourly: number;
  durationSeconds: number;
  offeringType: string;
  productDescription: string;
  multiAZ: boolean;
  start: Date;
  state: string;
  leaseId: string;
  tags: Record<string, string>;
}
export interface SavingsPlanRecord {
  savingsPlanId: string;
  offeringId: string;
  planType: string;
  paymentOption: string;
  durationSeconds: number;
  productTypes: string[];
  commitment: string;
  upfrontPaymentAmount: string;
  recurringPaymentAmount: string;
  region: string | null;
  instanceFamily: string | null;
  start: Date;
  state: string;
  tags: Record<string, string>;
  clientToken: string | null;
}

export interface RecordedAwsRequest {
  service: AwsService | "unknown";
  /** The Query Action, or the restJson operation (the path). */
  operation: string;
  /** The region of the SigV4 credential scope. */
  region: string | null;
  /** Whether a SigV4 Authorization header came with the request. */
  signed: boolean;
  accessKeyId: string | null;
  /** Query parameters as sent on the wire (flat, `Filter.1.Name`), or the JSON body. */
  params: Record<string, unknown>;
  /** The caller's idempotency token or purchase name: Savings Plans clientToken, RDS ReservedDBInstanceId. */
  idempotencyToken: string | null;
  /** The HTTP status answered (0 when the connection was dropped). */
  status: number;
}

export interface InjectedFailure {
  /** Error code to answer (AWS's own: RequestLimitExceeded, ReservedInstancesLimitExceeded, InternalError…). */
  code?: string;
  status?: number;
  message?: string;
  /** Drop the connection without an answer instead of answering an error. */
  network?: boolean;
  /** Carry the operation out before failing (the provider said yes, the caller never heard it). */
  afterEffect?: boolean;
  /** How many matching calls fail (default 1). */
  times?: number;
}

export interface AwsPurchasingServerOptions {
  /** Offerings to start with (and to return to on reset); default `defaultAwsOfferings()`. */
  offerings?: AwsOfferingSeed[];
  /** State of a new purchase (default payment-pending, as AWS reports right after buying). */
  initialState?: string;
  /** Most items one describe page holds whatever MaxResults asks (default 100). */
  pageSize?: number;
  /** EC2 reserved instance purchases allowed per region (ReservedInstancesLimitExceeded beyond). */
  reservedInstanceQuota?: number;
}

export interface AwsPurchasingServer {
  url: string;
  requests: RecordedAwsRequest[];
  purchases: { ec2: Ec2ReservedInstanceRecord[]; rds: RdsReservedInstanceRecord[]; savingsPlans: SavingsPlanRecord[] };
  addOffering(seed: AwsOfferingSeed): string;
  removeOffering(offeringId: string): void;
  /** Changes an EC2 or RDS offering's per-instance prices. */
  setPrice(offeringId: string, price: { fixedPrice?: number; hourly?: number }): void;
  /** Sets the state of a purchase by its id (RI id, reserved DB instance id, savings plan id). */
  setState(purchaseId: string, state: string): void;
  /** The next `times` calls of `operation` (Action or restJson operation name) fail as described. */
  failNext(operation: string, failure: InjectedFailure): void;
  /** The server's clock (purchase start times); null returns to the real clock. */
  setNow(now: Date | null): void;
  /** The recorded calls of one operation. */
  calls(operation: string): RecordedAwsRequest[];
  /** Forgets purchases, recorded calls, pending failures, the clock and offering changes (back to the options' offerings). */
  reset(): void;
  close(): Promise<void>;
}

const EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/";
const RDS_NS = "http://rds.amazonaws.com/doc/2014-10-31/";
const STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/";
const ACCOUNT = "111122223333";
const YEAR = 31_536_000;
const THREE_YEARS = 94_608_000;
const PAYMENT_OPTIONS: OfferingTypeName[] = ["No Upfront", "Partial Upfront", "All Upfront"];

/** A stable UUID-shaped id for a seed, so a reset or another process sees the same offering ids. */
function stableId(...parts: unknown[]): string {
  const h = createHash("sha256").update(parts.join("|")).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
const round = (n: number, d: number) => Math.round(n * 10 ** d) / 10 ** d;

/** RI prices from an on-demand rate: 40% off over one year, 60% over three, split by payment option. */
function riPrices(onDemand: number, seconds: number, offeringType: OfferingTypeName) {
  const hours = seconds / 3600;
  const effective = onDemand * (seconds === YEAR ? 0.6 : 0.4);
  if (offeringType === "All Upfront") return { fixedPrice: Math.round(effective * hours), hourly: 0 };
  if (offeringType === "Partial Upfront") return { fixedPrice: Math.round((effective * hours) / 2), hourly: round(effective / 2, 4) };
  return { fixedPrice: 0, hourly: round(effective * 1.05, 4) };
}

/** A catalog covering common shapes in us-east-1 and us-west-2: EC2 m5/c5/r5, RDS mysql/postgres, every savings plan type. */
export function defaultAwsOfferings(): AwsOfferingSeed[] {
  const out: AwsOfferingSeed[] = [];
  const ec2: [string, number][] = [["m5.large", 0.096], ["m5.xlarge", 0.192], ["c5.xlarge", 0.17], ["r5.large", 0.126]];
  const rds: [string, number][] = [["db.m5.large", 0.171], ["db.r5.large", 0.25]];
  for (const region of ["us-east-1", "us-west-2"]) {
    for (const seconds of [YEAR, THREE_YEARS]) {
      for (const offeringType of PAYMENT_OPTIONS) {
        for (const [instanceType, od] of ec2) {
          const p = riPrices(od, seconds, offeringType);
          // AWS lists zonal offerings next to the regional one; the zonal one comes first here on purpose.
          out.push({ service: "ec2", region, instanceType, durationSeconds: seconds, offeringType, ...p, availabilityZone: `${region}a` });
          out.push({ service: "ec2", region, instanceType, durationSeconds: seconds, offeringType, ...p });
        }
        for (const [dbInstanceClass, od] of rds) {
          for (const productDescription of ["postgresql", "mysql"]) {
            const p = riPrices(od, seconds, offeringType);
            out.push({ service: "rds", region, dbInstanceClass, durationSeconds: seconds, offeringType, productDescription, multiAZ: true, fixedPrice: p.fixedPrice * 2, hourly: round(p.hourly * 2, 4) });
            out.push({ service: "rds", region, dbInstanceClass, durationSeconds: seconds, offeringType, productDescription, multiAZ: false, ...p });
          }
        }
        for (const instanceFamily of ["m5", "c5", "r5"]) out.push({ service: "savingsplans", planType: "EC2Instance", durationSeconds: seconds, paymentOption: offeringType, region, instanceFamily });
      }
    }
  }
  for (const seconds of [YEAR, THREE_YEARS]) {
    for (const paymentOption of PAYMENT_OPTIONS) {
      out.push({ service: "savingsplans", planType: "Compute", durationSeconds: seconds, paymentOption, productTypes: ["EC2", "Fargate", "Lambda"] });
      out.push({ service: "savingsplans", planType: "Database", durationSeconds: seconds, paymentOption, productTypes: ["RDS", "DynamoDB", "ElastiCache"] });
    }
  }
  return out;
}

class AwsError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const esc = (v: unknown) => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
/** An XML element; undefined/null values are left out, as AWS leaves out absent members. */
const el = (name: string, value: unknown): string => (value === undefined || value === null ? "" : `<${name}>${esc(value instanceof Date ? value.toISOString() : value)}</${name}>`);
const raw = (name: string, inner: string) => `<${name}>${inner}</${name}>`;

/** Indexed Query list members (`Prefix.1`, `Prefix.2`, …) in order. */
function queryList(p: Record<string, string>, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 1; p[`${prefix}.${i}`] !== undefined; i++) out.push(p[`${prefix}.${i}`]!);
  return out;
}
/** Query filters as name → values: EC2 `Filter.N.Name/Value.M`, RDS `Filters.Filter.N.Name/Values.Value.M`. */
function queryFilters(p: Record<string, string>, prefix: string, valuePrefix: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 1; p[`${prefix}.${i}.Name`] !== undefined; i++) out.set(p[`${prefix}.${i}.Name`]!, queryList(p, `${prefix}.${i}.${valuePrefix}`));
  return out;
}
function page<T>(items: T[], token: string | undefined, requested: number | undefined, cap: number): { items: T[]; next: string | undefined } {
  const start = token ? Number(Buffer.from(token, "base64url").toString()) || 0 : 0;
  const size = Math.min(requested && requested > 0 ? requested : cap, cap);
  const slice = items.slice(start, start + size);
  return { items: slice, next: start + size < items.length ? Buffer.from(String(start + size)).toString("base64url") : undefined };
}
const bool = (v: string | undefined) => (v === undefined ? undefined : v === "true");

export async function startAwsPurchasingServer(options: AwsPurchasingServerOptions = {}): Promise<AwsPurchasingServer> {
  const initialState = options.initialState ?? "payment-pending";
  const pageCap = options.pageSize ?? 100;
  let ec2Offerings = new Map<string, Ec2Offering>();
  let rdsOfferings = new Map<string, RdsOffering>();
  let spOfferings = new Map<string, SavingsPlanOffering>();
  const purchases: AwsPurchasingServer["purchases"] = { ec2: [], rds: [], savingsPlans: [] };
  const requests: RecordedAwsRequest[] = [];
  let failures = new Map<string, InjectedFailure[]>();
  let clock: Date | null = null;
  const now = () => clock ?? new Date();

  function addOffering(seed: AwsOfferingSeed): string {
    if (seed.service === "ec2") {
      const id = seed.id ?? stableId("ec2", seed.region, seed.instanceType, seed.durationSeconds, seed.offeringType, seed.availabilityZone ?? "", seed.productDescription ?? "", seed.offeringClass ?? "");
      ec2Offerings.set(id, {
        region: seed.region,
        instanceType: seed.instanceType,
        durationSeconds: seed.durationSeconds,
        offeringType: seed.offeringType,
        fixedPrice: seed.fixedPrice,
        hourly: seed.hourly,
        productDescription: seed.productDescription ?? "Linux/UNIX",
        instanceTenancy: seed.instanceTenancy ?? "default",
        offeringClass: seed.offeringClass ?? "standard",
        availabilityZone: seed.availabilityZone ?? null,
        marketplace: seed.marketplace ?? false,
        id,
      });
      return id;
    }
    if (seed.service === "rds") {
      const id = seed.id ?? stableId("rds", seed.region, seed.dbInstanceClass, seed.durationSeconds, seed.offeringType, seed.productDescription ?? "", seed.multiAZ ?? false);
      rdsOfferings.set(id, {
        region: seed.region,
        dbInstanceClass: seed.dbInstanceClass,
        durationSeconds: seed.durationSeconds,
        offeringType: seed.offeringType,
        fixedPrice: seed.fixedPrice,
        hourly: seed.hourly,
        productDescription: seed.productDescription ?? "mysql",
        multiAZ: seed.multiAZ ?? false,
        id,
      });
      return id;
    }
    const id = seed.id ?? stableId("sp", seed.planType, seed.durationSeconds, seed.paymentOption, seed.region ?? "", seed.instanceFamily ?? "");
    spOfferings.set(id, {
      planType: seed.planType,
      durationSeconds: seed.durationSeconds,
      paymentOption: seed.paymentOption,
      region: seed.region ?? null,
      instanceFamily: seed.instanceFamily ?? null,
      productTypes: seed.productTypes ?? (seed.planType === "EC2Instance" ? ["EC2"] : seed.planType === "SageMaker" ? ["SageMaker"] : ["EC2"]),
      currency: seed.currency ?? "USD",
      id,
    });
    return id;
  }
  function loadOfferings() {
    ec2Offerings = new Map();
    rdsOfferings = new Map();
    spOfferings = new Map();
    for (const seed of options.offerings ?? defaultAwsOfferings()) addOffering(seed);
  }
  loadOfferings();

  // ---- EC2 ----
  const riScope = (az: string | null) => (az ? "Availability Zone" : "Region");
  function ec2OfferingXml(o: Ec2Offering): string {
    return raw(
      "item",
      el("reservedInstancesOfferingId", o.id) +
        el("instanceType", o.instanceType) +
        el("availabilityZone", o.availabilityZone) +
        el("duration", o.durationSeconds) +
        el("fixedPrice", o.fixedPrice) +
        el("usagePrice", 0) +
        el("productDescription", o.productDescription) +
        el("instanceTenancy", o.instanceTenancy) +
        el("currencyCode", "USD") +
        el("offeringType", o.offeringType) +
        raw("recurringCharges", o.hourly || o.offeringType !== "All Upfront" ? raw("item", el("frequency", "Hourly") + el("amount", o.hourly)) : "") +
        el("marketplace", o.marketplace) +
        raw("pricingDetailsSet", "") +
        el("offeringClass", o.offeringClass) +
        el("scope", riScope(o.availabilityZone)),
    );
  }
  function riXml(r: Ec2ReservedInstanceRecord): string {
    const tags = Object.entries(r.tags).map(([k, v]) => raw("item", el("key", k) + el("value", v))).join("");
    return raw(
      "item",
      el("reservedInstancesId", r.reservedInstancesId) +
        el("instanceType", r.instanceType) +
        el("availabilityZone", r.availabilityZone) +
        el("start", r.start) +
        el("end", new Date(r.start.getTime() + r.durationSeconds * 1000)) +
        el("duration", r.durationSeconds) +
        el("usagePrice", 0) +
        el("fixedPrice", r.fixedPrice) +
        el("instanceCount", r.instanceCount) +
        el("productDescription", r.productDescription) +
        el("state", r.state) +
        (tags ? raw("tagSet", tags) : "") +
        el("instanceTenancy", r.instanceTenancy) +
        el("currencyCode", "USD") +
        el("offeringType", r.offeringType) +
        raw("recurringCharges", r.hourly || r.offeringType !== "All Upfront" ? raw("item", el("frequency", "Hourly") + el("amount", r.hourly)) : "") +
        el("offeringClass", r.offeringClass) +
        el("scope", riScope(r.availabilityZone)),
    );
  }
  const ec2Response = (action: string, inner: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${EC2_NS}">${el("requestId", randomUUID())}${inner}</${action}Response>`;

  function ec2(action: string, p: Record<string, string>, region: string): string {
    switch (action) {
      case "DescribeRegions":
        return ec2Response(action, raw("regionInfo", ["us-east-1", "us-west-2", "eu-west-1"].map((r) => raw("item", el("regionName", r) + el("regionEndpoint", `ec2.${r}.amazonaws.com`) + el("optInStatus", "opt-in-not-required"))).join("")));
      case "DescribeReservedInstancesOfferings": {
        const ids = queryList(p, "ReservedInstancesOfferingId");
        const filters = queryFilters(p, "Filter", "Value");
        const includeMarketplace = bool(p.IncludeMarketplace) ?? true;
        const tenancy = p.InstanceTenancy ?? "default";
        const matches = [...ec2Offerings.values()].filter(
          (o) =>
            o.region === region &&
            (!ids.length || ids.includes(o.id)) &&
            (!p.InstanceType || o.instanceType === p.InstanceType) &&
            (!p.ProductDescription || o.productDescription === p.ProductDescription) &&
            o.instanceTenancy === tenancy &&
            (!p.OfferingClass || o.offeringClass === p.OfferingClass) &&
            (!p.OfferingType || o.offeringType === p.OfferingType) &&
            (!p.MinDuration || o.durationSeconds >= Number(p.MinDuration)) &&
            (!p.MaxDuration || o.durationSeconds <= Number(p.MaxDuration)) &&
            (!p.AvailabilityZone || o.availabilityZone === p.AvailabilityZone) &&
            (includeMarketplace || !o.marketplace) &&
            [...filters].every(([name, values]) => {
              const v = { "instance-type": o.instanceType, duration: String(o.durationSeconds), scope: riScope(o.availabilityZone), "product-description": o.productDescription, "reserved-instances-offering-id": o.id, marketplace: String(o.marketplace), "availability-zone": o.availabilityZone ?? "" }[name];
              return v === undefined || values.includes(v);
            }),
        );
        const { items, next } = page(matches, p.NextToken, p.MaxResults ? Number(p.MaxResults) : undefined, pageCap);
        return ec2Response(action, raw("reservedInstancesOfferingsSet", items.map(ec2OfferingXml).join("")) + el("nextToken", next));
      }
      case "PurchaseReservedInstancesOffering": {
        const offering = ec2Offerings.get(p.ReservedInstancesOfferingId ?? "");
        if (!offering || offering.region !== region) throw new AwsError("InvalidReservedInstancesOfferingId", 400, `The Reserved Instances offering '${p.ReservedInstancesOfferingId}' does not exist.`);
        const count = Number(p.InstanceCount);
        if (!Number.isInteger(count) || count < 1) throw new AwsError("InvalidParameterValue", 400, `Value (${p.InstanceCount}) for parameter InstanceCount is invalid. Expected a positive integer.`);
        const limit = p["LimitPrice.Amount"] !== undefined ? Number(p["LimitPrice.Amount"]) : null;
        const total = offering.fixedPrice * count;
        if (limit !== null && total > limit + 1e-9) {
          throw new AwsError("InvalidParameterValue", 400, `The total price of the order (${round(total, 2)} USD) exceeds the specified limit price (${limit} USD).`);
        }
        const inRegion = purchases.ec2.filter((r) => r.region === region).length;
        if (options.reservedInstanceQuota !== undefined && inRegion + 1 > options.reservedInstanceQuota) {
          throw new AwsError("ReservedInstancesLimitExceeded", 400, "Your current quota does not allow you to purchase the required number of Reserved Instances.");
        }
        if (bool(p.DryRun)) throw new AwsError("DryRunOperation", 412, "Request would have succeeded, but DryRun flag is set.");
        const record: Ec2ReservedInstanceRecord = {
          reservedInstancesId: randomUUID(),
          region,
          offeringId: offering.id,
          instanceType: offering.instanceType,
          availabilityZone: offering.availabilityZone,
          instanceCount: count,
          fixedPrice: offering.fixedPrice,
          hourly: offering.hourly,
          durationSeconds: offering.durationSeconds,
          offeringType: offering.offeringType,
          offeringClass: offering.offeringClass,
          productDescription: offering.productDescription,
          instanceTenancy: offering.instanceTenancy,
          start: now(),
          state: initialState,
          tags: {},
          limitPrice: limit,
        };
        purchases.ec2.push(record);
        return ec2Response(action, el("reservedInstancesId", record.reservedInstancesId));
      }
      case "CreateTags": {
        const ids = queryList(p, "ResourceId");
        const targets = ids.map((id) => {
          const r = purchases.ec2.find((x) => x.reservedInstancesId === id && x.region === region);
          if (!r) throw new AwsError("InvalidID", 400, `The ID '${id}' is not valid`);
          return r;
        });
        if (bool(p.DryRun)) throw new AwsError("DryRunOperation", 412, "Request would have succeeded, but DryRun flag is set.");
        for (let i = 1; p[`Tag.${i}.Key`] !== undefined; i++) for (const r of targets) r.tags[p[`Tag.${i}.Key`]!] = p[`Tag.${i}.Value`] ?? "";
        return ec2Response(action, el("return", true));
      }
      case "DescribeReservedInstances": {
        const ids = queryList(p, "ReservedInstancesId");
        const filters = queryFilters(p, "Filter", "Value");
        for (const id of ids) {
          if (!purchases.ec2.some((r) => r.reservedInstancesId === id && r.region === region)) throw new AwsError("InvalidReservedInstancesId.NotFound", 400, `The reserved instances ID '${id}' does not exist`);
        }
        const matches = purchases.ec2.filter(
          (r) =>
            r.region === region &&
            (!ids.length || ids.includes(r.reservedInstancesId)) &&
            (!p.OfferingType || r.offeringType === p.OfferingType) &&
            (!p.OfferingClass || r.offeringClass === p.OfferingClass) &&
            [...filters].every(([name, values]) => {
              if (name.startsWith("tag:")) return r.tags[name.slice(4)] !== undefined && values.includes(r.tags[name.slice(4)]!);
              if (name === "tag-key") return values.some((k) => r.tags[k] !== undefined);
              const v = { "instance-type": r.instanceType, duration: String(r.durationSeconds), state: r.state, "reserved-instances-id": r.reservedInstancesId, "product-description": r.productDescription, scope: riScope(r.availabilityZone), "availability-zone": r.availabilityZone ?? "", "fixed-price": String(r.fixedPrice), "instance-tenancy": r.instanceTenancy }[name];
              return v === undefined || values.includes(v);
            }),
        );
        return ec2Response(action, raw("reservedInstancesSet", matches.map(riXml).join("")));
      }
    }
    throw new AwsError("InvalidAction", 400, `The action ${action} is not valid for this web service.`);
  }

  // ---- RDS ----
  const recurringXml = (hourly: number) => raw("RecurringCharges", hourly ? raw("RecurringCharge", el("RecurringChargeAmount", hourly) + el("RecurringChargeFrequency", "Hourly")) : "");
  const rdsOfferingXml = (o: RdsOffering) =>
    raw(
      "ReservedDBInstancesOffering",
      el("ReservedDBInstancesOfferingId", o.id) + el("DBInstanceClass", o.dbInstanceClass) + el("Duration", o.durationSeconds) + el("FixedPrice", o.fixedPrice) + el("UsagePrice", 0) + el("CurrencyCode", "USD") + el("ProductDescription", o.productDescription) + el("OfferingType", o.offeringType) + el("MultiAZ", o.multiAZ) + recurringXml(o.hourly),
    );
  const rdsReservedXml = (r: RdsReservedInstanceRecord) =>
    raw(
      "ReservedDBInstance",
      el("ReservedDBInstanceId", r.reservedDBInstanceId) +
        el("ReservedDBInstancesOfferingId", r.offeringId) +
        el("DBInstanceClass", r.dbInstanceClass) +
        el("StartTime", r.start) +
        el("Duration", r.durationSeconds) +
        el("FixedPrice", r.fixedPrice) +
        el("UsagePrice", 0) +
        el("CurrencyCode", "USD") +
        el("DBInstanceCount", r.count) +
        el("ProductDescription", r.productDescription) +
        el("OfferingType", r.offeringType) +
        el("MultiAZ", r.multiAZ) +
        el("State", r.state) +
        recurringXml(r.hourly) +
        el("ReservedDBInstanceArn", `arn:aws:rds:${r.region}:${ACCOUNT}:ri:${r.reservedDBInstanceId}`) +
        el("LeaseId", r.leaseId),
    );
  const queryResponse = (ns: string, action: string, inner: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${ns}">${raw(`${action}Result`, inner)}${raw("ResponseMetadata", el("RequestId", randomUUID()))}</${action}Response>`;
  const durationMatches = (asked: string | undefined, seconds: number) => !asked || Number(asked) === seconds || (Number(asked) === 1 && seconds === YEAR) || (Number(asked) === 3 && seconds === THREE_YEARS);

  function rds(action: string, p: Record<string, string>, region: string): string {
    switch (action) {
      case "DescribeReservedDBInstancesOfferings": {
        if (p.ReservedDBInstancesOfferingId && !rdsOfferings.has(p.ReservedDBInstancesOfferingId)) {
          throw new AwsError("ReservedDBInstancesOfferingNotFound", 404, `Specified offering does not exist: ${p.ReservedDBInstancesOfferingId}`);
        }
        const multiAZ = bool(p.MultiAZ);
        const matches = [...rdsOfferings.values()].filter(
          (o) =>
            o.region === region &&
            (!p.ReservedDBInstancesOfferingId || o.id === p.ReservedDBInstancesOfferingId) &&
            (!p.DBInstanceClass || o.dbInstanceClass === p.DBInstanceClass) &&
            durationMatches(p.Duration, o.durationSeconds) &&
            (!p.ProductDescription || o.productDescription === p.ProductDescription) &&
            (!p.OfferingType || o.offeringType === p.OfferingType) &&
            (multiAZ === undefined || o.multiAZ === multiAZ),
        );
        const { items, next } = page(matches, p.Marker, p.MaxRecords ? Number(p.MaxRecords) : undefined, pageCap);
        return queryResponse(RDS_NS, action, raw("ReservedDBInstancesOfferings", items.map(rdsOfferingXml).join("")) + el("Marker", next));
      }
      case "PurchaseReservedDBInstancesOffering": {
        const offering = rdsOfferings.get(p.ReservedDBInstancesOfferingId ?? "");
        if (!offering || offering.region !== region) throw new AwsError("ReservedDBInstancesOfferingNotFound", 404, `Specified offering does not exist: ${p.ReservedDBInstancesOfferingId}`);
        const id = p.ReservedDBInstanceId ?? randomUUID();
        if (purchases.rds.some((r) => r.reservedDBInstanceId === id && r.region === region)) throw new AwsError("ReservedDBInstanceAlreadyExists", 404, `Reserved DB instance ${id} already exists.`);
        const count = p.DBInstanceCount === undefined ? 1 : Number(p.DBInstanceCount);
        if (!Number.isInteger(count) || count < 1) throw new AwsError("InvalidParameterValue", 400, `Invalid DBInstanceCount: ${p.DBInstanceCount}`);
        const tags: Record<string, string> = {};
        for (let i = 1; p[`Tags.Tag.${i}.Key`] !== undefined; i++) tags[p[`Tags.Tag.${i}.Key`]!] = p[`Tags.Tag.${i}.Value`] ?? "";
        const record: RdsReservedInstanceRecord = {
          reservedDBInstanceId: id,
          region,
          offeringId: offering.id,
          dbInstanceClass: offering.dbInstanceClass,
          count,
          fixedPrice: offering.fixedPrice,
          hourly: offering.hourly,
          durationSeconds: offering.durationSeconds,
          offeringType: offering.offeringType,
          productDescription: offering.productDescription,
          multiAZ: offering.multiAZ,
          start: now(),
          state: initialState,
          leaseId: randomUUID(),
          tags,
        };
        purchases.rds.push(record);
        return queryResponse(RDS_NS, action, rdsReservedXml(record));
      }
      case "DescribeReservedDBInstances": {
        const id = p.ReservedDBInstanceId;
        if (id && !purchases.rds.some((r) => r.reservedDBInstanceId === id && r.region === region)) throw new AwsError("ReservedDBInstanceNotFound", 404, `Reserved DB instance ${id} not found.`);
        const multiAZ = bool(p.MultiAZ);
        const matches = purchases.rds.filter(
          (r) =>
            r.region === region &&
            (!id || r.reservedDBInstanceId === id) &&
            (!p.DBInstanceClass || r.dbInstanceClass === p.DBInstanceClass) &&
            durationMatches(p.Duration, r.durationSeconds) &&
            (!p.OfferingType || r.offeringType === p.OfferingType) &&
            (multiAZ === undefined || r.multiAZ === multiAZ),
        );
        const { items, next } = page(matches, p.Marker, p.MaxRecords ? Number(p.MaxRecords) : undefined, pageCap);
        return queryResponse(RDS_NS, action, raw("ReservedDBInstances", items.map(rdsReservedXml).join("")) + el("Marker", next));
      }
    }
    throw new AwsError("InvalidAction", 400, `Could not find operation ${action} for version 2014-10-31`);
  }

  // ---- STS ----
  function sts(action: string, p: Record<string, string>): string {
    if (action !== "AssumeRole") throw new AwsError("InvalidAction", 400, `Could not find operation ${action} for version 2011-06-15`);
    if (!p.RoleArn || !p.RoleSessionName) throw new AwsError("ValidationError", 400, "RoleArn and RoleSessionName are required.");
    const denied = /:role\/.*deny/i.test(p.RoleArn);
    const expiration = new Date(Date.now() + Number(p.DurationSeconds ?? 3600) * 1000);
    const credentials = el("AccessKeyId", `${denied ? "DENY" : "ASIA"}${randomUUID().replace(/-/g, "").slice(0, 16).toUpperCase()}`) + el("SecretAccessKey", randomUUID()) + el("SessionToken", randomUUID()) + el("Expiration", expiration);
    return queryResponse(STS_NS, action, raw("Credentials", credentials) + raw("AssumedRoleUser", el("AssumedRoleId", `AROA:${p.RoleSessionName}`) + el("Arn", `${p.RoleArn}/${p.RoleSessionName}`)));
  }

  // ---- Savings Plans ----
  const offeringProperties = (o: SavingsPlanOffering) => [...(o.region ? [{ name: "region", value: o.region }] : []), ...(o.instanceFamily ? [{ name: "instanceFamily", value: o.instanceFamily }] : [])];
  const planDescription = (o: SavingsPlanOffering) => `${o.durationSeconds === YEAR ? 1 : 3} year ${o.paymentOption} ${o.planType} Savings Plan`;
  function spJson(r: SavingsPlanRecord) {
    return {
      offeringId: r.offeringId,
      savingsPlanId: r.savingsPlanId,
      savingsPlanArn: `arn:aws:savingsplans::${ACCOUNT}:savingsplan/${r.savingsPlanId}`,
      description: `${r.durationSeconds === YEAR ? 1 : 3} year ${r.paymentOption} ${r.planType} Savings Plan`,
      start: r.start.toISOString(),
      end: new Date(r.start.getTime() + r.durationSeconds * 1000).toISOString(),
      state: r.state,
      region: r.region ?? "",
      ec2InstanceFamily: r.instanceFamily ?? undefined,
      savingsPlanType: r.planType,
      paymentOption: r.paymentOption,
      productTypes: r.productTypes,
      currency: "USD",
      commitment: r.commitment,
      upfrontPaymentAmount: r.upfrontPaymentAmount,
      recurringPaymentAmount: r.recurringPaymentAmount,
      termDurationInSeconds: r.durationSeconds,
      tags: r.tags,
    };
  }
  const money = (n: number) => String(round(n, 2));

  function savingsPlans(operation: string, body: Record<string, any>): unknown {
    const list = (v: unknown) => (Array.isArray(v) ? (v as unknown[]).map(String) : []);
    switch (operation) {
      case "DescribeSavingsPlansOfferings": {
        const ids = list(body.offeringIds);
        const matches = [...spOfferings.values()].filter(
          (o) =>
            (!ids.length || ids.includes(o.id)) &&
            (!list(body.planTypes).length || list(body.planTypes).includes(o.planType)) &&
            (!list(body.paymentOptions).length || list(body.paymentOptions).includes(o.paymentOption)) &&
            (!list(body.durations).length || list(body.durations).map(Number).includes(o.durationSeconds)) &&
            (!list(body.currencies).length || list(body.currencies).includes(o.currency)) &&
            (!body.productType || o.productTypes.includes(body.productType)) &&
            (Array.isArray(body.filters) ? body.filters : []).every((f: { name?: string; values?: string[] }) => {
              const v = f.name === "region" ? o.region : f.name === "instanceFamily" ? o.instanceFamily : undefined;
              return v === undefined || (v !== null && (f.values ?? []).includes(v));
            }),
        );
        const { items, next } = page(matches, body.nextToken, body.maxResults, pageCap);
        return {
          searchResults: items.map((o) => ({ offeringId: o.id, productTypes: o.productTypes, planType: o.planType, description: planDescription(o), paymentOption: o.paymentOption, durationSeconds: o.durationSeconds, currency: o.currency, serviceCode: "ComputeSavingsPlans", usageType: "ComputeSP:1yrNoUpfront", operation: "", properties: offeringProperties(o) })),
          ...(next ? { nextToken: next } : {}),
        };
      }
      case "DescribeSavingsPlansOfferingRates": {
        const ids = list(body.savingsPlanOfferingIds);
        const matches = [...spOfferings.values()].filter((o) => (!ids.length || ids.includes(o.id)) && (!list(body.savingsPlanTypes).length || list(body.savingsPlanTypes).includes(o.planType)) && (!list(body.savingsPlanPaymentOptions).length || list(body.savingsPlanPaymentOptions).includes(o.paymentOption)));
        const rates = matches.map((o) => ({
          savingsPlanOffering: { offeringId: o.id, paymentOption: o.paymentOption, planType: o.planType, durationSeconds: o.durationSeconds, currency: o.currency, planDescription: planDescription(o) },
          rate: o.durationSeconds === YEAR ? "0.0624" : "0.0413",
          unit: "Hrs",
          productType: o.productTypes[0],
          serviceCode: o.productTypes[0] === "RDS" ? "AmazonRDS" : "AmazonEC2",
          usageType: `${o.region === "us-west-2" ? "USW2-" : ""}BoxUsage:${o.instanceFamily ?? "m5"}.large`,
          operation: "RunInstances",
          properties: [{ name: "region", value: o.region ?? "us-east-1" }, { name: "instanceType", value: `${o.instanceFamily ?? "m5"}.large` }],
        }));
        const { items, next } = page(rates, body.nextToken, body.maxResults, pageCap);
        return { searchResults: items, ...(next ? { nextToken: next } : {}) };
      }
      case "CreateSavingsPlan": {
        const offering = spOfferings.get(String(body.savingsPlanOfferingId ?? ""));
        if (!offering) throw new AwsError("ResourceNotFoundException", 404, `Savings Plan offering ${body.savingsPlanOfferingId} not found.`);
        const commitment = String(body.commitment ?? "");
        if (!/^\d+(\.\d{1,5})?$/.test(commitment) || Number(commitment) < 0.001) throw new AwsError("ValidationException", 400, "commitment must be a number between 0.001 and 1000000 with at most five digits after the decimal point.");
        const token = body.clientToken ? String(body.clientToken) : null;
        const earlier = token ? purchases.savingsPlans.find((r) => r.clientToken === token) : undefined;
        if (earlier) {
          if (earlier.offeringId !== offering.id || earlier.commitment !== commitment) throw new AwsError("ValidationException", 400, "The clientToken was already used with different parameters.");
          return { savingsPlanId: earlier.savingsPlanId };
        }
        const total = Number(commitment) * (offering.durationSeconds / 3600);
        let upfront = 0;
        if (offering.paymentOption === "All Upfront") upfront = total;
        if (offering.paymentOption === "Partial Upfront") {
          if (body.upfrontPaymentAmount === undefined) throw new AwsError("ValidationException", 400, "upfrontPaymentAmount is required for Partial Upfront Savings Plans.");
          upfront = Number(body.upfrontPaymentAmount);
          if (!(upfront >= total * 0.5 - 0.01 && upfront <= total * 0.99 + 0.01)) throw new AwsError("ValidationException", 400, "upfrontPaymentAmount must be between 50 and 99 percent of the total value of the Savings Plan.");
        } else if (body.upfrontPaymentAmount !== undefined) {
          throw new AwsError("ValidationException", 400, "upfrontPaymentAmount is only supported for Partial Upfront Savings Plans.");
        }
        const tags: Record<string, string> = {};
        for (const [k, v] of Object.entries((body.tags ?? {}) as Record<string, unknown>)) tags[k] = String(v);
        const record: SavingsPlanRecord = {
          savingsPlanId: randomUUID(),
          offeringId: offering.id,
          planType: offering.planType,
          paymentOption: offering.paymentOption,
          durationSeconds: offering.durationSeconds,
          productTypes: offering.productTypes,
          commitment,
          upfrontPaymentAmount: money(upfront),
          recurringPaymentAmount: String(round((total - upfront) / (offering.durationSeconds / 3600), 5)),
          region: offering.region,
          instanceFamily: offering.instanceFamily,
          start: now(),
          state: initialState,
          tags,
          clientToken: token,
        };
        purchases.savingsPlans.push(record);
        return { savingsPlanId: record.savingsPlanId };
      }
      case "DescribeSavingsPlans": {
        const ids = list(body.savingsPlanIds);
        const arns = list(body.savingsPlanArns);
        const states = list(body.states);
        const matches = purchases.savingsPlans.filter(
          (r) =>
            (!ids.length || ids.includes(r.savingsPlanId)) &&
            (!arns.length || arns.includes(`arn:aws:savingsplans::${ACCOUNT}:savingsplan/${r.savingsPlanId}`)) &&
            (!states.length || states.includes(r.state)) &&
            (Array.isArray(body.filters) ? body.filters : []).every((f: { name?: string; values?: string[] }) => {
              const v = { region: r.region ?? "", "savings-plan-type": r.planType, "payment-option": r.paymentOption, "ec2-instance-family": r.instanceFamily ?? "", commitment: r.commitment, term: String(r.durationSeconds === YEAR ? 1 : 3) }[f.name ?? ""];
              return v === undefined || (f.values ?? []).includes(v);
            }),
        );
        const { items, next } = page(matches, body.nextToken, body.maxResults, pageCap);
        return { savingsPlans: items.map(spJson), ...(next ? { nextToken: next } : {}) };
      }
    }
    throw new AwsError("UnknownOperationException", 404, `Unknown operation ${operation}`);
  }

  // ---- transport ----
  function errorBody(service: AwsService | "unknown", e: AwsError): { body: string; headers: Record<string, string> } {
    const requestId = randomUUID();
    if (service === "savingsplans" || service === "unknown") {
      return { body: JSON.stringify({ message: e.message }), headers: { "content-type": "application/json", "x-amzn-errortype": e.code, "x-amzn-requestid": requestId } };
    }
    if (service === "ec2") {
      return { body: `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>${el("Code", e.code)}${el("Message", e.message)}</Error></Errors>${el("RequestID", requestId)}</Response>`, headers: { "content-type": "text/xml;charset=UTF-8" } };
    }
    const ns = service === "rds" ? RDS_NS : STS_NS;
    const type = e.status >= 500 ? "Receiver" : "Sender";
    return { body: `<ErrorResponse xmlns="${ns}"><Error>${el("Type", type)}${el("Code", e.code)}${el("Message", e.message)}</Error>${el("RequestId", requestId)}</ErrorResponse>`, headers: { "content-type": "text/xml" } };
  }

  /** The service, region and key of a SigV4 Authorization header, or null without one. */
  function credentialScope(auth: string | undefined): { accessKeyId: string; region: string; service: string } | null {
    const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$/.exec(auth ?? "");
    return m ? { accessKeyId: m[1]!, region: m[2]!, service: m[3]! } : null;
  }

  /** The service an unsigned request was meant for, from its wire shape. */
  function guessService(path: string, form: Record<string, string>): AwsService | "unknown" {
    if (form.Version === "2016-11-15") return "ec2";
    if (form.Version === "2014-10-31") return "rds";
    if (form.Version === "2011-06-15") return "sts";
    return /^\/[A-Z]\w+$/.test(path) ? "savingsplans" : "unknown";
  }

  const authFailure = (service: AwsService | "unknown", kind: "missing" | "unknown" | "denied", operation: string): AwsError => {
    if (kind === "missing") {
      if (service === "ec2") return new AwsError("AuthFailure", 401, "AWS was not able to validate the provided access credentials");
      return new AwsError(service === "savingsplans" ? "MissingAuthenticationTokenException" : "MissingAuthenticationToken", 403, "Request is missing Authentication Token");
    }
    if (kind === "unknown") {
      if (service === "ec2") return new AwsError("AuthFailure", 401, "AWS was not able to validate the provided access credentials");
      if (service === "savingsplans") return new AwsError("UnrecognizedClientException", 403, "The security token included in the request is invalid.");
      return new AwsError("InvalidClientTokenId", 403, "The security token included in the request is invalid.");
    }
    if (service === "ec2") return new AwsError("UnauthorizedOperation", 403, "You are not authorized to perform this operation.");
    if (service === "savingsplans") return new AwsError("AccessDeniedException", 403, `User is not authorized to perform: savingsplans:${operation}`);
    return new AwsError(service === "sts" ? "AccessDenied" : "AccessDenied", 403, `User is not authorized to perform: ${service}:${operation}`);
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const path = (req.url ?? "/").split("?")[0]!;
    const scope = credentialScope(req.headers.authorization);
    const isForm = String(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
    const form: Record<string, string> = isForm ? Object.fromEntries(new URLSearchParams(text)) : {};
    const service: AwsService | "unknown" = scope ? (["ec2", "rds", "savingsplans", "sts"].includes(scope.service) ? (scope.service as AwsService) : "unknown") : guessService(path, form);
    let params: Record<string, unknown> = form;
    if (service === "savingsplans") {
      try {
        params = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        params = {};
      }
    }
    const operation = service === "savingsplans" ? path.replace(/^\//, "") : (form.Action ?? "");
    const { Action: _a, Version: _v, ...queryParams } = form;
    const record: RecordedAwsRequest = {
      service,
      operation,
      region: scope?.region ?? null,
      signed: !!scope,
      accessKeyId: scope?.accessKeyId ?? null,
      params: service === "savingsplans" ? params : queryParams,
      idempotencyToken: service === "savingsplans" ? ((params.clientToken as string | undefined) ?? null) : operation === "PurchaseReservedDBInstancesOffering" ? (form.ReservedDBInstanceId ?? null) : null,
      status: 0,
    };
    requests.push(record);

    const reply = (status: number, body: string, headers: Record<string, string>) => {
      record.status = status;
      res.writeHead(status, { ...headers, "x-amzn-requestid": headers["x-amzn-requestid"] ?? randomUUID(), "content-length": String(Buffer.byteLength(body)) });
      res.end(body);
    };
    const fail = (e: AwsError) => {
      const { body, headers } = errorBody(service, e);
      reply(e.status, body, headers);
    };

    if (!scope) return fail(authFailure(service, "missing", operation));
    if (service === "unknown") return fail(new AwsError("UnknownService", 400, `No service answers for ${scope.service} here.`));
    if (scope.accessKeyId.startsWith("BAD")) return fail(authFailure(service, "unknown", operation));
    if (scope.accessKeyId.startsWith("DENY") && service !== "sts") return fail(authFailure(service, "denied", operation));

    const queue = failures.get(operation);
    const injected = queue?.[0];
    if (injected) {
      injected.times = (injected.times ?? 1) - 1;
      if (injected.times <= 0) queue!.shift();
    }
    const region = scope.region;
    const run = (): { status: number; body: string; headers: Record<string, string> } => {
      if (service === "savingsplans") return { status: 200, body: JSON.stringify(savingsPlans(operation, params as Record<string, any>)), headers: { "content-type": "application/json" } };
      const body = service === "ec2" ? ec2(operation, form, region) : service === "rds" ? rds(operation, form, region) : sts(operation, form);
      return { status: 200, body, headers: { "content-type": "text/xml;charset=UTF-8" } };
    };
    try {
      if (injected) {
        if (injected.afterEffect) run();
        if (injected.network) {
          record.status = 0;
          req.socket.destroy();
          return;
        }
        const code = injected.code ?? "InternalError";
        throw new AwsError(code, injected.status ?? (/Internal|Unavailable/.test(code) ? 500 : /Throttl|RequestLimitExceeded|TooManyRequests/.test(code) ? (service === "ec2" ? 503 : 400) : 400), injected.message ?? `Injected ${code}.`);
      }
      const { status, body, headers } = run();
      reply(status, body, headers);
    } catch (e) {
      if (e instanceof AwsError) return fail(e);
      fail(new AwsError(service === "ec2" ? "InternalError" : "InternalFailure", 500, e instanceof Error ? e.message : String(e)));
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const findPurchase = (id: string) => purchases.ec2.find((r) => r.reservedInstancesId === id) ?? purchases.rds.find((r) => r.reservedDBInstanceId === id) ?? purchases.savingsPlans.find((r) => r.savingsPlanId === id);

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    purchases,
    addOffering,
    removeOffering(id) {
      ec2Offerings.delete(id);
      rdsOfferings.delete(id);
      spOfferings.delete(id);
    },
    setPrice(id, price) {
      const o = ec2Offerings.get(id) ?? rdsOfferings.get(id);
      if (!o) throw new Error(`No EC2 or RDS offering ${id}`);
      if (price.fixedPrice !== undefined) o.fixedPrice = price.fixedPrice;
      if (price.hourly !== undefined) o.hourly = price.hourly;
    },
    setState(id, state) {
      const p = findPurchase(id);
      if (!p) throw new Error(`No purchase ${id}`);
      p.state = state;
    },
    failNext(operation, failure) {
      const queue = failures.get(operation) ?? [];
      queue.push({ ...failure, times: failure.times ?? 1 });
      failures.set(operation, queue);
    },
    setNow(d) {
      clock = d;
    },
    calls: (operation) => requests.filter((r) => r.operation === operation),
    reset() {
      purchases.ec2.length = 0;
      purchases.rds.length = 0;
      purchases.savingsPlans.length = 0;
      requests.length = 0;
      failures = new Map();
      clock = null;
      loadOfferings();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
