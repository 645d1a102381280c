/**
 * Buys AWS commitments with the official SDK clients: EC2 reserved instances (EC2 Query API),
 * RDS reserved DB instances and Savings Plans, each item under the token the state machine
 * committed (types.ts). EC2 takes no idempotency token, so an RI is tagged with the token right
 * after the purchase and found later by that tag, else by its shape and purchase time; RDS
 * names the reservation after the token; Savings Plans take it as clientToken and as a tag.
 */
import {
  CreateTagsCommand,
  DescribeReservedInstancesCommand,
  DescribeReservedInstancesOfferingsCommand,
  EC2Client,
  PurchaseReservedInstancesOfferingCommand,
  type Filter,
  type OfferingTypeValues,
  type _InstanceType,
  type RecurringCharge,
  type ReservedInstances,
  type ReservedInstancesOffering,
} from "@aws-sdk/client-ec2";
import {
  DescribeReservedDBInstancesCommand,
  DescribeReservedDBInstancesOfferingsCommand,
  PurchaseReservedDBInstancesOfferingCommand,
  RDSClient,
  type RecurringCharge as RdsRecurringCharge,
  type ReservedDBInstance,
  type ReservedDBInstancesOffering,
} from "@aws-sdk/client-rds";
import {
  CreateSavingsPlanCommand,
  DescribeSavingsPlansCommand,
  DescribeSavingsPlansOfferingRatesCommand,
  DescribeSavingsPlansOfferingsCommand,
  SavingsplansClient,
  type SavingsPlan,
  type SavingsPlanOffering,
  type SavingsPlanPaymentOption,
  type SavingsPlanType,
} from "@aws-sdk/client-savingsplans";
import { fromTemporaryCredentials } from "@aws-sdk/credential-providers";
import type { AwsPurchasingConfig, AwsPurchasingSecrets } from "./settings.ts";
import { spendCommitmentPayments } from "../../pricing/index.ts";
import { PurchaseFailure, providerTerm, refuseAbovePlan, type OfferQuote, type ProviderCommitment, type ProviderPurchaser, type PurchaseItemSpec, type PurchaseOutcome } from "./types.ts";

/** The tag that carries an item's token on what it bought (EC2 RIs, RDS reservations, savings plans). */
export const PURCHASE_TOKEN_TAG = "commitops:purchase-token";
/** RDS names a reservation by the caller's id: ours is the token, so a repeat finds the first. */
export const rdsReservationId = (token: string) => `co-${token}`;

/** An untagged RI counts as this item's when AWS started it no earlier than this before the intent (clock skew). */
const UNTAGGED_RI_WINDOW_MS = 5 * 60_000;
/** Savings Plans are a global service, signed for us-east-1. */
const SAVINGS_PLANS_REGION = "us-east-1";
const MAX_PAGES = 50;

const OFFERING_TYPES: Record<string, "No Upfront" | "Partial Upfront" | "All Upfront"> = { no_upfront: "No Upfront", partial_upfront: "Partial Upfront", all_upfront: "All Upfront" };
const PAYMENT_OPTIONS: Record<string, string> = { "No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront" };
const SAVINGS_PLAN_TYPES: Record<string, SavingsPlanType> = { compute_savings_plan: "Compute", ec2_instance_savings_plan: "EC2Instance", database_savings_plan: "Database" };
const COMMITMENT_TYPES: Record<string, string> = { Compute: "compute_savings_plan", EC2Instance: "ec2_instance_savings_plan", Database: "database_savings_plan" };
const EC2_PRODUCT = "Linux/UNIX";

type Ec2Item = { service: "ec2"; region: string; instanceType: string; count: number; seconds: number; years: number; offeringType: string };
type RdsItem = { service: "rds"; region: string; dbInstanceClass: string; count: number; seconds: number; years: number; offeringType: string };
type SavingsPlanItem = {
  service: "savingsplans";
  planType: SavingsPlanType;
  /** $/hour as AWS takes it: at most three decimals, rounded down so the plan's budget holds. */
  commitment: string;
  hourlyCommitment: number;
  seconds: number;
  years: number;
  paymentOption: SavingsPlanPaymentOption;
  region: string | null;
  instanceFamily: string | null;
};
type AwsItem = Ec2Item | RdsItem | SavingsPlanItem;

const roundTo = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
const usd = (n: number) => `$${roundTo(n, 2).toFixed(2)}`;
const familyOf = (instanceType: string | null | undefined) => (instanceType && instanceType.includes(".") ? instanceType.slice(0, instanceType.lastIndexOf(".")) : null);
const termOf = (seconds: number | undefined) => (seconds === 31_536_000 ? "one_year" : seconds === 94_608_000 ? "three_year" : null);
const date = (v: Date | string | undefined | null) => (v ? new Date(v) : null);

/** What AWS would sell for an item, or `unsupported` saying how to buy it instead. */
function awsItem(item: PurchaseItemSpec, defaultRegion: string): AwsItem {
  const { years, seconds, paymentOption } = providerTerm(item);
  const offeringType = OFFERING_TYPES[paymentOption];
  if (!offeringType) throw new PurchaseFailure("unsupported", `AWS has no "${item.paymentOption}" payment option (no_upfront, partial_upfront or all_upfront).`);
  const region = item.region ?? defaultRegion;

  if (item.commitmentType === "reserved_instance") {
    const type = item.instanceType;
    if (!type) throw new PurchaseFailure("unsupported", "A reserved instance item needs an instance type (m5.large, or db.r5.large for RDS).");
    if (type.startsWith("cache.") || /\.(search|elasticsearch)$/.test(type)) {
      throw new PurchaseFailure("unsupported", `${type} is an ElastiCache or OpenSearch node: buy its reservation in that service's console; this connection buys EC2 and RDS reserved instances and savings plans.`);
    }
    if (!Number.isInteger(item.amount) || item.amount < 1) {
      throw new PurchaseFailure("unsupported", `Reserved instances are bought in whole instances, not ${item.amount}: round the plan's quantity of ${type} to a whole number.`);
    }
    if (type.startsWith("db.")) return { service: "rds", region, dbInstanceClass: type, count: item.amount, seconds, years, offeringType };
    return { service: "ec2", region, instanceType: type, count: item.amount, seconds, years, offeringType };
  }

  const planType = SAVINGS_PLAN_TYPES[item.commitmentType];
  if (!planType) throw new PurchaseFailure("unsupported", `"${item.commitmentType}" is not an AWS commitment type this connection can buy (reserved_instance or a savings plan).`);
  const thousandths = Math.floor(item.amount * 1000 + 1e-6);
  if (!(thousandths >= 1)) throw new PurchaseFailure("unsupported", `A savings plan commits at least $0.001/hour; the plan asks for $${item.amount}/hour.`);
  const commitment = String(thousandths / 1000);
  let instanceFamily: string | null = null;
  if (planType === "EC2Instance") {
    instanceFamily = item.instanceFamily ?? familyOf(item.instanceType);
    if (!instanceFamily) throw new PurchaseFailure("unsupported", "An EC2 instance savings plan is bought for one instance family (m5, c6g…): the item names none.");
  }
  return { service: "savingsplans", planType, commitment, hourlyCommitment: thousandths / 1000, seconds, years, paymentOption: offeringType, region: planType === "EC2Instance" ? region : null, instanceFamily };
}

/** Upfront and hourly of a savings plan as AWS bills them. */
const savingsPlanPrice = (item: SavingsPlanItem) => spendCommitmentPayments(item.hourlyCommitment, item.seconds, PAYMENT_OPTIONS[item.paymentOption]!);

function describeItem(i: AwsItem): string {
  if (i.service === "ec2") return `${i.count} × ${i.instanceType} ${i.years}-year ${i.offeringType} reserved instance${i.count === 1 ? "" : "s"} in ${i.region}`;
  if (i.service === "rds") return `${i.count} × ${i.dbInstanceClass} ${i.years}-year ${i.offeringType} RDS reserved instance${i.count === 1 ? "" : "s"} in ${i.region}`;
  return `$${i.commitment}/hour ${i.years}-year ${i.paymentOption} ${i.planType} savings plan${i.instanceFamily ? ` for ${i.instanceFamily} in ${i.region}` : ""}`;
}

const hourlyCharges = (charges: (RecurringCharge | RdsRecurringCharge)[] | undefined) =>
  (charges ?? []).reduce((sum, c) => {
    const frequency = "Frequency" in c ? c.Frequency : (c as RdsRecurringCharge).RecurringChargeFrequency;
    const amount = "Amount" in c ? c.Amount : (c as RdsRecurringCharge).RecurringChargeAmount;
    return frequency === "Hourly" || frequency === undefined ? sum + (amount ?? 0) : sum;
  }, 0);


const CREDENTIAL_CODES = new Set([
  "AuthFailure",
  "InvalidClientTokenId",
  "SignatureDoesNotMatch",
  "UnrecognizedClientException",
  "InvalidSignatureException",
  "IncompleteSignature",
  "MissingAuthenticationToken",
  "MissingAuthenticationTokenException",
  "ExpiredToken",
  "ExpiredTokenException",
  "RequestExpired",
  "InvalidAccessKeyId",
  "CredentialsProviderError",
]);
const PERMISSION_CODES = new Set(["UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "AuthorizationError", "OptInRequired"]);
const NO_OFFERING_CODES = new Set(["InvalidReservedInstancesOfferingId", "ReservedDBInstancesOfferingNotFound", "ResourceNotFoundException"]);
const LIMIT_CODES = new Set(["ReservedInstancesLimitExceeded", "ReservedDBInstanceQuotaExceeded", "ServiceQuotaExceededException", "InstanceLimitExceeded"]);
const TRANSIENT_CODES = new Set([
  "RequestLimitExceeded",
  "Throttling",
  "ThrottlingException",
  "TooManyRequestsException",
  "RequestThrottled",
  "RequestThrottledException",
  "SlowDown",
  "ServiceUnavailable",
  "Unavailable",
  "InternalError",
  "InternalFailure",
  "InternalServerError",
  "InternalServerException",
  "TimeoutError",
  "RequestTimeout",
  "RequestTimeoutException",
]);
const NETWORK_ERROR = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR|ConnectionRefused|ConnectionClosed|socket hang up|network|fetch failed/i;

/** AWS messages can echo an access key id; keep it out of what users see. */
const scrub = (message: string) => message.replace(/\b(AKIA|ASIA|AIDA|AROA)[A-Z0-9]{8,}\b/g, "[access key]").slice(0, 300);

/** The cause of an SDK error as a PurchaseFailure; `action` is the IAM action that was called. */
export function awsPurchaseFailure(e: unknown, action: string): PurchaseFailure {
  if (e instanceof PurchaseFailure) return e;
  const err = (e ?? {}) as { name?: string; Code?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } };
  const code = err.Code ?? err.name ?? "";
  const status = err.$metadata?.httpStatusCode;
  const message = scrub(err.message ?? "");
  if (CREDENTIAL_CODES.has(code) || (code === "AccessDenied" && /AssumeRole/i.test(message))) {
    return new PurchaseFailure("credentials", `AWS did not accept the purchasing connection's credentials (${code}). Check the access key, or the role ARN, its trust policy and external ID.`);
  }
  if (PERMISSION_CODES.has(code)) return new PurchaseFailure("permission", `AWS denied ${action} (${code}): grant the connection's role or user the ${action} permission.`);
  if (/limit ?price/i.test(message)) return new PurchaseFailure("price_changed", `AWS refused ${action} because the price rose above the limit price we sent: nothing was bought (${message}).`);
  if (NO_OFFERING_CODES.has(code)) return new PurchaseFailure("no_offering", `AWS no longer offers what the plan chose (${code}: ${message}).`);
  if (LIMIT_CODES.has(code)) return new PurchaseFailure("limit_exceeded", `AWS refused ${action}: an account quota was reached (${code}: ${message}). Ask AWS for a higher quota or buy less.`);
  const network = `${err.code ?? ""} ${err.cause?.code ?? ""} ${code} ${message}`;
  if (TRANSIENT_CODES.has(code) || (status !== undefined && status >= 500) || (status === undefined && NETWORK_ERROR.test(network))) {
    return new PurchaseFailure("unreachable", `AWS could not be reached or is busy for ${action} (${code || status || "network error"}); a later attempt retries.`, true);
  }
  if (status !== undefined && status >= 400) return new PurchaseFailure("refused", `AWS refused ${action} (${code || status}${message ? `: ${message}` : ""}).`);
  return new PurchaseFailure("internal", `Unexpected error calling ${action} (${err.name ?? "error"}${message ? `: ${message}` : ""}).`);
}

async function call<T>(action: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (e) {
    throw awsPurchaseFailure(e, action);
  }
}

async function allPages<T>(fetchPage: (token: string | undefined) => Promise<{ items: T[] | undefined; next: string | undefined }>): Promise<T[]> {
  const out: T[] = [];
  let token: string | undefined;
  for (let n = 0; n < MAX_PAGES; n++) {
    const page = await fetchPage(token);
    out.push(...(page.items ?? []));
    token = page.next;
    if (!token) break;
  }
  return out;
}


function riOutcome(ri: ReservedInstances, fallbackStart: Date): PurchaseOutcome {
  const count = ri.InstanceCount ?? 1;
  const start = date(ri.Start) ?? fallbackStart;
  return {
    providerPurchaseId: ri.ReservedInstancesId!,
    upfront: roundTo((ri.FixedPrice ?? 0) * count, 6),
    hourly: roundTo((hourlyCharges(ri.RecurringCharges) + (ri.UsagePrice ?? 0)) * count, 6),
    currency: ri.CurrencyCode ?? "USD",
    startsAt: start,
    endsAt: date(ri.End) ?? (ri.Duration ? new Date(start.getTime() + ri.Duration * 1000) : null),
    providerState: ri.State ?? "unknown",
  };
}
function rdsOutcome(r: ReservedDBInstance): PurchaseOutcome {
  const count = r.DBInstanceCount ?? 1;
  const start = date(r.StartTime);
  return {
    providerPurchaseId: r.ReservedDBInstanceId!,
    upfront: roundTo((r.FixedPrice ?? 0) * count, 6),
    hourly: roundTo((hourlyCharges(r.RecurringCharges) + (r.UsagePrice ?? 0)) * count, 6),
    currency: r.CurrencyCode ?? "USD",
    startsAt: start,
    endsAt: start && r.Duration ? new Date(start.getTime() + r.Duration * 1000) : null,
    providerState: r.State ?? "unknown",
  };
}
function savingsPlanOutcome(p: SavingsPlan): PurchaseOutcome {
  return {
    providerPurchaseId: p.savingsPlanId!,
    upfront: Number(p.upfrontPaymentAmount ?? 0),
    hourly: Number(p.recurringPaymentAmount ?? 0),
    currency: p.currency ?? "USD",
    startsAt: date(p.start),
    endsAt: date(p.end),
    providerState: p.state ?? "unknown",
  };
}

function commitmentState(state: string | undefined): ProviderCommitment["state"] {
  if (state === "active" || state === "pending-return") return "active";
  if (state === "payment-pending" || state === "queued") return "pending";
  return "retired";
}
const tagValue = (tags: { Key?: string; Value?: string }[] | undefined, key: string) => tags?.find((t) => t.Key === key)?.Value;

function riCommitment(ri: ReservedInstances, region: string): ProviderCommitment {
  const o = riOutcome(ri, new Date(0));
  return {
    providerCommitmentId: o.providerPurchaseId,
    commitmentType: "reserved_instance",
    category: "Usage",
    contractTerm: termOf(ri.Duration),
    paymentOption: PAYMENT_OPTIONS[ri.OfferingType ?? ""] ?? null,
    region,
    instanceType: ri.InstanceType ?? null,
    instanceFamily: familyOf(ri.InstanceType),
    amount: ri.InstanceCount ?? 0,
    upfrontCost: o.upfront,
    recurringHourlyCost: o.hourly,
    startsAt: date(ri.Start),
    endsAt: o.endsAt,
    state: commitmentState(ri.State),
    name: tagValue(ri.Tags, "Name") ?? null,
  };
}
function rdsCommitment(r: ReservedDBInstance, region: string): ProviderCommitment {
  const o = rdsOutcome(r);
  return {
    providerCommitmentId: o.providerPurchaseId,
    commitmentType: "reserved_instance",
    category: "Usage",
    contractTerm: termOf(r.Duration),
    paymentOption: PAYMENT_OPTIONS[r.OfferingType ?? ""] ?? null,
    region,
    instanceType: r.DBInstanceClass ?? null,
    instanceFamily: familyOf(r.DBInstanceClass),
    amount: r.DBInstanceCount ?? 0,
    upfrontCost: o.upfront,
    recurringHourlyCost: o.hourly,
    startsAt: o.startsAt,
    endsAt: o.endsAt,
    state: commitmentState(r.State),
    name: r.ReservedDBInstanceId ?? null,
  };
}
function savingsPlanCommitment(p: SavingsPlan, commitmentType: string): ProviderCommitment {
  const o = savingsPlanOutcome(p);
  return {
    providerCommitmentId: o.providerPurchaseId,
    commitmentType,
    category: "Spend",
    contractTerm: termOf(p.termDurationInSeconds),
    paymentOption: PAYMENT_OPTIONS[p.paymentOption ?? ""] ?? null,
    region: p.region || null,
    instanceType: null,
    instanceFamily: p.ec2InstanceFamily ?? null,
    amount: Number(p.commitment ?? 0),
    upfrontCost: o.upfront,
    recurringHourlyCost: o.hourly,
    startsAt: o.startsAt,
    endsAt: o.endsAt,
    state: commitmentState(p.state),
    name: p.tags?.Name ?? p.description ?? null,
  };
}


export function awsPurchaser(config: AwsPurchasingConfig, secrets: AwsPurchasingSecrets, opts: { now?: () => Date } = {}): ProviderPurchaser {
  const now = opts.now ?? (() => new Date());
  const endpoint = config.endpoint_url ?? undefined;
  const keys = config.access_key_id && secrets.secret_access_key ? { accessKeyId: config.access_key_id, secretAccessKey: secrets.secret_access_key } : undefined;
  const credentials = config.role_arn
    ? sharedCredentials(
        fromTemporaryCredentials({
          params: { RoleArn: config.role_arn, ExternalId: config.external_id ?? undefined, RoleSessionName: "commitops-purchasing", DurationSeconds: 3600 },
          masterCredentials: keys,
          clientConfig: { region: config.region, endpoint },
        }),
      )
    : keys;

  const ec2Clients = new Map<string, EC2Client>();
  const rdsClients = new Map<string, RDSClient>();
  let savingsPlansClient: SavingsplansClient | null = null;
  // A purchase call is not retried by the SDK: EC2 takes no token, so a retry after a lost answer would buy twice.
  const ec2 = (region: string, retry = true) => {
    const key = `${region}:${retry}`;
    let c = ec2Clients.get(key);
    if (!c) ec2Clients.set(key, (c = new EC2Client({ region, endpoint, credentials, maxAttempts: retry ? 3 : 1 })));
    return c;
  };
  const rds = (region: string) => {
    let c = rdsClients.get(region);
    if (!c) rdsClients.set(region, (c = new RDSClient({ region, endpoint, credentials, maxAttempts: 3 })));
    return c;
  };
  const savingsPlans = () => (savingsPlansClient ??= new SavingsplansClient({ region: SAVINGS_PLANS_REGION, endpoint, credentials, maxAttempts: 3 }));

  async function ec2Quote(i: Ec2Item): Promise<OfferQuote> {
    const offerings = await call("ec2:DescribeReservedInstancesOfferings", () =>
      allPages<ReservedInstancesOffering>(async (token) => {
        const r = await ec2(i.region).send(
          new DescribeReservedInstancesOfferingsCommand({
            InstanceType: i.instanceType as _InstanceType,
            ProductDescription: EC2_PRODUCT,
            InstanceTenancy: "default",
            OfferingClass: "standard",
            OfferingType: i.offeringType as OfferingTypeValues,
            MinDuration: i.seconds,
            MaxDuration: i.seconds,
            IncludeMarketplace: false,
            MaxResults: 100,
            NextToken: token,
          }),
        );
        return { items: r.ReservedInstancesOfferings, next: r.NextToken };
      }),
    );
    const matching = offerings.filter((o) => !o.Marketplace && o.InstanceType === i.instanceType && o.Duration === i.seconds && o.OfferingType === i.offeringType && o.ReservedInstancesOfferingId);
    // A regional RI applies to any zone and any size of the family; a zonal one only reserves capacity in its zone.
    const chosen = matching.find((o) => !o.AvailabilityZone && o.Scope !== "Availability Zone") ?? matching[0];
    if (!chosen) throw new PurchaseFailure("no_offering", `AWS offers no standard ${EC2_PRODUCT} ${i.offeringType} ${i.years}-year reserved instance for ${i.instanceType} in ${i.region}.`);
    if ((chosen.CurrencyCode ?? "USD") !== "USD") throw new PurchaseFailure("unsupported", `The ${i.instanceType} offering in ${i.region} is priced in ${chosen.CurrencyCode}; plans are in USD.`);
    return {
      offeringId: chosen.ReservedInstancesOfferingId!,
      upfront: roundTo((chosen.FixedPrice ?? 0) * i.count, 6),
      hourly: roundTo((hourlyCharges(chosen.RecurringCharges) + (chosen.UsagePrice ?? 0)) * i.count, 6),
      currency: "USD",
      durationSeconds: chosen.Duration ?? i.seconds,
    };
  }

  async function describeRis(region: string, input: { Filters?: Filter[]; ReservedInstancesIds?: string[] }): Promise<ReservedInstances[]> {
    const r = await call("ec2:DescribeReservedInstances", () => ec2(region).send(new DescribeReservedInstancesCommand(input)));
    return r.ReservedInstances ?? [];
  }

  /** Tags a bought RI with its token; the purchase stands even when tagging fails (findExisting also matches by shape and time). */
  async function tagRi(region: string, id: string, token: string): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        await ec2(region).send(new CreateTagsCommand({ Resources: [id], Tags: [{ Key: PURCHASE_TOKEN_TAG, Value: token }] }));
        return;
      } catch {
        // EC2 is eventually consistent: a just-bought RI may not be taggable for a moment.
        if (attempt < 3) await new Promise((r) => setTimeout(r, 250 * attempt));
      }
    }
  }

  async function ec2Buy(item: PurchaseItemSpec, i: Ec2Item, quote: OfferQuote): Promise<PurchaseOutcome> {
    const bought = await call("ec2:PurchaseReservedInstancesOffering", () =>
      ec2(i.region, false).send(
        new PurchaseReservedInstancesOfferingCommand({
          ReservedInstancesOfferingId: quote.offeringId,
          InstanceCount: i.count,
          // The price checked is the most AWS may charge: a rise in between is refused by AWS, not paid.
          LimitPrice: { Amount: quote.upfront, CurrencyCode: "USD" },
        }),
      ),
    );
    const id = bought.ReservedInstancesId;
    if (!id) throw new PurchaseFailure("internal", `EC2 accepted the purchase of ${describeItem(i)} but returned no reserved instances id; look for it in the EC2 console.`);
    await tagRi(i.region, id, item.token);
    const described = await describeRis(i.region, { ReservedInstancesIds: [id] }).catch(() => []);
    if (described[0]) return riOutcome(described[0], now());
    const start = now();
    return { providerPurchaseId: id, upfront: quote.upfront, hourly: quote.hourly, currency: quote.currency, startsAt: start, endsAt: new Date(start.getTime() + quote.durationSeconds * 1000), providerState: "payment-pending" };
  }

  async function ec2FindExisting(item: PurchaseItemSpec, i: Ec2Item, claimedIds: ReadonlySet<string>): Promise<PurchaseOutcome | null> {
    const tagged = await describeRis(i.region, { Filters: [{ Name: `tag:${PURCHASE_TOKEN_TAG}`, Values: [item.token] }] });
    if (tagged[0]) return riOutcome(tagged[0], now());
    // Our process may have died between the purchase and the tag: the RI is then the untagged one of this shape bought since the intent.
    const since = item.submittedAt.getTime() - UNTAGGED_RI_WINDOW_MS;
    const candidates = (
      await describeRis(i.region, {
        Filters: [
          { Name: "instance-type", Values: [i.instanceType] },
          { Name: "duration", Values: [String(i.seconds)] },
          { Name: "state", Values: ["payment-pending", "active", "payment-failed"] },
        ],
      })
    )
      .filter(
        (ri) =>
          ri.ReservedInstancesId &&
          !claimedIds.has(ri.ReservedInstancesId) &&
          ri.OfferingType === i.offeringType &&
          (ri.OfferingClass ?? "standard") === "standard" &&
          (ri.ProductDescription ?? EC2_PRODUCT).startsWith(EC2_PRODUCT) &&
          ri.InstanceCount === i.count &&
          tagValue(ri.Tags, PURCHASE_TOKEN_TAG) === undefined &&
          ri.Start !== undefined &&
          new Date(ri.Start).getTime() >= since,
      )
      .sort((a, b) => new Date(a.Start!).getTime() - new Date(b.Start!).getTime());
    const found = candidates[0];
    if (!found) return null;
    await tagRi(i.region, found.ReservedInstancesId!, item.token);
    return riOutcome(found, now());
  }

  async function rdsOfferings(i: RdsItem, offeringId?: string): Promise<ReservedDBInstancesOffering[]> {
    return call("rds:DescribeReservedDBInstancesOfferings", () =>
      allPages<ReservedDBInstancesOffering>(async (marker) => {
        const r = await rds(i.region).send(
          new DescribeReservedDBInstancesOfferingsCommand(
            offeringId
              ? { ReservedDBInstancesOfferingId: offeringId, Marker: marker }
              : { DBInstanceClass: i.dbInstanceClass, Duration: String(i.seconds), OfferingType: i.offeringType, MultiAZ: false, MaxRecords: 100, Marker: marker },
          ),
        );
        return { items: r.ReservedDBInstancesOfferings, next: r.Marker };
      }),
    );
  }
  const rdsQuoteOf = (o: ReservedDBInstancesOffering, i: RdsItem): OfferQuote => ({
    offeringId: o.ReservedDBInstancesOfferingId!,
    upfront: roundTo((o.FixedPrice ?? 0) * i.count, 6),
    hourly: roundTo((hourlyCharges(o.RecurringCharges) + (o.UsagePrice ?? 0)) * i.count, 6),
    currency: o.CurrencyCode ?? "USD",
    durationSeconds: o.Duration ?? i.seconds,
  });

  async function rdsQuote(i: RdsItem): Promise<OfferQuote> {
    const matching = (await rdsOfferings(i)).filter((o) => !o.MultiAZ && o.DBInstanceClass === i.dbInstanceClass && o.Duration === i.seconds && o.OfferingType === i.offeringType && o.ReservedDBInstancesOfferingId);
    // Plan items carry no database engine; MySQL is the engine AWS lists first for most classes.
    const chosen = matching.find((o) => o.ProductDescription === "mysql") ?? matching[0];
    if (!chosen) throw new PurchaseFailure("no_offering", `AWS offers no single-AZ ${i.offeringType} ${i.years}-year RDS reserved instance for ${i.dbInstanceClass} in ${i.region}.`);
    return rdsQuoteOf(chosen, i);
  }

  async function describeRdsReservation(region: string, id: string): Promise<ReservedDBInstance | null> {
    try {
      const r = await rds(region).send(new DescribeReservedDBInstancesCommand({ ReservedDBInstanceId: id }));
      return r.ReservedDBInstances?.[0] ?? null;
    } catch (e) {
      const code = (e as { Code?: string; name?: string }).Code ?? (e as { name?: string }).name;
      if (code === "ReservedDBInstanceNotFound" || code === "ReservedDBInstanceNotFoundFault") return null;
      throw awsPurchaseFailure(e, "rds:DescribeReservedDBInstances");
    }
  }

  async function rdsBuy(item: PurchaseItemSpec, i: RdsItem, quote: OfferQuote): Promise<PurchaseOutcome> {
    const id = rdsReservationId(item.token);
    try {
      const r = await rds(i.region).send(
        new PurchaseReservedDBInstancesOfferingCommand({ ReservedDBInstancesOfferingId: quote.offeringId, ReservedDBInstanceId: id, DBInstanceCount: i.count, Tags: [{ Key: PURCHASE_TOKEN_TAG, Value: item.token }] }),
      );
      if (r.ReservedDBInstance?.ReservedDBInstanceId) return rdsOutcome(r.ReservedDBInstance);
    } catch (e) {
      const code = (e as { Code?: string }).Code ?? (e as { name?: string }).name;
      // An earlier attempt under this token bought it: that purchase is the answer.
      if (code !== "ReservedDBInstanceAlreadyExists" && code !== "ReservedDBInstanceAlreadyExistsFault") throw awsPurchaseFailure(e, "rds:PurchaseReservedDBInstancesOffering");
    }
    const existing = await describeRdsReservation(i.region, id);
    if (!existing) throw new PurchaseFailure("unreachable", `RDS reported reservation ${id} but does not list it yet; a later attempt finds it.`, true);
    return rdsOutcome(existing);
  }

  async function savingsPlanQuote(i: SavingsPlanItem): Promise<OfferQuote> {
    const offerings = await call("savingsplans:DescribeSavingsPlansOfferings", () =>
      allPages<SavingsPlanOffering>(async (token) => {
        const r = await savingsPlans().send(
          new DescribeSavingsPlansOfferingsCommand({
            planTypes: [i.planType],
            durations: [i.seconds],
            paymentOptions: [i.paymentOption],
            currencies: ["USD"],
            ...(i.planType === "EC2Instance"
              ? { productType: "EC2", filters: [{ name: "region", values: [i.region!] }, { name: "instanceFamily", values: [i.instanceFamily!] }] }
              : {}),
            maxResults: 100,
            nextToken: token,
          }),
        );
        return { items: r.searchResults, next: r.nextToken };
      }),
    );
    const property = (o: SavingsPlanOffering, name: string) => o.properties?.find((p) => p.name === name)?.value;
    const chosen = offerings.find(
      (o) =>
        o.offeringId &&
        o.planType === i.planType &&
        o.durationSeconds === i.seconds &&
        o.paymentOption === i.paymentOption &&
        (i.planType !== "EC2Instance" || (property(o, "region") === i.region && property(o, "instanceFamily") === i.instanceFamily)),
    );
    if (!chosen) throw new PurchaseFailure("no_offering", `AWS offers no ${describeItem(i).replace(/^\$[^ ]+ /, "")}.`);
    return { offeringId: chosen.offeringId!, ...savingsPlanPrice(i), currency: chosen.currency ?? "USD", durationSeconds: chosen.durationSeconds ?? i.seconds };
  }

  async function describeSavingsPlans(input: { savingsPlanIds?: string[] }): Promise<SavingsPlan[]> {
    return call("savingsplans:DescribeSavingsPlans", () =>
      allPages<SavingsPlan>(async (token) => {
        const r = await savingsPlans().send(new DescribeSavingsPlansCommand({ ...input, maxResults: 100, nextToken: token }));
        return { items: r.savingsPlans, next: r.nextToken };
      }),
    );
  }

  async function savingsPlanBuy(item: PurchaseItemSpec, i: SavingsPlanItem, quote: OfferQuote): Promise<PurchaseOutcome> {
    const price = savingsPlanPrice(i);
    const r = await call("savingsplans:CreateSavingsPlan", () =>
      savingsPlans().send(
        new CreateSavingsPlanCommand({
          savingsPlanOfferingId: quote.offeringId,
          commitment: i.commitment,
          ...(i.paymentOption === "Partial Upfront" ? { upfrontPaymentAmount: price.upfront.toFixed(2) } : {}),
          clientToken: item.token,
          tags: { [PURCHASE_TOKEN_TAG]: item.token },
        }),
      ),
    );
    if (!r.savingsPlanId) throw new PurchaseFailure("internal", `Savings Plans accepted ${describeItem(i)} but returned no id; look for it in the Savings Plans console.`);
    const described = await describeSavingsPlans({ savingsPlanIds: [r.savingsPlanId] }).catch(() => []);
    if (described[0]) return savingsPlanOutcome(described[0]);
    const start = now();
    return { providerPurchaseId: r.savingsPlanId, upfront: price.upfront, hourly: price.hourly, currency: "USD", startsAt: start, endsAt: new Date(start.getTime() + i.seconds * 1000), providerState: "payment-pending" };
  }

  return {
    kind: "aws_purchasing",

    async quote(item) {
      const i = awsItem(item, config.region);
      const quote = i.service === "ec2" ? await ec2Quote(i) : i.service === "rds" ? await rdsQuote(i) : await savingsPlanQuote(i);
      refuseAbovePlan(item, quote.upfront, describeItem(i));
      return quote;
    },

    async dryRun(item, quote) {
      const i = awsItem(item, config.region);
      const what = describeItem(i);
      refuseAbovePlan(item, quote.upfront, what);
      const price = `${usd(quote.upfront)} upfront + $${roundTo(quote.hourly, 6)}/hour`;
      if (i.service === "ec2") {
        try {
          const r = await ec2(i.region).send(
            new PurchaseReservedInstancesOfferingCommand({ ReservedInstancesOfferingId: quote.offeringId, InstanceCount: i.count, LimitPrice: { Amount: quote.upfront, CurrencyCode: "USD" }, DryRun: true }),
          );
          throw new PurchaseFailure("internal", `EC2 answered a DryRun purchase of ${what} without DryRunOperation (reserved instances id ${r.ReservedInstancesId ?? "none"}); check the account's reserved instances.`);
        } catch (e) {
          const code = (e as { Code?: string }).Code ?? (e as { name?: string }).name;
          if (code !== "DryRunOperation") throw awsPurchaseFailure(e, "ec2:PurchaseReservedInstancesOffering");
        }
        return { summary: `EC2 dry run (PurchaseReservedInstancesOffering DryRun) would succeed: ${what}, offering ${quote.offeringId}, ${price}; nothing bought.` };
      }
      if (i.service === "rds") {
        const [offering] = await rdsOfferings(i, quote.offeringId);
        if (!offering) throw new PurchaseFailure("no_offering", `AWS no longer offers RDS offering ${quote.offeringId} for ${what}.`);
        const current = rdsQuoteOf(offering, i);
        refuseAbovePlan(item, current.upfront, what);
        return {
          summary: `RDS has no dry run: re-read offering ${current.offeringId} (${offering.ProductDescription ?? "engine unknown"}, single-AZ) with DescribeReservedDBInstancesOfferings: ${what} at ${usd(current.upfront)} upfront + $${roundTo(current.hourly, 6)}/hour; nothing bought.`,
        };
      }
      const rates = await call("savingsplans:DescribeSavingsPlansOfferingRates", () => savingsPlans().send(new DescribeSavingsPlansOfferingRatesCommand({ savingsPlanOfferingIds: [quote.offeringId], maxResults: 10 })));
      if (!rates.searchResults?.length) throw new PurchaseFailure("no_offering", `AWS no longer lists rates for savings plan offering ${quote.offeringId} (${what}).`);
      return { summary: `Savings Plans has no dry run: offering ${quote.offeringId} is offered with rates (DescribeSavingsPlansOfferingRates): ${what} at ${price}; nothing bought.` };
    },

    async findExisting(item, claimedIds) {
      const i = awsItem(item, config.region);
      if (i.service === "ec2") return ec2FindExisting(item, i, claimedIds);
      if (i.service === "rds") {
        const r = await describeRdsReservation(i.region, rdsReservationId(item.token));
        return r ? rdsOutcome(r) : null;
      }
      const plans = await describeSavingsPlans({});
      const mine = plans.find((p) => p.tags?.[PURCHASE_TOKEN_TAG] === item.token);
      return mine ? savingsPlanOutcome(mine) : null;
    },

    async buy(item, quote) {
      const i = awsItem(item, config.region);
      refuseAbovePlan(item, quote.upfront, describeItem(i));
      if (i.service === "ec2") return ec2Buy(item, i, quote);
      if (i.service === "rds") return rdsBuy(item, i, quote);
      return savingsPlanBuy(item, i, quote);
    },

    async listCommitments(regions) {
      const scanned = [...new Set(regions.length ? regions : [config.region])];
      const perRegion = await Promise.all(
        scanned.map(async (region) => {
          const [ris, dbs] = await Promise.all([
            describeRis(region, {}),
            call("rds:DescribeReservedDBInstances", () =>
              allPages<ReservedDBInstance>(async (marker) => {
                const r = await rds(region).send(new DescribeReservedDBInstancesCommand({ MaxRecords: 100, Marker: marker }));
                return { items: r.ReservedDBInstances, next: r.Marker };
              }),
            ),
          ]);
          return [...ris.filter((ri) => ri.ReservedInstancesId).map((ri) => riCommitment(ri, region)), ...dbs.filter((d) => d.ReservedDBInstanceId).map((d) => rdsCommitment(d, region))];
        }),
      );
      // SageMaker savings plans have no commitment type here: they are not bought or planned through commitops.
      const plans = (await describeSavingsPlans({})).filter((p) => p.savingsPlanId && COMMITMENT_TYPES[p.savingsPlanType ?? ""]);
      return [...perRegion.flat(), ...plans.map((p) => savingsPlanCommitment(p, COMMITMENT_TYPES[p.savingsPlanType!]!))];
    },

    async check() {
      await describeRis(config.region, { Filters: [{ Name: "tag-key", Values: [PURCHASE_TOKEN_TAG] }] });
    },

    close() {
      for (const c of ec2Clients.values()) c.destroy();
      for (const c of rdsClients.values()) c.destroy();
      savingsPlansClient?.destroy();
      ec2Clients.clear();
      rdsClients.clear();
      savingsPlansClient = null;
    },
  };
}

/** One assumed-role session for every client of the connection, renewed five minutes before it expires. */
function sharedCredentials(provider: ReturnType<typeof fromTemporaryCredentials>): ReturnType<typeof fromTemporaryCredentials> {
  let current: ReturnType<ReturnType<typeof fromTemporaryCredentials>> | null = null;
  let expiresAt = Number.POSITIVE_INFINITY;
  return (options) => {
    if (!current || Date.now() > expiresAt - 5 * 60_000) {
      const pending = provider(options);
      current = pending;
      expiresAt = Number.POSITIVE_INFINITY;
      pending.then(
        (c) => {
          if (current === pending) expiresAt = c.expiration?.getTime() ?? Number.POSITIVE_INFINITY;
        },
        () => {
          if (current === pending) current = null;
        },
      );
    }
    return current;
  };
}
