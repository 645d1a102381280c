/**
 * Azure purchasing (DESIGN §14) on the official ARM SDKs.
 *
 * Reservations are priced with Microsoft.Capacity calculatePrice and bought through a
 * Microsoft.BillingBenefits reservation order alias named `commitops-<token>`; savings plans are
 * checked with Microsoft.BillingBenefits validate and bought through a savings plan order alias
 * of the same name. An alias is a caller-named PUT: repeating it buys nothing more, and reading it
 * back finds the purchase after a crash. (Microsoft.Capacity's own PUT reservationOrders/{id}
 * only takes the order id that a fresh calculatePrice handed out, so it cannot carry our token.)
 */
import { AzureReservationAPI, type CalculatePriceResponse, type PurchaseRequest, type ReservationOrderResponse, type ReservationResponse } from "@azure/arm-reservations";
import { BillingBenefitsRP, type ReservationOrderAliasRequest, type ReservationOrderAliasResponse, type SavingsPlanModel, type SavingsPlanOrderAliasModel } from "@azure/arm-billingbenefits";
import { ClientSecretCredential, DefaultAzureCredential, type TokenCredential } from "@azure/identity";
import { cents, HOURS_PER_MONTH, spendCommitmentPayments } from "../../pricing/index.ts";
import type { AzurePurchasingConfig, AzurePurchasingSecrets } from "./settings.ts";
import {
  PurchaseFailure,
  providerTerm,
  PRICE_TOLERANCE,
  refuseAbovePlan,
  YEAR_SECONDS,
  type OfferQuote,
  type ProviderCommitment,
  type ProviderPurchaser,
  type PurchaseItemSpec,
  type PurchaseOutcome,
} from "./types.ts";

const DEFAULT_ARM_ENDPOINT = "https://management.azure.com";
const SAVINGS_PLAN_SKU = "Compute_Savings_Plan";
/** A hung ARM call must fail (and be retried on a later tick), not hold the purchase job forever. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Entra ID hosts that answer instance discovery; any other authority (sovereign proxy, test) must not be asked. */
const MICROSOFT_AUTHORITIES = new Set([
  "login.microsoftonline.com",
  "login.microsoft.com",
  "login.windows.net",
  "sts.windows.net",
  "login.microsoftonline.us",
  "login.usgovcloudapi.net",
  "login.chinacloudapi.cn",
  "login.partner.microsoftonline.cn",
  "login.microsoftonline.de",
]);

/** How an item is bought at Azure. */
interface AzureBuy {
  kind: "reservation" | "savings_plan";
  term: "P1Y" | "P3Y";
  years: 1 | 3;
  seconds: number;
  upfront: boolean;
  aliasName: string;
  displayName: string;
  /** `/subscriptions/{id}` of a Single applied scope; null when the benefit is shared. */
  appliedSubscription: string | null;
}

export interface AzurePurchaserOptions {
  now?: () => Date;
  /** Wait between status polls of a purchase when ARM sends no Retry-After (the SDK's default otherwise). */
  pollIntervalMs?: number;
}

export function azurePurchaser(config: AzurePurchasingConfig, secrets: AzurePurchasingSecrets, opts: AzurePurchaserOptions = {}): ProviderPurchaser {
  const now = opts.now ?? (() => new Date());
  const endpoint = (config.endpoint_url?.trim() || DEFAULT_ARM_ENDPOINT).replace(/\/+$/, "");
  let clients: { capacity: AzureReservationAPI; benefits: BillingBenefitsRP } | null = null;
  const client = () => {
    if (!clients) {
      const credential = credentialOf(config, secrets);
      // Purchases are idempotent PUTs and prices are reads, so a quick SDK retry is safe; a longer outage is the next tick's.
      const options = { endpoint, $host: endpoint, retryOptions: { maxRetries: 2, retryDelayInMs: 500, maxRetryDelayInMs: 4000 }, userAgentOptions: { userAgentPrefix: "commitops" } };
      clients = { capacity: new AzureReservationAPI(credential, options), benefits: new BillingBenefitsRP(credential, options) };
    }
    return clients;
  };
  const fail = (e: unknown, action: string, phase: "quote" | "buy" | "read") => failureOf(e, action, phase, config.tenant_id);
  const call = { requestOptions: { timeout: REQUEST_TIMEOUT_MS } };
  const lro = { ...call, ...(opts.pollIntervalMs !== undefined ? { updateIntervalInMs: opts.pollIntervalMs } : {}) };

  const appliedSubscription = normalizeSubscription(config.applied_scope_subscription_id);

  const reservationPriceRequest = (item: PurchaseItemSpec, b: AzureBuy): PurchaseRequest => ({
    sku: { name: item.instanceType! },
    location: item.region!,
    reservedResourceType: "VirtualMachines",
    billingScopeId: config.billing_scope_id,
    term: b.term,
    billingPlan: b.upfront ? "Upfront" : "Monthly",
    quantity: item.amount,
    displayName: b.displayName,
    appliedScopeType: b.appliedSubscription ? "Single" : "Shared",
    ...(b.appliedSubscription ? { appliedScopes: [b.appliedSubscription] } : {}),
    renew: false,
    reservedResourceProperties: { instanceFlexibility: "On" },
  });

  const reservationAliasRequest = (item: PurchaseItemSpec, b: AzureBuy): ReservationOrderAliasRequest => ({
    sku: { name: item.instanceType! },
    location: item.region!,
    displayName: b.displayName,
    billingScopeId: config.billing_scope_id,
    term: b.term,
    // The alias API names billing plans in ISO 8601 and takes none for upfront.
    ...(b.upfront ? {} : { billingPlan: "P1M" }),
    appliedScopeType: b.appliedSubscription ? "Single" : "Shared",
    ...(b.appliedSubscription ? { appliedScopeProperties: { subscriptionId: b.appliedSubscription } } : {}),
    quantity: item.amount,
    renew: false,
    reservedResourceType: "VirtualMachines",
    reservedResourceProperties: { instanceFlexibility: "On" },
  });

  const savingsPlanRequest = (item: PurchaseItemSpec, b: AzureBuy): SavingsPlanOrderAliasModel => ({
    sku: { name: SAVINGS_PLAN_SKU },
    displayName: b.displayName,
    billingScopeId: config.billing_scope_id,
    term: b.term,
    ...(b.upfront ? {} : { billingPlan: "P1M" }),
    appliedScopeType: b.appliedSubscription ? "Single" : "Shared",
    ...(b.appliedSubscription ? { appliedScopeProperties: { subscriptionId: b.appliedSubscription } } : {}),
    commitment: { grain: "Hourly", currencyCode: "USD", amount: hourlyCommitment(item.amount) },
  });

  const describe = (item: PurchaseItemSpec, b: AzureBuy) =>
    b.kind === "reservation"
      ? `${item.amount} × ${item.instanceType} reserved in ${item.region} for ${b.term} ${b.upfront ? "Upfront" : "Monthly"}`
      : `a ${SAVINGS_PLAN_SKU} of ${hourlyCommitment(item.amount)} USD/hour for ${b.term} ${b.upfront ? "upfront" : "monthly (P1M)"}`;

  const priceReservation = async (item: PurchaseItemSpec, b: AzureBuy): Promise<{ quote: OfferQuote; skuTitle: string | null }> => {
    let res: CalculatePriceResponse;
    try {
      res = await client().capacity.reservationOrder.calculate(reservationPriceRequest(item, b), call);
    } catch (e) {
      throw fail(e, `price ${describe(item, b)}`, "quote");
    }
    const p = res.properties;
    const total = p?.pricingCurrencyTotal?.amount ?? p?.grandTotal ?? p?.billingCurrencyTotal?.amount;
    const currency = p?.pricingCurrencyTotal?.currencyCode ?? p?.billingCurrencyTotal?.currencyCode ?? "USD";
    if (typeof total !== "number" || !Number.isFinite(total)) throw new PurchaseFailure("no_offering", `Azure calculatePrice gave no price for ${describe(item, b)}.`);
    if (currency !== "USD") throw new PurchaseFailure("unsupported", `Azure prices ${describe(item, b)} in ${currency}; commitops plans and limits purchases in USD, so buy it in the Azure portal.`);
    const offeringId = `${item.instanceType}/${item.region}/${b.term}/${b.upfront ? "Upfront" : "Monthly"}`;
    const base = { offeringId, currency, durationSeconds: b.seconds };
    const quote = b.upfront ? { ...base, upfront: total, hourly: 0 } : { ...base, upfront: 0, hourly: monthlyPayment(total, p?.paymentSchedule ?? [], b.years) / HOURS_PER_MONTH };
    return { quote, skuTitle: p?.skuTitle ?? null };
  };

  const quoteOf = async (item: PurchaseItemSpec, b: AzureBuy): Promise<OfferQuote> => {
    if (b.kind === "reservation") return (await priceReservation(item, b)).quote;
    // The billing benefits API has no price calculation: a savings plan costs its commitment.
    const amount = hourlyCommitment(item.amount);
    const offeringId = `${SAVINGS_PLAN_SKU}/${b.term}/${b.upfront ? "Upfront" : "P1M"}`;
    const base = { offeringId, currency: "USD", durationSeconds: b.seconds };
    return { ...base, ...spendCommitmentPayments(amount, b.seconds, b.upfront ? "all_upfront" : "no_upfront") };
  };

  const validateSavingsPlan = async (item: PurchaseItemSpec, b: AzureBuy): Promise<void> => {
    let res;
    try {
      res = await client().benefits.validatePurchase({ benefits: [savingsPlanRequest(item, b)] }, call);
    } catch (e) {
      throw fail(e, `validate ${describe(item, b)}`, "quote");
    }
    // The published example nests the verdicts one level deeper than the schema; take either.
    const verdicts = (res.benefits ?? []).flatMap((v) => ((v as { benefits?: typeof res.benefits }).benefits ?? [v]));
    const refused = verdicts.find((v) => v.valid === false);
    if (refused) throw validationFailure(refused.reasonCode, refused.reason, describe(item, b));
    if (!verdicts.length) throw new PurchaseFailure("refused", `Azure validate gave no verdict for ${describe(item, b)}.`);
  };

  const reservationOutcome = async (alias: ReservationOrderAliasResponse, fallback: { upfront: number; hourly: number; currency: string }, years: number): Promise<PurchaseOutcome> => {
    const orderGuid = guidOf(alias.reservationOrderId);
    let order: ReservationOrderResponse | null = null;
    if (orderGuid) {
      // The alias is the purchase; the order only adds its dates and what Azure charged.
      order = await client()
        .capacity.reservationOrder.get(orderGuid, { ...call, expand: "planInformation" })
        .catch(() => null);
    }
    const charged = order ? chargedOf(order.billingPlan, order.planInformation?.pricingCurrencyTotal, order.planInformation?.transactions, years) : null;
    return {
      providerPurchaseId: orderGuid ? reservationOrderId(orderGuid) : alias.id!,
      upfront: charged?.upfront ?? fallback.upfront,
      hourly: charged?.hourly ?? fallback.hourly,
      currency: charged?.currency ?? fallback.currency,
      startsAt: order?.benefitStartTime ?? order?.createdDateTime ?? null,
      endsAt: order?.expiryDateTime ?? order?.expiryDate ?? null,
      providerState: alias.provisioningState ?? order?.provisioningState ?? "Unknown",
    };
  };

  const savingsPlanOutcome = async (alias: SavingsPlanOrderAliasModel, years: number): Promise<PurchaseOutcome> => {
    const orderGuid = guidOf(alias.savingsPlanOrderId);
    const order = orderGuid
      ? await client()
          .benefits.savingsPlanOrder.get(orderGuid, call)
          .catch(() => null)
      : null;
    const paid = spendCommitmentPayments(alias.commitment?.amount ?? 0, years * YEAR_SECONDS, alias.billingPlan !== "P1M" ? "all_upfront" : "no_upfront");
    return {
      providerPurchaseId: orderGuid ? savingsPlanOrderId(orderGuid) : alias.id!,
      upfront: paid.upfront,
      hourly: paid.hourly,
      currency: alias.commitment?.currencyCode ?? "USD",
      startsAt: order?.benefitStartTime ?? null,
      endsAt: order?.expiryDateTime ?? null,
      providerState: alias.provisioningState ?? order?.provisioningState ?? "Unknown",
    };
  };

  const checkPrice = (item: PurchaseItemSpec, b: AzureBuy, fresh: OfferQuote, quoted?: OfferQuote) => {
    refuseAbovePlan(item, fresh.upfront, describe(item, b));
    if (!quoted) return;
    if (fresh.upfront > quoted.upfront + PRICE_TOLERANCE) {
      throw new PurchaseFailure("price_changed", `Azure now asks ${money(fresh.upfront)} USD upfront for ${describe(item, b)}, above the ${money(quoted.upfront)} USD quoted.`);
    }
    if ((fresh.hourly - quoted.hourly) * HOURS_PER_MONTH > PRICE_TOLERANCE) {
      throw new PurchaseFailure("price_changed", `Azure now asks ${money(fresh.hourly * HOURS_PER_MONTH)} USD a month for ${describe(item, b)}, above the ${money(quoted.hourly * HOURS_PER_MONTH)} USD quoted.`);
    }
  };

  return {
    kind: "azure_purchasing",

    async quote(item) {
      const b = buyOf(item, appliedSubscription);
      const quote = await quoteOf(item, b);
      checkPrice(item, b, quote);
      return quote;
    },

    async dryRun(item, quoted) {
      const b = buyOf(item, appliedSubscription);
      if (b.kind === "reservation") {
        const { quote: fresh, skuTitle } = await priceReservation(item, b);
        checkPrice(item, b, fresh, quoted);
        const price = b.upfront ? `${money(fresh.upfront)} ${fresh.currency} upfront` : `${money(fresh.hourly * HOURS_PER_MONTH)} ${fresh.currency} a month`;
        return { summary: `Azure calculatePrice: ${describe(item, b)}${skuTitle ? ` (${skuTitle})` : ""} costs ${price}; nothing was bought.` };
      }
      await validateSavingsPlan(item, b);
      const q = await quoteOf(item, b);
      checkPrice(item, b, q, quoted);
      return { summary: `Azure validate accepted ${describe(item, b)}${b.upfront ? ` (${money(q.upfront)} USD upfront)` : ""}; nothing was bought.` };
    },

    async findExisting(item, claimedIds) {
      const b = buyOf(item, appliedSubscription);
      let outcome: PurchaseOutcome;
      if (b.kind === "reservation") {
        let alias: ReservationOrderAliasResponse;
        try {
          alias = await client().benefits.reservationOrderAlias.get(b.aliasName, call);
        } catch (e) {
          if (statusOf(e) === 404) return null;
          throw fail(e, `read reservation order alias ${b.aliasName}`, "read");
        }
        refuseFailedAlias(alias.provisioningState, b.aliasName);
        // Without the order's payment plan (rare), the plan's own figures stand in for what was charged.
        outcome = await reservationOutcome(alias, { upfront: b.upfront ? item.maxUpfront : 0, hourly: b.upfront ? 0 : item.plannedHourly, currency: "USD" }, b.years);
      } else {
        let alias: SavingsPlanOrderAliasModel;
        try {
          alias = await client().benefits.savingsPlanOrderAlias.get(b.aliasName, call);
        } catch (e) {
          if (statusOf(e) === 404) return null;
          throw fail(e, `read savings plan order alias ${b.aliasName}`, "read");
        }
        refuseFailedAlias(alias.provisioningState, b.aliasName);
        outcome = await savingsPlanOutcome(alias, b.years);
      }
      return claimedIds.has(outcome.providerPurchaseId) ? null : outcome;
    },

    async buy(item, quoted) {
      const b = buyOf(item, appliedSubscription);
      if (b.kind === "reservation") {
        const fresh = await quoteOf(item, b);
        checkPrice(item, b, fresh, quoted);
        let alias: ReservationOrderAliasResponse;
        try {
          alias = await client().benefits.reservationOrderAlias.beginCreateAndWait(b.aliasName, reservationAliasRequest(item, b), lro);
        } catch (e) {
          throw fail(e, `buy ${describe(item, b)}`, "buy");
        }
        refuseFailedAlias(alias.provisioningState, b.aliasName);
        return reservationOutcome(alias, fresh, b.years);
      }
      const fresh = await quoteOf(item, b);
      checkPrice(item, b, fresh, quoted);
      let alias: SavingsPlanOrderAliasModel;
      try {
        alias = await client().benefits.savingsPlanOrderAlias.beginCreateAndWait(b.aliasName, savingsPlanRequest(item, b), lro);
      } catch (e) {
        throw fail(e, `buy ${describe(item, b)}`, "buy");
      }
      refuseFailedAlias(alias.provisioningState, b.aliasName);
      return savingsPlanOutcome(alias, b.years);
    },

    async listCommitments(_regions) {
      // Reservations and savings plans are listed tenant-wide, whatever the region.
      const { capacity, benefits } = client();
      const out: ProviderCommitment[] = [];
      const reservations: ReservationResponse[] = [];
      try {
        for await (const r of capacity.reservation.listAll(call)) reservations.push(r);
      } catch (e) {
        throw fail(e, "list reservations", "read");
      }
      const orderGuids = [...new Set(reservations.map((r) => guidOf(r.id, "reservationOrders")).filter((g): g is string => !!g))];
      const orders = new Map<string, ReservationOrderResponse>();
      await mapLimit(orderGuids, 4, async (guid) => {
        try {
          orders.set(guid, await capacity.reservationOrder.get(guid, { ...call, expand: "planInformation" }));
        } catch (e) {
          if (statusOf(e) !== 404) throw fail(e, `read reservation order ${guid}`, "read");
        }
      });
      for (const r of reservations) {
        const p = r.properties ?? {};
        const orderGuid = guidOf(r.id, "reservationOrders");
        const order = orderGuid ? orders.get(orderGuid) : undefined;
        const years = yearsOf(p.term ?? order?.term);
        const charged = order && years ? chargedOf(order.billingPlan, order.planInformation?.pricingCurrencyTotal, order.planInformation?.transactions, years) : null;
        const quantity = p.quantity ?? 0;
        const share = order?.originalQuantity ? quantity / order.originalQuantity : 1;
        const endsAt = p.expiryDateTime ?? p.expiryDate ?? null;
        out.push({
          providerCommitmentId: canonicalReservationId(r.id!),
          commitmentType: "reservation",
          category: "Usage",
          contractTerm: termOf(p.term),
          paymentOption: paymentOf(p.billingPlan ?? order?.billingPlan),
          region: r.location ?? null,
          instanceType: r.sku?.name ?? null,
          instanceFamily: null,
          amount: quantity,
          upfrontCost: charged ? cents(charged.upfront * share) : 0,
          recurringHourlyCost: charged ? charged.hourly * share : 0,
          startsAt: p.benefitStartTime ?? p.effectiveDateTime ?? null,
          endsAt,
          state: stateOf(p.provisioningState, endsAt, now()),
          name: p.displayName ?? null,
        });
      }
      try {
        for await (const sp of benefits.savingsPlan.listAll(call)) out.push(commitmentOfSavingsPlan(sp, now()));
      } catch (e) {
        throw fail(e, "list savings plans", "read");
      }
      return out;
    },

    async check() {
      try {
        await client().capacity.reservationOrder.list(call).byPage().next();
      } catch (e) {
        throw fail(e, "list reservation orders", "read");
      }
    },
  };
}

function credentialOf(config: AzurePurchasingConfig, secrets: AzurePurchasingSecrets): TokenCredential {
  const authorityHost = config.authority_host?.trim().replace(/\/+$/, "") || undefined;
  let disableInstanceDiscovery = false;
  if (authorityHost) {
    let host: string;
    try {
      host = new URL(authorityHost).hostname.toLowerCase();
    } catch {
      throw new PurchaseFailure("credentials", "The Entra ID authority host is not a URL (expected https://login.microsoftonline.com).");
    }
    disableInstanceDiscovery = !MICROSOFT_AUTHORITIES.has(host);
  }
  const common = { authorityHost, disableInstanceDiscovery, retryOptions: { maxRetries: 2, retryDelayInMs: 500, maxRetryDelayInMs: 4000 } };
  if (secrets.client_secret) {
    if (!config.tenant_id || !config.client_id) throw new PurchaseFailure("credentials", "A service principal needs its tenant ID and client ID as well as its client secret.");
    return new ClientSecretCredential(config.tenant_id, config.client_id, secrets.client_secret, common);
  }
  return new DefaultAzureCredential({
    ...common,
    ...(config.tenant_id ? { tenantId: config.tenant_id } : {}),
    ...(config.client_id ? { managedIdentityClientId: config.client_id, workloadIdentityClientId: config.client_id } : {}),
  });
}

/** What the item is at Azure, or why Azure cannot sell it through this API. */
function buyOf(item: PurchaseItemSpec, appliedSubscription: string | null): AzureBuy {
  if (item.commitmentType !== "reservation" && item.commitmentType !== "savings_plan") {
    throw new PurchaseFailure("unsupported", `An Azure purchasing connection buys reservations and savings plans, not "${item.commitmentType}".`);
  }
  const { years, seconds, paymentOption: payment } = providerTerm(item);
  if (payment === "partial_upfront") {
    throw new PurchaseFailure("unsupported", "Azure bills reservations and savings plans all upfront or monthly, never partially upfront: change the plan's payment option to all_upfront or no_upfront.");
  }
  if (payment !== "all_upfront" && payment !== "no_upfront") throw new PurchaseFailure("unsupported", `Azure has no payment option "${item.paymentOption}"; use all_upfront or no_upfront.`);
  if (!Number.isFinite(item.amount) || item.amount <= 0) throw new PurchaseFailure("unsupported", `An Azure ${item.commitmentType} needs a positive amount, not ${item.amount}.`);
  if (item.commitmentType === "reservation") {
    if (!item.instanceType || !item.region) throw new PurchaseFailure("unsupported", "An Azure reservation needs a VM size (Standard_D2s_v3) and an Azure region (eastus); buy a savings plan for spend that has neither.");
    if (!Number.isInteger(item.amount)) throw new PurchaseFailure("unsupported", `Azure reserves whole VMs: ${item.amount} × ${item.instanceType} cannot be bought; round the plan's quantity.`);
  }
  return {
    kind: item.commitmentType,
    term: years === 1 ? "P1Y" : "P3Y",
    years,
    seconds,
    upfront: payment === "all_upfront",
    aliasName: `commitops-${item.token}`,
    displayName: `commitops ${item.token}`,
    appliedSubscription,
  };
}

function normalizeSubscription(id: string | null | undefined): string | null {
  const v = id?.trim();
  if (!v) return null;
  return v.toLowerCase().startsWith("/subscriptions/") ? v : `/subscriptions/${v}`;
}

/** Azure takes savings plan commitments in tenths of a cent an hour. */
function hourlyCommitment(amount: number): number {
  return Math.max(0.001, Math.round(amount * 1000) / 1000);
}

/** One monthly payment: the payment schedule's first, else the total spread over the term. */
function monthlyPayment(total: number, schedule: { pricingCurrencyTotal?: { amount?: number } }[], years: number): number {
  const first = schedule.length > 1 ? schedule[0]?.pricingCurrencyTotal?.amount : undefined;
  return typeof first === "number" ? first : total / (12 * years);
}

/** What an order costs, from its plan information. */
function chargedOf(
  billingPlan: string | undefined,
  total: { amount?: number; currencyCode?: string } | undefined,
  transactions: { pricingCurrencyTotal?: { amount?: number } }[] | undefined,
  years: number,
): { upfront: number; hourly: number; currency: string } | null {
  if (typeof total?.amount !== "number") return null;
  const currency = total.currencyCode ?? "USD";
  if (billingPlan === "Upfront") return { upfront: total.amount, hourly: 0, currency };
  return { upfront: 0, hourly: monthlyPayment(total.amount, transactions ?? [], years) / HOURS_PER_MONTH, currency };
}

function commitmentOfSavingsPlan(sp: SavingsPlanModel, now: Date): ProviderCommitment {
  const years = yearsOf(sp.term) ?? 0;
  const amount = sp.commitment?.amount ?? 0;
  const upfront = sp.billingPlan !== "P1M";
  const paid = spendCommitmentPayments(amount, years * YEAR_SECONDS, upfront ? "all_upfront" : "no_upfront");
  const endsAt = sp.expiryDateTime ?? null;
  return {
    providerCommitmentId: canonicalSavingsPlanId(sp.id!),
    commitmentType: "savings_plan",
    category: "Spend",
    contractTerm: termOf(sp.term),
    paymentOption: upfront ? "all_upfront" : "no_upfront",
    region: null,
    instanceType: null,
    instanceFamily: null,
    amount,
    upfrontCost: paid.upfront,
    recurringHourlyCost: paid.hourly,
    startsAt: sp.benefitStartTime ?? sp.effectiveDateTime ?? null,
    endsAt,
    state: stateOf(sp.provisioningState, endsAt, now),
    name: sp.displayName ?? null,
  };
}

const PENDING_STATES = new Set(["creating", "pendingresourcehold", "confirmedresourcehold", "pendingbilling", "confirmedbilling", "created", "pending"]);

function stateOf(provisioningState: string | undefined, endsAt: Date | null, now: Date): ProviderCommitment["state"] {
  const s = (provisioningState ?? "").toLowerCase();
  if (s === "succeeded") return endsAt && endsAt.getTime() <= now.getTime() ? "retired" : "active";
  if (PENDING_STATES.has(s)) return "pending";
  // Expired, Cancelled, Failed, BillingFailed, and Split/Merged (their successors are listed themselves).
  return "retired";
}

function refuseFailedAlias(state: string | undefined, aliasName: string): void {
  const s = (state ?? "").toLowerCase();
  if (s === "failed" || s === "cancelled" || s === "billingfailed") {
    throw new PurchaseFailure("refused", `Azure's purchase ${aliasName} ended ${state}: nothing was bought. See the billing scope's purchase history in the Azure portal.`);
  }
}

function termOf(term: string | undefined): string | null {
  return term === "P1Y" ? "one_year" : term === "P3Y" ? "three_year" : null;
}
function yearsOf(term: string | undefined): number | null {
  const m = /^P(\d+)Y$/.exec(term ?? "");
  return m ? Number(m[1]) : null;
}
function paymentOf(billingPlan: string | undefined): string | null {
  if (billingPlan === "Upfront") return "all_upfront";
  if (billingPlan === "Monthly" || billingPlan === "P1M") return "no_upfront";
  return null;
}

const GUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

/** The GUID after `/{segment}/` in an ARM id (the last GUID when no segment is named). */
function guidOf(id: string | undefined, segment?: string): string | null {
  if (!id) return null;
  if (segment) return new RegExp(`/${segment}/(${GUID})`, "i").exec(id)?.[1]?.toLowerCase() ?? null;
  return new RegExp(`(${GUID})\\s*$`).exec(id)?.[1]?.toLowerCase() ?? null;
}

// ARM ids are case-insensitive and Azure spells them both ways; one spelling lets ids be compared.
function reservationOrderId(guid: string): string {
  return `/providers/Microsoft.Capacity/reservationOrders/${guid}`;
}
function savingsPlanOrderId(guid: string): string {
  return `/providers/Microsoft.BillingBenefits/savingsPlanOrders/${guid}`;
}
function canonicalReservationId(id: string): string {
  const order = guidOf(id, "reservationOrders");
  const reservation = guidOf(id, "reservations");
  return order && reservation ? `${reservationOrderId(order)}/reservations/${reservation}` : id;
}
function canonicalSavingsPlanId(id: string): string {
  const order = guidOf(id, "savingsPlanOrders");
  const plan = guidOf(id, "savingsPlans");
  return order && plan ? `${savingsPlanOrderId(order)}/savingsPlans/${plan}` : id;
}

const money = (n: number) => n.toFixed(2);

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function statusOf(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown })?.statusCode;
  return typeof s === "number" ? s : undefined;
}

const NETWORK = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|socket hang up|REQUEST_SEND_ERROR|network_error|ConnectionRefused|Unable to connect|timed? ?out/i;
const CREDENTIAL_CODES = new Set(["InvalidAuthenticationToken", "ExpiredAuthenticationToken", "InvalidAuthenticationTokenTenant", "InvalidAuthenticationTokenAudience", "AuthenticationFailed", "InvalidAccessToken", "MissingTenantId", "InvalidTenantId"]);
const PERMISSION_CODES = new Set(["AuthorizationFailed", "LinkedAuthorizationFailed", "Forbidden", "RequestDisallowedByPolicy"]);
const NO_OFFERING_CODES = new Set(["InvalidSku", "SkuNotAvailable", "InvalidLocationId", "UnsupportedReservationTerm", "CalculatePriceFailed", "FulfillmentOutOfStockError", "NotSupportedSku"]);

function isLimitCode(code: string): boolean {
  return /quota|limit/i.test(code);
}

/** A refused savings plan validation, by Azure's reason code. */
function validationFailure(reasonCode: string | undefined, reason: string | undefined, what: string): PurchaseFailure {
  const code = reasonCode ?? "Invalid";
  const text = `Azure refused ${what} (${code}${reason ? `: ${reason}` : ""}).`;
  if (isLimitCode(code)) return new PurchaseFailure("limit_exceeded", text);
  if (PERMISSION_CODES.has(code)) return new PurchaseFailure("permission", text);
  if (NO_OFFERING_CODES.has(code)) return new PurchaseFailure("no_offering", text);
  return new PurchaseFailure("refused", text);
}

/**
 * The PurchaseFailure of an SDK error, in words that name the action but no secret. `phase`:
 * a 400 while pricing means Azure does not sell that combination; while buying, that it refused.
 */
function failureOf(e: unknown, action: string, phase: "quote" | "buy" | "read", tenantId: string): PurchaseFailure {
  if (e instanceof PurchaseFailure) return e;
  const err = e as { name?: string; code?: unknown; statusCode?: number; message?: string; errorResponse?: { error?: string; errorDescription?: string } };
  const name = err?.name ?? "";
  const code = typeof err?.code === "string" ? err.code : "";
  const status = err?.statusCode;
  const message = String(err?.message ?? e);
  const said = (m: string) => m.replace(/\s+/g, " ").slice(0, 300);

  if (/non-TLS|authority_uri_insecure|'https' protocol/i.test(message)) {
    return new PurchaseFailure("credentials", "Azure credentials are only sent over https: the Resource Manager endpoint and the Entra ID authority host must be https URLs.");
  }
  // MSAL reports an authority it cannot reach and a tenant the authority does not know alike; a wrong tenant fails check() when the connection is saved.
  if (/endpoints_resolution_error/.test(message)) {
    return new PurchaseFailure("unreachable", `Microsoft Entra ID gave no sign-in endpoints for tenant ${tenantId} (endpoints_resolution_error): the authority host is unreachable or the tenant ID is wrong.`, true);
  }
  if (name === "CredentialUnavailableError" || name === "AggregateAuthenticationError") {
    return new PurchaseFailure("credentials", `No Azure credential could ${action}: give the service principal's client secret, or run with a managed or workload identity that has access.`);
  }
  if (name === "AuthenticationError" || name === "AuthenticationRequiredError") {
    const unreachable = status === undefined ? NETWORK.test(message) : status >= 500 || status === 429;
    if (unreachable) {
      return new PurchaseFailure("unreachable", `Microsoft Entra ID could not be reached to sign in the service principal (${status ?? "network error"}).`, true);
    }
    const aad = /AADSTS\d+/.exec(message)?.[0] ?? err.errorResponse?.error ?? name;
    return new PurchaseFailure("credentials", `Microsoft Entra ID refused to sign in the service principal (${aad}): check the tenant ID, client ID and client secret.`);
  }
  if (name === "AbortError" || (name === "RestError" && status === undefined) || (status === undefined && NETWORK.test(`${code} ${message}`))) {
    return new PurchaseFailure("unreachable", `Azure Resource Manager could not be reached to ${action} (${code || name || "network error"}).`, true);
  }
  const lroFailed = /long-running operation has failed\.?\s*(?:([A-Za-z0-9_.]+)\.\s*([\s\S]*))?/i.exec(message);
  if (lroFailed) {
    const lroCode = lroFailed[1] ?? "";
    const text = `Azure accepted the request to ${action}, then failed it${lroCode ? ` (${lroCode}: ${said(lroFailed[2] ?? "")})` : ""}; nothing was bought.`;
    return new PurchaseFailure(isLimitCode(lroCode) ? "limit_exceeded" : "refused", text);
  }
  if (status !== undefined) {
    const detail = `${code || status}${message ? `: ${said(message)}` : ""}`;
    if (status === 401 || CREDENTIAL_CODES.has(code)) return new PurchaseFailure("credentials", `Azure Resource Manager did not accept the service principal's token to ${action} (${detail}).`);
    if (status === 403 || PERMISSION_CODES.has(code)) {
      return new PurchaseFailure("permission", `The service principal may not ${action} (${detail}): it needs the Reservation Purchaser or Savings plan Purchaser role on the billing scope.`);
    }
    if (status === 429 || status === 408 || status >= 500) return new PurchaseFailure("unreachable", `Azure Resource Manager could not ${action} now (${detail}); a later run retries.`, true);
    if (isLimitCode(code)) return new PurchaseFailure("limit_exceeded", `Azure refused to ${action}: a limit was reached (${detail}).`);
    if (NO_OFFERING_CODES.has(code) || (phase === "quote" && (status === 400 || status === 404))) return new PurchaseFailure("no_offering", `Azure has no offer to ${action} (${detail}).`);
    return new PurchaseFailure("refused", `Azure refused to ${action} (${detail}).`);
  }
  return new PurchaseFailure("internal", `Azure ${action} failed unexpectedly (${name || "error"}: ${said(message)}).`);
}
