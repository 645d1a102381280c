/**
 * A loopback stand-in for the Azure endpoints the purchasing connection calls, over HTTPS (the
 * Azure SDKs send bearer tokens to https URLs only, and MSAL wants an https authority):
 * - Entra ID: the client-credentials grant (POST /{tenant}/oauth2/v2.0/token, a wrong secret is
 *   refused with invalid_client / AADSTS7000215 as Entra does) and the OpenID metadata MSAL reads.
 * - Azure Resource Manager, in its wire format (api-version checked, ARM error bodies, PUTs
 *   answered 201 + Azure-AsyncOperation and polled until Succeeded): Microsoft.Capacity
 *   calculatePrice, reservation orders and reservations; Microsoft.BillingBenefits reservation and
 *   savings plan order aliases, savings plan orders, savings plans and validate.
 * Purchases are held by alias name, so a repeated PUT of the same alias buys nothing more, and
 * survive a client that dies mid-purchase (ARM finishes an accepted purchase on its own). Every
 * request is recorded. The certificate is trusted in this process when the server starts; a
 * child process needs `childEnv` (NODE_EXTRA_CA_CERTS).
 */
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tls from "node:tls";

export const ARM_API_VERSION = "2022-11-01";

export type AzureOperation =
  | "openidConfiguration"
  | "instanceDiscovery"
  | "token"
  | "calculatePrice"
  | "reservationOrder.list"
  | "reservationOrder.get"
  | "reservation.listAll"
  | "reservationOrderAlias.create"
  | "reservationOrderAlias.get"
  | "savingsPlanOrderAlias.create"
  | "savingsPlanOrderAlias.get"
  | "savingsPlanOrder.get"
  | "savingsPlan.listAll"
  | "validatePurchase"
  | "operationStatus"
  | "unknown";

export interface RecordedAzureRequest {
  operation: AzureOperation;
  method: string;
  path: string;
  apiVersion: string | null;
  query: Record<string, string>;
  /** JSON body as received (form fields for the token endpoint, without the client secret). */
  body: unknown;
  /** An `Authorization: Bearer …` header was sent. */
  bearer: boolean;
  /** Our name in the path: the alias name of an alias PUT/GET. */
  aliasName: string | null;
  /** The order GUID of an order read. */
  orderId: string | null;
  status: number;
}

export interface ReservationPrice {
  sku: string;
  location: string;
  term: "P1Y" | "P3Y" | "P5Y";
  /** USD for one VM for the whole term (monthly billing spreads the same total over the months). */
  upfront: number;
}

/** One purchase the server accepted. */
export interface AzureOrder {
  kind: "reservation" | "savings_plan";
  aliasName: string;
  /** ARM id of the order: /providers/Microsoft.Capacity/reservationOrders/{guid} or /providers/Microsoft.BillingBenefits/savingsPlanOrders/{guid}. */
  orderId: string;
  orderGuid: string;
  /** ARM id of the reservation or savings plan in the order (the reservation's in ARM's lower-case form). */
  itemId: string;
  sku: string;
  location: string | null;
  term: string;
  billingPlan: "Upfront" | "Monthly";
  /** VMs of a reservation; 1 for a savings plan. */
  quantity: number;
  /** $/hour of a savings plan. */
  commitment: number | null;
  billingScopeId: string;
  appliedScopeType: string;
  /** The subscription of a Single applied scope. */
  appliedScopeSubscription: string | null;
  displayName: string;
  instanceFlexibility: string | null;
  renew: boolean;
  /** USD for the whole order and term. */
  total: number;
  provisioningState: string;
  createdAt: Date;
  expiresAt: Date;
}

export type AzureFailure =
  /** Answer with this status and an ARM (or, for "token", Entra) error body. */
  | { status: number; code: string; message: string }
  /** Accept the PUT (201 + Azure-AsyncOperation), then end the operation Failed with this error; nothing is bought. */
  | { lroFailure: { code: string; message: string } }
  /** validatePurchase answers valid: false with this reason. */
  | { invalid: { reasonCode: string; reason: string } }
  /** Drop the connection without an answer. */
  | { network: true };

export interface AzurePurchasingServerOptions {
  tenantId?: string;
  clientId?: string;
  clientSecret?: string;
  /** Reservation prices (default: Standard_D2s_v3 and Standard_D4s_v3 in eastus and westeurope). */
  prices?: ReservationPrice[];
  /** Status polls a purchase answers Running before it completes (default 0: done on the first poll). */
  pollsBeforeDone?: number;
  /** Most items in one list page (then a nextLink). */
  pageSize?: number;
  now?: () => Date;
}

export interface AzurePurchasingServer {
  /** ARM endpoint (https://127.0.0.1:port). */
  url: string;
  /** Entra ID authority host (the same server). */
  authorityHost: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** PEM of the server's self-signed certificate. */
  certificate: string;
  /** NODE_EXTRA_CA_CERTS for a child process that calls this server. */
  childEnv: Record<string, string>;
  /** What was bought (live array). */
  orders: AzureOrder[];
  /** Every request received (live array). */
  requests: RecordedAzureRequest[];
  /** Adds or replaces the price of a VM size in a location for a term. */
  setPrice(price: ReservationPrice): void;
  /** The next `times` requests of `operation` fail this way. */
  failNext(operation: AzureOperation, failure: AzureFailure, times?: number): void;
  /** Accepted purchases stay in progress (status Running, alias Created) until `release()`. */
  hold(): void;
  release(): void;
  /** Sets the provisioning state of an order (by order id, GUID or alias name), e.g. Expired or Cancelled. */
  setOrderState(order: string, state: string): void;
  /** Resolves with the first recorded request of `operation` (already received or still to come). */
  waitForRequest(operation: AzureOperation, timeoutMs?: number): Promise<RecordedAzureRequest>;
  /** Forgets orders, requests, failures, holds and price changes (issued tokens stay valid). */
  reset(): void;
  close(): Promise<void>;
}

const DEFAULT_PRICES: ReservationPrice[] = ["eastus", "westeurope"].flatMap((location) => [
  { sku: "Standard_D2s_v3", location, term: "P1Y" as const, upfront: 613.2 },
  { sku: "Standard_D2s_v3", location, term: "P3Y" as const, upfront: 1182.6 },
  { sku: "Standard_D4s_v3", location, term: "P1Y" as const, upfront: 1226.4 },
  { sku: "Standard_D4s_v3", location, term: "P3Y" as const, upfront: 2365.2 },
]);

const SAVINGS_PLAN_SKU = "Compute_Savings_Plan";
const YEARS: Record<string, number> = { P1Y: 1, P3Y: 3, P5Y: 5 };
const HOURS_PER_YEAR = 8760;

/** A self-signed certificate for 127.0.0.1 / localhost (valid until 2126), tests only. */
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgRkoqKeY5PEewikW+
D2vggDsj3tGgvD61ixMGfFCiqFahRANCAAQVpMRO0Ol9bn65wh9yH3qaO3zRESsS
foNsS+ZHw9MDC1eV1c+lIPr4Se646Sw9nRubk/hKecBkt2qZSWSTwrBG
-----END PRIVATE KEY-----
`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBwTCCAWegAwIBAgIUfwT9ItQMk+fBbUvadgqUQCUn0sgwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUY29tbWl0b3BzLWF6dXJlLXRlc3QwIBcNMjYxMTI1MTIwMTAz
WhgPMjEyNjExMDExMjAxMDNaMB8xHTAbBgNVBAMMFGNvbW1pdG9wcy1henVyZS10
ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFaTETtDpfW5+ucIfch96mjt8
0RErEn6DbEvmR8PTAwtXldXPpSD6+EnuuOksPZ0bm5P4SnnAZLdqmUlkk8KwRqN/
MH0wHQYDVR0OBBYEFHSgxhy3c839y2NdaUA1WN9soBlnMB8GA1UdIwQYMBaAFHSg
xhy3c839y2NdaUA1WN9soBlnMBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9zdDAP
BgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIChDAKBggqhkjOPQQDAgNIADBF
AiAWQ2H7D6i7JxUfWbs86+5CB9w0Jp754R9mqTs2j+MopgIhAOJqHlWloj+cA/vf
0iWTBrwHoT4lMiBRdDFvDooVahCN
-----END CERTIFICATE-----
`;

/** Adds the test certificate to this process's default trust store (once). */
function trustTestCertificate(): void {
  const current = tls.getCACertificates("default");
  if (!current.some((c) => c.replace(/\s/g, "") === TEST_CERT.replace(/\s/g, ""))) tls.setDefaultCACertificates([...current, TEST_CERT]);
}

/** A CA file with the certificates a child would trust anyway plus ours (NODE_EXTRA_CA_CERTS replaces, not adds). */
function writeCaFile(): string {
  let inherited = "";
  const existing = process.env.NODE_EXTRA_CA_CERTS;
  if (existing) {
    try {
      inherited = readFileSync(existing, "utf8");
    } catch {
      inherited = "";
    }
  }
  const file = join(tmpdir(), `commitops-azure-ca-${process.pid}-${randomBytes(4).toString("hex")}.pem`);
  writeFileSync(file, `${inherited.trimEnd()}\n${TEST_CERT}`);
  return file;
}

interface Operation {
  id: string;
  kind: "reservation" | "savings_plan";
  aliasKey: string;
  pollsLeft: number;
  failure: { code: string; message: string } | null;
  status: "Running" | "Succeeded" | "Failed";
  startTime: Date;
  endTime: Date | null;
}

interface Alias {
  kind: "reservation" | "savings_plan";
  name: string;
  request: Record<string, any>;
  provisioningState: string;
  order: AzureOrder | null;
  operation: Operation;
}

class ArmError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const isoDate = (d: Date) => d.toISOString().slice(0, 10);
const addMonths = (d: Date, months: number) => {
  const out = new Date(d);
  out.setUTCMonth(out.getUTCMonth() + months);
  return out;
};

export async function startAzurePurchasingServer(options: AzurePurchasingServerOptions = {}): Promise<AzurePurchasingServer> {
  trustTestCertificate();
  const tenantId = options.tenantId ?? "7f0c3a52-1d5e-4c1b-9a3e-2b8f1c6d4e90";
  const clientId = options.clientId ?? "3c9e2b71-8a4d-4f6e-b5c2-9d1e7a3f0b64";
  const clientSecret = options.clientSecret ?? `cs~${randomBytes(18).toString("base64url")}`;
  const pageSize = options.pageSize ?? 50;
  const now = options.now ?? (() => new Date());
  const caFile = writeCaFile();

  const prices = new Map<string, ReservationPrice>();
  const priceKey = (sku: string, location: string, term: string) => `${sku.toLowerCase()}|${location.toLowerCase()}|${term.toUpperCase()}`;
  const setPrice = (p: ReservationPrice) => prices.set(priceKey(p.sku, p.location, p.term), { ...p });
  const resetPrices = () => {
    prices.clear();
    for (const p of options.prices ?? DEFAULT_PRICES) setPrice(p);
  };
  resetPrices();

  const orders: AzureOrder[] = [];
  const requests: RecordedAzureRequest[] = [];
  const aliases = new Map<string, Alias>();
  const operations = new Map<string, Operation>();
  const failures = new Map<AzureOperation, { failure: AzureFailure; times: number }>();
  const issuedTokens = new Map<string, { scope: string }>();
  const waiters: { operation: AzureOperation; resolve: (r: RecordedAzureRequest) => void }[] = [];
  let held = false;
  let base = "";

  const takeFailure = (operation: AzureOperation): AzureFailure | null => {
    const f = failures.get(operation);
    if (!f) return null;
    if (--f.times <= 0) failures.delete(operation);
    return f.failure;
  };

  const record = (r: RecordedAzureRequest) => {
    requests.push(r);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.operation === r.operation) {
        waiters[i]!.resolve(r);
        waiters.splice(i, 1);
      }
    }
  };

  // ARM finishes an accepted purchase whether or not the client keeps polling: any read advances it.
  const advance = (op: Operation) => {
    if (op.status !== "Running" || held) return;
    if (op.pollsLeft > 0) {
      op.pollsLeft--;
      return;
    }
    const alias = aliases.get(op.aliasKey)!;
    op.endTime = now();
    if (op.failure) {
      op.status = "Failed";
      alias.provisioningState = "Failed";
      return;
    }
    op.status = "Succeeded";
    alias.provisioningState = "Succeeded";
    if (alias.order && alias.order.provisioningState === "Creating") alias.order.provisioningState = "Succeeded";
  };

  const priceOf = (sku: string, location: string, term: string): ReservationPrice => {
    const p = prices.get(priceKey(sku, location, term));
    if (!p) throw new ArmError(400, "BadRequest", `Reservation SKU '${sku}' is not available in location '${location}' for term '${term}'.`);
    return p;
  };

  const requireTerm = (term: unknown): string => {
    if (typeof term !== "string" || !(term in YEARS)) throw new ArmError(400, "UnsupportedReservationTerm", `The term '${String(term)}' is not supported; use P1Y, P3Y or P5Y.`);
    return term;
  };
  const requireScope = (props: Record<string, any>, single: () => string | null): { type: string; subscription: string | null } => {
    const type = props.appliedScopeType;
    if (type === "Shared") return { type, subscription: null };
    if (type === "Single") {
      const subscription = single();
      if (!subscription) throw new ArmError(400, "MissingAppliedScopesForSingle", "A Single applied scope needs the subscription that gets the benefit.");
      return { type, subscription };
    }
    throw new ArmError(400, "InvalidRequestContent", `The applied scope type '${String(type)}' is not supported here; use Shared or Single.`);
  };

  /** Validates a Microsoft.Capacity PurchaseRequest (calculatePrice) and prices it. */
  const priceCapacityRequest = (body: any) => {
    const props = body?.properties ?? {};
    const sku = body?.sku?.name;
    const location = body?.location;
    if (typeof sku !== "string" || typeof location !== "string") throw new ArmError(400, "InvalidRequestContent", "sku.name and location are required.");
    if (props.reservedResourceType !== "VirtualMachines") throw new ArmError(400, "InvalidRequestContent", `Reserved resource type '${String(props.reservedResourceType)}' is not offered by this stand-in.`);
    if (typeof props.billingScopeId !== "string" || !props.billingScopeId) throw new ArmError(400, "InvalidRequestContent", "properties.billingScopeId is required.");
    const term = requireTerm(props.term);
    if (props.billingPlan !== "Upfront" && props.billingPlan !== "Monthly") throw new ArmError(400, "InvalidRequestContent", `The billing plan '${String(props.billingPlan)}' is not valid; use Upfront or Monthly.`);
    if (!Number.isInteger(props.quantity) || props.quantity < 1) throw new ArmError(400, "InvalidRequestContent", "properties.quantity must be a positive whole number.");
    requireScope(props, () => {
      if (!Array.isArray(props.appliedScopes) || props.appliedScopes.length !== 1) throw new ArmError(400, "InvalidSingleAppliedScopesCount", "A Single applied scope takes exactly one subscription.");
      return props.appliedScopes[0];
    });
    const price = priceOf(sku, location, term);
    return { sku, location, term, billingPlan: props.billingPlan as "Upfront" | "Monthly", quantity: props.quantity as number, total: round2(price.upfront * props.quantity) };
  };

  const paymentSchedule = (total: number, billingPlan: "Upfront" | "Monthly", term: string, start: Date, status: string) => {
    if (billingPlan === "Upfront") return [{ dueDate: isoDate(start), pricingCurrencyTotal: { currencyCode: "USD", amount: total }, billingCurrencyTotal: { currencyCode: "USD", amount: total }, status }];
    const months = YEARS[term]! * 12;
    const monthly = round2(total / months);
    return Array.from({ length: months }, (_, i) => ({
      dueDate: isoDate(addMonths(start, i)),
      pricingCurrencyTotal: { currencyCode: "USD", amount: monthly },
      billingCurrencyTotal: { currencyCode: "USD", amount: monthly },
      status: i === 0 ? status : "Scheduled",
    }));
  };

  const aliasJson = (a: Alias) => {
    const r = a.request;
    const type = a.kind === "reservation" ? "reservationOrderAliases" : "savingsPlanOrderAliases";
    const properties: Record<string, unknown> = { ...r.properties, provisioningState: a.provisioningState };
    if (a.order) properties[a.kind === "reservation" ? "reservationOrderId" : "savingsPlanOrderId"] = a.order.orderId;
    return {
      id: `/providers/Microsoft.BillingBenefits/${type}/${a.name}`,
      name: a.name,
      type: `Microsoft.BillingBenefits/${type}`,
      sku: r.sku,
      ...(a.kind === "reservation" ? { location: r.location } : {}),
      properties,
    };
  };

  const reservationOrderJson = (o: AzureOrder, expandPlan: boolean) => ({
    id: o.orderId.replace("Microsoft.Capacity", "microsoft.capacity"),
    type: "Microsoft.Capacity/reservationOrders",
    name: o.orderGuid,
    etag: 1,
    properties: {
      displayName: o.displayName,
      requestDateTime: o.createdAt.toISOString(),
      createdDateTime: o.createdAt.toISOString(),
      benefitStartTime: o.createdAt.toISOString(),
      expiryDate: isoDate(o.expiresAt),
      expiryDateTime: o.expiresAt.toISOString(),
      term: o.term,
      billingPlan: o.billingPlan,
      provisioningState: o.provisioningState,
      originalQuantity: o.quantity,
      reservations: [{ id: o.itemId }],
      ...(expandPlan ? { planInformation: planInformation(o) } : {}),
    },
  });

  const planInformation = (o: AzureOrder) => {
    const transactions = paymentSchedule(o.total, o.billingPlan, o.term, o.createdAt, "Succeeded");
    return {
      pricingCurrencyTotal: { currencyCode: "USD", amount: o.total },
      startDate: isoDate(o.createdAt),
      ...(o.billingPlan === "Monthly" ? { nextPaymentDueDate: transactions[1]?.dueDate } : {}),
      transactions,
    };
  };

  const reservationJson = (o: AzureOrder) => ({
    id: o.itemId,
    name: o.itemId.split("/reservationOrders/")[1]!.replace("/reservations/", "/"),
    type: "Microsoft.Capacity/reservationOrders/reservations",
    location: o.location,
    etag: 1,
    sku: { name: o.sku },
    kind: "Microsoft.Compute",
    properties: {
      reservedResourceType: "VirtualMachines",
      instanceFlexibility: o.instanceFlexibility ?? "On",
      displayName: o.displayName,
      appliedScopes: o.appliedScopeSubscription ? [o.appliedScopeSubscription] : null,
      appliedScopeType: o.appliedScopeType,
      archived: false,
      quantity: o.quantity,
      provisioningState: o.provisioningState,
      displayProvisioningState: o.provisioningState,
      effectiveDateTime: o.createdAt.toISOString(),
      benefitStartTime: o.createdAt.toISOString(),
      expiryDate: isoDate(o.expiresAt),
      expiryDateTime: o.expiresAt.toISOString(),
      purchaseDate: isoDate(o.createdAt),
      purchaseDateTime: o.createdAt.toISOString(),
      billingPlan: o.billingPlan,
      billingScopeId: o.billingScopeId,
      renew: o.renew,
      term: o.term,
      userFriendlyAppliedScopeType: o.appliedScopeType,
      userFriendlyRenewState: o.renew ? "On" : "Off",
    },
  });

  const savingsPlanProperties = (o: AzureOrder) => ({
    displayName: o.displayName,
    provisioningState: o.provisioningState,
    billingScopeId: o.billingScopeId,
    term: o.term,
    ...(o.billingPlan === "Monthly" ? { billingPlan: "P1M" } : {}),
    benefitStartTime: o.createdAt.toISOString(),
    expiryDateTime: o.expiresAt.toISOString(),
  });

  const savingsPlanJson = (o: AzureOrder) => ({
    id: o.itemId,
    name: o.itemId.split("/savingsPlanOrders/")[1]!.replace("/savingsPlans/", "/"),
    type: "Microsoft.BillingBenefits/savingsPlanOrders/savingsPlans",
    sku: { name: o.sku },
    properties: {
      ...savingsPlanProperties(o),
      displayProvisioningState: o.provisioningState,
      appliedScopeType: o.appliedScopeType,
      userFriendlyAppliedScopeType: o.appliedScopeType,
      appliedScopeProperties: o.appliedScopeSubscription ? { subscriptionId: o.appliedScopeSubscription } : null,
      commitment: { grain: "Hourly", currencyCode: "USD", amount: o.commitment },
      effectiveDateTime: o.createdAt.toISOString(),
      purchaseDateTime: o.createdAt.toISOString(),
      renew: o.renew,
    },
  });

  const savingsPlanOrderJson = (o: AzureOrder, expandPlan: boolean) => ({
    id: o.orderId,
    name: o.orderGuid,
    type: "Microsoft.BillingBenefits/savingsPlanOrders",
    sku: { name: o.sku },
    properties: { ...savingsPlanProperties(o), savingsPlans: [o.itemId], ...(expandPlan ? { planInformation: planInformation(o) } : {}) },
  });

  /** Validates a Microsoft.BillingBenefits savings plan body; returns its order fields. */
  const checkSavingsPlan = (body: any) => {
    const props = body?.properties ?? {};
    if (body?.sku?.name !== SAVINGS_PLAN_SKU) throw new ArmError(400, "InvalidSku", `The savings plan SKU '${String(body?.sku?.name)}' is not valid; use ${SAVINGS_PLAN_SKU}.`);
    if (typeof props.billingScopeId !== "string" || !props.billingScopeId) throw new ArmError(400, "InvalidRequestContent", "properties.billingScopeId is required.");
    const term = requireTerm(props.term);
    if (term === "P5Y") throw new ArmError(400, "UnsupportedReservationTerm", "Savings plans are sold for P1Y or P3Y.");
    if (props.billingPlan !== undefined && props.billingPlan !== "P1M") throw new ArmError(400, "InvalidRequestContent", `The billing plan '${String(props.billingPlan)}' is not valid; use P1M or none (upfront).`);
    const c = props.commitment ?? {};
    if (c.grain !== "Hourly" || c.currencyCode !== "USD" || typeof c.amount !== "number" || !(c.amount > 0)) throw new ArmError(400, "InvalidRequestContent", "properties.commitment needs grain Hourly, currencyCode USD and a positive amount.");
    const scope = requireScope(props, () => props.appliedScopeProperties?.subscriptionId ?? null);
    return { term, billingPlan: (props.billingPlan === "P1M" ? "Monthly" : "Upfront") as "Upfront" | "Monthly", amount: c.amount as number, scope };
  };

  const createAlias = (kind: "reservation" | "savings_plan", name: string, body: any, failure: AzureFailure | null): { status: number; alias: Alias } => {
    if (!/^[a-zA-Z0-9_\-.]+$/.test(name)) throw new ArmError(400, "InvalidAliasName", `The alias name '${name}' is not valid.`);
    const key = `${kind}|${name.toLowerCase()}`;
    const existing = aliases.get(key);
    if (existing) {
      advance(existing.operation);
      return { status: 200, alias: existing };
    }
    const props = body?.properties ?? {};
    const createdAt = now();
    let order: Omit<AzureOrder, "orderId" | "orderGuid" | "itemId" | "expiresAt">;
    if (kind === "reservation") {
      const sku = body?.sku?.name;
      const location = body?.location;
      if (typeof sku !== "string" || typeof location !== "string") throw new ArmError(400, "InvalidRequestContent", "sku.name and location are required.");
      if (props.reservedResourceType !== "VirtualMachines") throw new ArmError(400, "InvalidRequestContent", `Reserved resource type '${String(props.reservedResourceType)}' is not offered by this stand-in.`);
      if (typeof props.billingScopeId !== "string" || !props.billingScopeId) throw new ArmError(400, "InvalidRequestContent", "properties.billingScopeId is required.");
      const term = requireTerm(props.term);
      if (props.billingPlan !== undefined && props.billingPlan !== "P1M") throw new ArmError(400, "InvalidRequestContent", `The billing plan '${String(props.billingPlan)}' is not valid; use P1M or none (upfront).`);
      if (!Number.isInteger(props.quantity) || props.quantity < 1) throw new ArmError(400, "InvalidRequestContent", "properties.quantity must be a positive whole number.");
      const scope = requireScope(props, () => props.appliedScopeProperties?.subscriptionId ?? null);
      const price = priceOf(sku, location, term);
      order = {
        kind,
        aliasName: name,
        sku,
        location,
        term,
        billingPlan: props.billingPlan === "P1M" ? "Monthly" : "Upfront",
        quantity: props.quantity,
        commitment: null,
        billingScopeId: props.billingScopeId,
        appliedScopeType: scope.type,
        appliedScopeSubscription: scope.subscription,
        displayName: props.displayName ?? name,
        instanceFlexibility: props.reservedResourceProperties?.instanceFlexibility ?? null,
        renew: props.renew === true,
        total: round2(price.upfront * props.quantity),
        provisioningState: "Creating",
        createdAt,
      };
    } else {
      const sp = checkSavingsPlan(body);
      order = {
        kind,
        aliasName: name,
        sku: SAVINGS_PLAN_SKU,
        location: null,
        term: sp.term,
        billingPlan: sp.billingPlan,
        quantity: 1,
        commitment: sp.amount,
        billingScopeId: props.billingScopeId,
        appliedScopeType: sp.scope.type,
        appliedScopeSubscription: sp.scope.subscription,
        displayName: props.displayName ?? name,
        instanceFlexibility: null,
        renew: props.renew === true,
        total: round2(sp.amount * HOURS_PER_YEAR * YEARS[sp.term]!),
        provisioningState: "Creating",
        createdAt,
      };
    }
    const operation: Operation = {
      id: randomUUID(),
      kind,
      aliasKey: key,
      pollsLeft: options.pollsBeforeDone ?? 0,
      failure: failure && "lroFailure" in failure ? failure.lroFailure : null,
      status: "Running",
      startTime: createdAt,
      endTime: null,
    };
    operations.set(operation.id, operation);
    let bought: AzureOrder | null = null;
    if (!operation.failure) {
      const orderGuid = randomUUID();
      const itemGuid = randomUUID();
      bought =
        kind === "reservation"
          ? { ...order, orderGuid, orderId: `/providers/Microsoft.Capacity/reservationOrders/${orderGuid}`, itemId: `/providers/microsoft.capacity/reservationOrders/${orderGuid}/reservations/${itemGuid}`, expiresAt: addMonths(createdAt, 12 * YEARS[order.term]!) }
          : { ...order, orderGuid, orderId: `/providers/Microsoft.BillingBenefits/savingsPlanOrders/${orderGuid}`, itemId: `/providers/Microsoft.BillingBenefits/savingsPlanOrders/${orderGuid}/savingsPlans/${itemGuid}`, expiresAt: addMonths(createdAt, 12 * YEARS[order.term]!) };
      orders.push(bought);
    }
    const alias: Alias = { kind, name, request: { sku: body.sku, location: body.location, properties: { ...props } }, provisioningState: "Created", order: bought, operation };
    aliases.set(key, alias);
    return { status: 201, alias };
  };

  const findOrder = (ref: string): AzureOrder | undefined => {
    const r = ref.toLowerCase();
    return orders.find((o) => o.orderId.toLowerCase() === r || o.orderGuid.toLowerCase() === r || o.aliasName.toLowerCase() === r);
  };

  const page = <T>(items: T[], query: Record<string, string>, path: string) => {
    const skip = Number(query.$skiptoken ?? 0) || 0;
    const value = items.slice(skip, skip + pageSize);
    const next = skip + pageSize < items.length ? `${base}${path}?api-version=${ARM_API_VERSION}&$skiptoken=${skip + pageSize}` : undefined;
    return { value, ...(next ? { nextLink: next } : {}) };
  };

  const openidConfiguration = (tenant: string) => ({
    token_endpoint: `${base}/${tenant}/oauth2/v2.0/token`,
    token_endpoint_auth_methods_supported: ["client_secret_post", "private_key_jwt", "client_secret_basic"],
    jwks_uri: `${base}/${tenant}/discovery/v2.0/keys`,
    response_modes_supported: ["query", "fragment", "form_post"],
    subject_types_supported: ["pairwise"],
    id_token_signing_alg_values_supported: ["RS256"],
    response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
    scopes_supported: ["openid", "profile", "email", "offline_access"],
    issuer: `${base}/${tenant}/v2.0`,
    request_uri_parameter_supported: false,
    userinfo_endpoint: `${base}/oidc/userinfo`,
    authorization_endpoint: `${base}/${tenant}/oauth2/v2.0/authorize`,
    device_authorization_endpoint: `${base}/${tenant}/oauth2/v2.0/devicecode`,
    http_logout_supported: true,
    frontchannel_logout_supported: true,
    end_session_endpoint: `${base}/${tenant}/oauth2/v2.0/logout`,
    claims_supported: ["sub", "iss", "aud", "exp", "iat", "tid"],
    tenant_region_scope: "NA",
    cloud_instance_name: "127.0.0.1",
  });

  const entraError = (status: number, error: string, aadsts: number, description: string) => ({
    status,
    body: {
      error,
      error_description: `AADSTS${aadsts}: ${description} Trace ID: ${randomUUID()} Correlation ID: ${randomUUID()} Timestamp: ${now().toISOString()}`,
      error_codes: [aadsts],
      timestamp: now().toISOString(),
      trace_id: randomUUID(),
      correlation_id: randomUUID(),
      error_uri: `${base}/error?code=${aadsts}`,
    },
  });

  const handleToken = (tenant: string, form: URLSearchParams): { status: number; body: unknown } => {
    if (tenant.toLowerCase() !== tenantId.toLowerCase()) return entraError(400, "invalid_request", 90002, `Tenant '${tenant}' not found.`);
    if (form.get("grant_type") !== "client_credentials") return entraError(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.");
    if (form.get("client_id") !== clientId) return entraError(400, "unauthorized_client", 700016, `Application with identifier '${form.get("client_id")}' was not found in the directory '${tenant}'.`);
    if (form.get("client_secret") !== clientSecret) return entraError(401, "invalid_client", 7000215, `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`);
    const scope = form.get("scope") ?? "";
    if (!scope.split(" ").some((s) => s.endsWith("/.default"))) return entraError(400, "invalid_scope", 1002012, `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier.`);
    const accessToken = `eyJ0eXAi.${randomBytes(32).toString("base64url")}`;
    issuedTokens.set(accessToken, { scope });
    return { status: 200, body: { token_type: "Bearer", expires_in: 3599, ext_expires_in: 3599, access_token: accessToken } };
  };

  /** The ARM operation a request is, with our name or order id in its path. */
  const route = (method: string, path: string): { operation: AzureOperation; aliasName: string | null; orderId: string | null; arm: boolean } => {
    const p = path.toLowerCase();
    const none = { aliasName: null, orderId: null, arm: true };
    const tail = (prefix: string) => (p.startsWith(prefix) && !path.slice(prefix.length).includes("/") ? path.slice(prefix.length) : null);
    if (method === "POST" && p === "/providers/microsoft.capacity/calculateprice") return { operation: "calculatePrice", ...none };
    if (method === "GET" && p === "/providers/microsoft.capacity/reservationorders") return { operation: "reservationOrder.list", ...none };
    if (method === "GET" && p === "/providers/microsoft.capacity/reservations") return { operation: "reservation.listAll", ...none };
    if (method === "GET" && p === "/providers/microsoft.billingbenefits/savingsplans") return { operation: "savingsPlan.listAll", ...none };
    if (method === "POST" && p === "/providers/microsoft.billingbenefits/validate") return { operation: "validatePurchase", ...none };
    let name = tail("/providers/microsoft.capacity/reservationorders/");
    if (method === "GET" && name) return { operation: "reservationOrder.get", aliasName: null, orderId: name, arm: true };
    name = tail("/providers/microsoft.billingbenefits/savingsplanorders/");
    if (method === "GET" && name) return { operation: "savingsPlanOrder.get", aliasName: null, orderId: name, arm: true };
    name = tail("/providers/microsoft.billingbenefits/reservationorderaliases/");
    if (name && (method === "PUT" || method === "GET")) return { operation: method === "PUT" ? "reservationOrderAlias.create" : "reservationOrderAlias.get", aliasName: name, orderId: null, arm: true };
    name = tail("/providers/microsoft.billingbenefits/savingsplanorderaliases/");
    if (name && (method === "PUT" || method === "GET")) return { operation: method === "PUT" ? "savingsPlanOrderAlias.create" : "savingsPlanOrderAlias.get", aliasName: name, orderId: null, arm: true };
    name = tail("/providers/microsoft.billingbenefits/operationresults/");
    if (method === "GET" && name) return { operation: "operationStatus", aliasName: null, orderId: name, arm: true };
    return { operation: "unknown", ...none };
  };

  const asyncHeader = (op: Operation) => ({ "Azure-AsyncOperation": `${base}/providers/Microsoft.BillingBenefits/operationResults/${op.id}?api-version=${ARM_API_VERSION}` });

  const handleArm = (operation: AzureOperation, aliasName: string | null, orderId: string | null, query: Record<string, string>, body: any, failure: AzureFailure | null, path: string): { status: number; body: unknown; headers?: Record<string, string> } => {
    const expandPlan = (query.$expand ?? "").toLowerCase().includes("planinformation");
    switch (operation) {
      case "calculatePrice": {
        const q = priceCapacityRequest(body);
        const start = now();
        const total = q.total;
        return {
          status: 200,
          body: {
            properties: {
              billingCurrencyTotal: { currencyCode: "USD", amount: total },
              netTotal: total,
              taxTotal: 0,
              grandTotal: total,
              isTaxIncluded: false,
              isBillingPartnerManaged: false,
              reservationOrderId: randomUUID(),
              skuTitle: `Reserved VM Instance, ${q.sku}, ${q.location}, ${YEARS[q.term]} Year${YEARS[q.term] === 1 ? "" : "s"}`,
              skuDescription: q.sku,
              pricingCurrencyTotal: { currencyCode: "USD", amount: total },
              paymentSchedule: paymentSchedule(total, q.billingPlan, q.term, start, "Scheduled"),
            },
          },
        };
      }
      case "reservationOrderAlias.create":
      case "savingsPlanOrderAlias.create": {
        const { status, alias } = createAlias(operation === "reservationOrderAlias.create" ? "reservation" : "savings_plan", aliasName!, body, failure);
        const headers = alias.operation.status === "Running" || status === 201 ? asyncHeader(alias.operation) : undefined;
        return { status, body: aliasJson(alias), headers };
      }
      case "reservationOrderAlias.get":
      case "savingsPlanOrderAlias.get": {
        const alias = aliases.get(`${operation === "reservationOrderAlias.get" ? "reservation" : "savings_plan"}|${aliasName!.toLowerCase()}`);
        if (!alias) throw new ArmError(404, "ResourceNotFound", `The alias '${aliasName}' was not found.`);
        advance(alias.operation);
        return { status: 200, body: aliasJson(alias) };
      }
      case "operationStatus": {
        const op = operations.get(orderId!);
        if (!op) throw new ArmError(404, "OperationNotFound", `The operation '${orderId}' was not found.`);
        advance(op);
        return {
          status: 200,
          body: {
            id: `/providers/Microsoft.BillingBenefits/operationResults/${op.id}`,
            name: op.id,
            status: op.status,
            startTime: op.startTime.toISOString(),
            ...(op.endTime ? { endTime: op.endTime.toISOString() } : {}),
            ...(op.status === "Failed" && op.failure ? { error: op.failure } : {}),
          },
        };
      }
      case "reservationOrder.get": {
        const o = orders.find((x) => x.kind === "reservation" && x.orderGuid.toLowerCase() === orderId!.toLowerCase());
        if (!o) throw new ArmError(404, "ReservationOrderNotFound", `Reservation order '${orderId}' was not found.`);
        return { status: 200, body: reservationOrderJson(o, expandPlan) };
      }
      case "reservationOrder.list":
        return { status: 200, body: page(orders.filter((o) => o.kind === "reservation").map((o) => reservationOrderJson(o, false)), query, path) };
      case "reservation.listAll": {
        const items = orders.filter((o) => o.kind === "reservation");
        const count = (states: string[]) => items.filter((o) => states.includes(o.provisioningState)).length;
        return {
          status: 200,
          body: {
            ...page(items.map(reservationJson), query, path),
            summary: { succeededCount: count(["Succeeded"]), failedCount: count(["Failed"]), expiringCount: 0, expiredCount: count(["Expired"]), pendingCount: count(["Creating"]), cancelledCount: count(["Cancelled"]) },
          },
        };
      }
      case "savingsPlanOrder.get": {
        const o = orders.find((x) => x.kind === "savings_plan" && x.orderGuid.toLowerCase() === orderId!.toLowerCase());
        if (!o) throw new ArmError(404, "ResourceNotFound", `Savings plan order '${orderId}' was not found.`);
        return { status: 200, body: savingsPlanOrderJson(o, expandPlan) };
      }
      case "savingsPlan.listAll": {
        const items = orders.filter((o) => o.kind === "savings_plan");
        return { status: 200, body: { ...page(items.map(savingsPlanJson), query, path), additionalProperties: [{ name: "summary", value: { succeededCount: items.filter((o) => o.provisioningState === "Succeeded").length } }] } };
      }
      case "validatePurchase": {
        const benefits: unknown[] = Array.isArray(body?.benefits) ? body.benefits : [];
        if (!benefits.length) throw new ArmError(400, "InvalidRequestContent", "benefits is required.");
        const invalid = failure && "invalid" in failure ? failure.invalid : null;
        return {
          status: 200,
          body: {
            benefits: benefits.map((b) => {
              if (invalid) return { valid: false, reasonCode: invalid.reasonCode, reason: invalid.reason };
              try {
                checkSavingsPlan(b);
                return { valid: true };
              } catch (e) {
                const err = e as ArmError;
                return { valid: false, reasonCode: err.code, reason: err.message };
              }
            }),
          },
        };
      }
      default:
        throw new ArmError(404, "InvalidResourceType", `The resource type could not be found for path '${path}'.`);
    }
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = body === undefined ? "" : JSON.stringify(body);
    res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "x-ms-request-id": randomUUID(), ...headers });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const u = new URL(req.url ?? "/", base);
    const path = u.pathname;
    const method = (req.method ?? "GET").toUpperCase();
    const query = Object.fromEntries(u.searchParams);
    const auth = req.headers.authorization ?? "";
    const bearer = /^Bearer\s+\S+/i.test(auth);
    const rec = (operation: AzureOperation, status: number, body: unknown, aliasName: string | null = null, orderId: string | null = null) =>
      record({ operation, method, path, apiVersion: query["api-version"] ?? null, query, body, bearer, aliasName, orderId, status });

    const openid = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/i.exec(path);
    if (method === "GET" && openid) {
      const tenant = openid[1]!;
      const known = tenant.toLowerCase() === tenantId.toLowerCase() || ["common", "organizations"].includes(tenant.toLowerCase());
      const status = known ? 200 : 400;
      rec("openidConfiguration", status, null);
      if (!known) return send(res, status, entraError(400, "invalid_tenant", 90002, `Tenant '${tenant}' not found.`).body);
      return send(res, 200, openidConfiguration(tenant));
    }
    if (method === "GET" && /^\/common\/discovery\/instance$/i.test(path)) {
      rec("instanceDiscovery", 200, null);
      const host = new URL(base).host;
      return send(res, 200, {
        tenant_discovery_endpoint: `${base}/${tenantId}/v2.0/.well-known/openid-configuration`,
        "api-version": "1.1",
        metadata: [{ preferred_network: host, preferred_cache: host, aliases: [host] }],
      });
    }
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/i.exec(path);
    if (method === "POST" && token) {
      const form = new URLSearchParams(raw);
      const shown = Object.fromEntries([...form].filter(([k]) => k !== "client_secret" && k !== "client_assertion"));
      const failure = takeFailure("token");
      if (failure && "network" in failure) {
        rec("token", 0, shown);
        req.socket.destroy();
        return;
      }
      if (failure && "status" in failure) {
        rec("token", failure.status, shown);
        return send(res, failure.status, entraError(failure.status, failure.code, 50000, failure.message).body);
      }
      const out = handleToken(token[1]!, form);
      rec("token", out.status, shown);
      return send(res, out.status, out.body, out.status === 200 ? { "Cache-Control": "no-store, no-cache", Pragma: "no-cache" } : {});
    }

    const { operation, aliasName, orderId } = route(method, path);
    let body: unknown = null;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        rec(operation, 400, raw, aliasName, orderId);
        return send(res, 400, { error: { code: "InvalidRequestContent", message: "The request content was invalid and could not be deserialized." } });
      }
    }
    const accessToken = auth.replace(/^Bearer\s+/i, "");
    const issued = bearer ? issuedTokens.get(accessToken) : undefined;
    if (!issued || !issued.scope.split(" ").includes(`${base}/.default`)) {
      const [code, message] = !bearer
        ? ["AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing."]
        : issued
          ? ["InvalidAuthenticationTokenAudience", "The access token has been obtained for wrong audience or resource."]
          : ["InvalidAuthenticationToken", "The access token is invalid."];
      rec(operation, 401, body, aliasName, orderId);
      return send(res, 401, { error: { code, message } }, { "WWW-Authenticate": `Bearer authorization_uri="${base}/${tenantId}", error="invalid_token", error_description="${message}"` });
    }
    if (operation !== "operationStatus" && operation !== "unknown" && query["api-version"] !== ARM_API_VERSION) {
      rec(operation, 400, body, aliasName, orderId);
      const v = query["api-version"];
      return send(res, 400, v ? { error: { code: "InvalidApiVersionParameter", message: `The api-version '${v}' is invalid. The supported versions are '${ARM_API_VERSION}'.` } } : { error: { code: "MissingApiVersionParameter", message: "The api-version query parameter (?api-version=) is required for all requests." } });
    }
    const failure = takeFailure(operation);
    if (failure && "network" in failure) {
      rec(operation, 0, body, aliasName, orderId);
      req.socket.destroy();
      return;
    }
    if (failure && "status" in failure) {
      rec(operation, failure.status, body, aliasName, orderId);
      return send(res, failure.status, { error: { code: failure.code, message: failure.message } }, failure.status === 429 ? { "Retry-After": "0" } : {});
    }
    try {
      const out = handleArm(operation, aliasName, orderId, query, body, failure, path);
      rec(operation, out.status, body, aliasName, orderId);
      return send(res, out.status, out.body, out.headers);
    } catch (e) {
      if (!(e instanceof ArmError)) throw e;
      rec(operation, e.status, body, aliasName, orderId);
      return send(res, e.status, { error: { code: e.code, message: e.message } });
    }
  };

  const server: Server = createServer({ key: TEST_KEY, cert: TEST_CERT }, (req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) send(res, 500, { error: { code: "InternalServerError", message: String((e as Error)?.message ?? e) } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    authorityHost: base,
    tenantId,
    clientId,
    clientSecret,
    certificate: TEST_CERT,
    childEnv: { NODE_EXTRA_CA_CERTS: caFile },
    orders,
    requests,
    setPrice,
    failNext(operation, failure, times = 1) {
      failures.set(operation, { failure, times });
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
    },
    setOrderState(ref, state) {
      const o = findOrder(ref);
      if (!o) throw new Error(`no order ${ref}`);
      o.provisioningState = state;
    },
    waitForRequest(operation, timeoutMs = 30_000) {
      const seen = requests.find((r) => r.operation === operation);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${operation} request within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          operation,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r);
          },
        });
      });
    },
    reset() {
      orders.length = 0;
      requests.length = 0;
      aliases.clear();
      operations.clear();
      failures.clear();
      held = false;
      resetPrices();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(caFile, { force: true });
    },
  };
}
