import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { azurePurchaser } from "../../lib/purchasing/providers/azure.ts";
import { PurchaseFailure, THREE_YEAR_SECONDS, YEAR_SECONDS, type PurchaseItemSpec } from "../../lib/purchasing/providers/types.ts";
import type { AzurePurchasingConfig } from "../../lib/purchasing/providers/settings.ts";
import { startAzurePurchasingServer, type AzurePurchasingServer } from "../helpers/azurePurchasingServer.ts";
import { freePort } from "../helpers/process.ts";
import { failureOf } from "./fixtures.ts";

// SDK retries of network failures back off for about a second.
setDefaultTimeout(30_000);

const BILLING_SCOPE = "/subscriptions/6b8e1f0a-3c2d-4e5f-8a9b-0c1d2e3f4a5b";
const APPLIED_SUBSCRIPTION = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

let server: AzurePurchasingServer;
beforeAll(async () => {
  server = await startAzurePurchasingServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => server.reset());

function configOf(s: AzurePurchasingServer, extra: Partial<AzurePurchasingConfig> = {}): AzurePurchasingConfig {
  return { tenant_id: s.tenantId, client_id: s.clientId, billing_scope_id: BILLING_SCOPE, endpoint_url: s.url, authority_host: s.authorityHost, ...extra };
}
function purchaserOf(s = server, extra: Partial<AzurePurchasingConfig> = {}, opts: { now?: () => Date } = {}) {
  return azurePurchaser(configOf(s, extra), { client_secret: s.clientSecret }, { pollIntervalMs: 10, ...opts });
}

function reservation(over: Partial<PurchaseItemSpec> = {}): PurchaseItemSpec {
  return {
    token: randomUUID(),
    commitmentType: "reservation",
    contractTerm: "one_year",
    paymentOption: "all_upfront",
    region: "eastus",
    instanceType: "Standard_D2s_v3",
    instanceFamily: null,
    amount: 2,
    maxUpfront: 1226.4,
    plannedHourly: 0,
    submittedAt: new Date(),
    ...over,
  };
}
function savingsPlan(over: Partial<PurchaseItemSpec> = {}): PurchaseItemSpec {
  return {
    token: randomUUID(),
    commitmentType: "savings_plan",
    contractTerm: "three_year",
    paymentOption: "no_upfront",
    region: null,
    instanceType: null,
    instanceFamily: null,
    amount: 1.25,
    maxUpfront: 0,
    plannedHourly: 1.25,
    submittedAt: new Date(),
    ...over,
  };
}

const requestsOf = (operation: string, s = server) => s.requests.filter((r) => r.operation === operation);
const buyRequests = (s = server) => s.requests.filter((r) => r.method === "PUT");

describe("reservations", () => {
  test("quote prices the item with calculatePrice, signed in through Entra ID, and buys nothing", async () => {
    const item = reservation();
    const quote = await purchaserOf().quote(item);

    expect(quote).toEqual({ offeringId: "Standard_D2s_v3/eastus/P1Y/Upfront", upfront: 1226.4, hourly: 0, currency: "USD", durationSeconds: YEAR_SECONDS });
    const [calc, ...more] = requestsOf("calculatePrice");
    expect(more).toHaveLength(0);
    expect(calc).toMatchObject({ method: "POST", path: "/providers/Microsoft.Capacity/calculatePrice", apiVersion: "2022-11-01", bearer: true, status: 200 });
    expect(calc!.body).toEqual({
      sku: { name: "Standard_D2s_v3" },
      location: "eastus",
      properties: {
        reservedResourceType: "VirtualMachines",
        billingScopeId: BILLING_SCOPE,
        term: "P1Y",
        billingPlan: "Upfront",
        quantity: 2,
        displayName: `commitops ${item.token}`,
        appliedScopeType: "Shared",
        renew: false,
        reservedResourceProperties: { instanceFlexibility: "On" },
      },
    });
    const [token] = requestsOf("token");
    expect(token).toMatchObject({ method: "POST", path: `/${server.tenantId}/oauth2/v2.0/token`, status: 200 });
    expect(token!.body).toMatchObject({ grant_type: "client_credentials", client_id: server.clientId });
    expect(String((token!.body as Record<string, string>).scope).split(" ")).toContain(`${server.url}/.default`);
    expect(buyRequests()).toHaveLength(0);
    expect(server.orders).toHaveLength(0);
  });

  test("monthly billing quotes no upfront and the monthly payment per hour; a single applied scope names the subscription", async () => {
    const item = reservation({ contractTerm: "three_year", paymentOption: "no_upfront", amount: 3, maxUpfront: 0 });
    const quote = await purchaserOf(server, { applied_scope_subscription_id: APPLIED_SUBSCRIPTION }).quote(item);

    // 3 × 1182.60 over 36 months = 98.55 a month.
    expect(quote).toMatchObject({ offeringId: "Standard_D2s_v3/eastus/P3Y/Monthly", upfront: 0, currency: "USD", durationSeconds: THREE_YEAR_SECONDS });
    expect(quote.hourly).toBeCloseTo(98.55 / 730, 9);
    expect(requestsOf("calculatePrice")[0]!.body).toMatchObject({
      properties: { term: "P3Y", billingPlan: "Monthly", quantity: 3, appliedScopeType: "Single", appliedScopes: [`/subscriptions/${APPLIED_SUBSCRIPTION}`] },
    });
  });

  test("insured terms are bought as three-year monthly reservations", async () => {
    for (const contractTerm of ["thirty_day_gris", "one_year_gris"]) {
      server.reset();
      const quote = await purchaserOf().quote(reservation({ contractTerm, paymentOption: "all_upfront", amount: 1, maxUpfront: 0 }));
      expect(quote).toMatchObject({ offeringId: "Standard_D2s_v3/eastus/P3Y/Monthly", upfront: 0, durationSeconds: THREE_YEAR_SECONDS });
      expect(requestsOf("calculatePrice")[0]!.body).toMatchObject({ properties: { term: "P3Y", billingPlan: "Monthly" } });
    }
  });

  test("dryRun is calculatePrice alone: it states the price and buys nothing", async () => {
    const item = reservation();
    const p = purchaserOf();
    const quote = await p.quote(item);
    const { summary } = await p.dryRun(item, quote);

    expect(summary).toContain("calculatePrice");
    expect(summary).toContain("1226.40 USD upfront");
    expect(requestsOf("calculatePrice")).toHaveLength(2);
    expect(buyRequests()).toHaveLength(0);
    expect(server.orders).toHaveLength(0);
  });

  test("a VM size Azure does not offer there is no_offering", async () => {
    const f = await failureOf(purchaserOf().quote(reservation({ instanceType: "Standard_Q99s_v9" })));
    expect(f.cause).toBe("no_offering");
    expect(f.message).toContain("Standard_Q99s_v9");
    expect(f.retryable).toBe(false);
  });

  test("an upfront price above the plan's (beyond a cent) is price_changed, checked before anything is bought", async () => {
    const p = purchaserOf();
    expect((await p.quote(reservation({ maxUpfront: 1226.395 }))).upfront).toBe(1226.4);
    const tooDear = await failureOf(p.quote(reservation({ maxUpfront: 1226.38 })));
    expect(tooDear.cause).toBe("price_changed");
    expect(tooDear.message).toContain("1226.40");
    expect(tooDear.message).toContain("1226.38");

    const item = reservation({ maxUpfront: 2000 });
    const quote = await p.quote(item);
    server.setPrice({ sku: "Standard_D2s_v3", location: "eastus", term: "P1Y", upfront: 700 });
    const rose = await failureOf(p.buy(item, quote));
    expect(rose.cause).toBe("price_changed");
    expect(rose.message).toContain("1400.00");

    const monthly = reservation({ paymentOption: "no_upfront", maxUpfront: 0 });
    const monthlyQuote = await p.quote(monthly);
    server.setPrice({ sku: "Standard_D2s_v3", location: "eastus", term: "P1Y", upfront: 800 });
    expect((await failureOf(p.buy(monthly, monthlyQuote))).cause).toBe("price_changed");

    expect(buyRequests()).toHaveLength(0);
    expect(server.orders).toHaveLength(0);
  });

  test("buy creates a reservation order alias named after the token and follows the long-running operation to the order", async () => {
    const p = purchaserOf();
    const item = reservation();
    const quote = await p.quote(item);
    const before = server.requests.length;
    const outcome = await p.buy(item, quote);

    expect(server.orders).toHaveLength(1);
    const order = server.orders[0]!;
    expect(order).toMatchObject({
      kind: "reservation",
      aliasName: `commitops-${item.token}`,
      sku: "Standard_D2s_v3",
      location: "eastus",
      term: "P1Y",
      billingPlan: "Upfront",
      quantity: 2,
      billingScopeId: BILLING_SCOPE,
      appliedScopeType: "Shared",
      displayName: `commitops ${item.token}`,
      instanceFlexibility: "On",
      renew: false,
      provisioningState: "Succeeded",
    });
    expect(outcome).toEqual({ providerPurchaseId: order.orderId, upfront: 1226.4, hourly: 0, currency: "USD", startsAt: order.createdAt, endsAt: order.expiresAt, providerState: "Succeeded" });
    expect(outcome.providerPurchaseId).toMatch(/^\/providers\/Microsoft\.Capacity\/reservationOrders\/[0-9a-f-]{36}$/);

    const calls = server.requests.slice(before);
    expect(calls.map((r) => `${r.operation} ${r.status}`)).toEqual([
      "calculatePrice 200",
      "reservationOrderAlias.create 201",
      "operationStatus 200",
      "reservationOrderAlias.get 200",
      "reservationOrder.get 200",
    ]);
    expect(calls.every((r) => r.bearer && r.apiVersion === "2022-11-01")).toBe(true);
    const put = calls[1]!;
    expect(put).toMatchObject({ method: "PUT", path: `/providers/Microsoft.BillingBenefits/reservationOrderAliases/commitops-${item.token}`, aliasName: `commitops-${item.token}` });
    expect(put.body).toEqual({
      sku: { name: "Standard_D2s_v3" },
      location: "eastus",
      properties: {
        displayName: `commitops ${item.token}`,
        billingScopeId: BILLING_SCOPE,
        term: "P1Y",
        appliedScopeType: "Shared",
        quantity: 2,
        renew: false,
        reservedResourceType: "VirtualMachines",
        reservedResourceProperties: { instanceFlexibility: "On" },
      },
    });
    expect(calls[4]!.query.$expand).toBe("planInformation");
  });

  test("a monthly reservation for a single subscription is bought with billing plan P1M and scope properties", async () => {
    const p = purchaserOf(server, { applied_scope_subscription_id: `/subscriptions/${APPLIED_SUBSCRIPTION}` });
    const item = reservation({ instanceType: "Standard_D4s_v3", contractTerm: "three_year", paymentOption: "no_upfront", amount: 1, maxUpfront: 0 });
    const outcome = await p.buy(item, await p.quote(item));

    expect(requestsOf("reservationOrderAlias.create")[0]!.body).toMatchObject({
      properties: { term: "P3Y", billingPlan: "P1M", appliedScopeType: "Single", appliedScopeProperties: { subscriptionId: `/subscriptions/${APPLIED_SUBSCRIPTION}` } },
    });
    expect(server.orders[0]).toMatchObject({ billingPlan: "Monthly", appliedScopeType: "Single", appliedScopeSubscription: `/subscriptions/${APPLIED_SUBSCRIPTION}` });
    // 2365.20 over 36 months = 65.70 a month.
    expect(outcome.upfront).toBe(0);
    expect(outcome.hourly).toBeCloseTo(65.7 / 730, 9);
  });

  test("buying the same token again buys nothing more: the alias PUT is idempotent", async () => {
    const p = purchaserOf();
    const item = reservation();
    const quote = await p.quote(item);
    const first = await p.buy(item, quote);
    const second = await purchaserOf().buy(item, quote);

    expect(second.providerPurchaseId).toBe(first.providerPurchaseId);
    expect(server.orders).toHaveLength(1);
    expect(requestsOf("reservationOrderAlias.create").map((r) => r.status)).toEqual([201, 200]);
  });

  test("a purchase that polls several times before it succeeds", async () => {
    const slow = await startAzurePurchasingServer({ pollsBeforeDone: 2 });
    try {
      const p = purchaserOf(slow);
      const item = reservation();
      const outcome = await p.buy(item, await p.quote(item));
      expect(outcome.providerState).toBe("Succeeded");
      expect(requestsOf("operationStatus", slow)).toHaveLength(3);
      expect(slow.orders).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });

  test("findExisting is null before a purchase and finds the order after our process lost Azure's answer", async () => {
    const item = reservation();
    expect(await purchaserOf().findExisting(item, new Set())).toBeNull();
    expect(requestsOf("reservationOrderAlias.get")[0]).toMatchObject({ path: `/providers/Microsoft.BillingBenefits/reservationOrderAliases/commitops-${item.token}`, status: 404 });

    const p = purchaserOf();
    const quote = await p.quote(item);
    server.failNext("operationStatus", { network: true }, 3);
    const lost = await failureOf(p.buy(item, quote));
    expect(lost.cause).toBe("unreachable");
    expect(lost.retryable).toBe(true);
    expect(server.orders).toHaveLength(1);

    const found = await purchaserOf().findExisting(item, new Set());
    const order = server.orders[0]!;
    expect(found).toEqual({ providerPurchaseId: order.orderId, upfront: 1226.4, hourly: 0, currency: "USD", startsAt: order.createdAt, endsAt: order.expiresAt, providerState: "Succeeded" });
    expect(await purchaserOf().findExisting(item, new Set([order.orderId]))).toBeNull();
    expect(buyRequests()).toHaveLength(1);
  });

  test("findExisting reports a purchase Azure accepted but has not finished", async () => {
    const item = reservation({ paymentOption: "no_upfront", maxUpfront: 0, plannedHourly: 0.14 });
    const p = purchaserOf();
    const quote = await p.quote(item);
    server.hold();
    server.failNext("operationStatus", { network: true }, 3);
    expect((await failureOf(p.buy(item, quote))).cause).toBe("unreachable");

    const pending = await purchaserOf().findExisting(item, new Set());
    expect(pending).toMatchObject({ providerPurchaseId: server.orders[0]!.orderId, providerState: "Created", upfront: 0 });
    expect(server.orders[0]!.provisioningState).toBe("Creating");

    server.release();
    expect((await purchaserOf().findExisting(item, new Set()))?.providerState).toBe("Succeeded");
    expect(server.orders).toHaveLength(1);
  });

  test("a purchase Azure fails after accepting it is refused (or limit_exceeded), and nothing is bought", async () => {
    const p = purchaserOf();
    const item = reservation();
    server.failNext("reservationOrderAlias.create", { lroFailure: { code: "BillingPaymentInstrumentHardError", message: "The payment instrument was declined." } });
    const refused = await failureOf(p.buy(item, await p.quote(item)));
    expect(refused.cause).toBe("refused");
    expect(refused.message).toContain("BillingPaymentInstrumentHardError");
    expect(refused.retryable).toBe(false);
    expect(server.orders).toHaveLength(0);
    expect((await failureOf(p.findExisting(item, new Set()))).cause).toBe("refused");

    const other = reservation();
    server.failNext("reservationOrderAlias.create", { lroFailure: { code: "ReservationQuotaExceeded", message: "The reservation quota of the subscription is reached." } });
    expect((await failureOf(p.buy(other, await p.quote(other)))).cause).toBe("limit_exceeded");

    const third = reservation();
    server.failNext("reservationOrderAlias.create", { status: 400, code: "QuotaExceeded", message: "Quota exceeded for Standard_D2s_v3 in eastus." });
    expect((await failureOf(p.buy(third, await p.quote(third)))).cause).toBe("limit_exceeded");
    expect(server.orders).toHaveLength(0);
  });
});

describe("savings plans", () => {
  test("the quote is the commitment itself (the API has no price calculation); dryRun asks validate and buys nothing", async () => {
    const item = savingsPlan();
    const p = purchaserOf();
    const quote = await p.quote(item);
    expect(quote).toEqual({ offeringId: "Compute_Savings_Plan/P3Y/P1M", upfront: 0, hourly: 1.25, currency: "USD", durationSeconds: THREE_YEAR_SECONDS });
    expect(server.requests).toHaveLength(0);

    const { summary } = await p.dryRun(item, quote);
    expect(summary).toContain("validate");
    const [validate] = requestsOf("validatePurchase");
    expect(validate).toMatchObject({ method: "POST", path: "/providers/Microsoft.BillingBenefits/validate", apiVersion: "2022-11-01", bearer: true, status: 200 });
    expect(validate!.body).toEqual({
      benefits: [
        {
          sku: { name: "Compute_Savings_Plan" },
          properties: {
            displayName: `commitops ${item.token}`,
            billingScopeId: BILLING_SCOPE,
            term: "P3Y",
            billingPlan: "P1M",
            appliedScopeType: "Shared",
            commitment: { grain: "Hourly", currencyCode: "USD", amount: 1.25 },
          },
        },
      ],
    });
    expect(buyRequests()).toHaveLength(0);
    expect(server.orders).toHaveLength(0);
  });

  test("a savings plan Azure would refuse fails the dry run with its reason", async () => {
    server.failNext("validatePurchase", { invalid: { reasonCode: "CustomerCannotPurchaseSavingsPlan", reason: "Your provider has not enabled Savings Plan purchase on this subscription." } });
    const f = await failureOf(purchaserOf().dryRun(savingsPlan(), await purchaserOf().quote(savingsPlan())));
    expect(f.cause).toBe("refused");
    expect(f.message).toContain("CustomerCannotPurchaseSavingsPlan");
  });

  test("buy creates a savings plan order alias named after the token; findExisting reads it back; a second buy buys nothing", async () => {
    const p = purchaserOf();
    const item = savingsPlan();
    expect(await p.findExisting(item, new Set())).toBeNull();
    const quote = await p.quote(item);
    const outcome = await p.buy(item, quote);

    expect(server.orders).toHaveLength(1);
    const order = server.orders[0]!;
    expect(order).toMatchObject({ kind: "savings_plan", aliasName: `commitops-${item.token}`, sku: "Compute_Savings_Plan", term: "P3Y", billingPlan: "Monthly", commitment: 1.25, billingScopeId: BILLING_SCOPE, provisioningState: "Succeeded" });
    expect(outcome).toEqual({ providerPurchaseId: order.orderId, upfront: 0, hourly: 1.25, currency: "USD", startsAt: order.createdAt, endsAt: order.expiresAt, providerState: "Succeeded" });
    expect(outcome.providerPurchaseId).toMatch(/^\/providers\/Microsoft\.BillingBenefits\/savingsPlanOrders\/[0-9a-f-]{36}$/);
    const [put] = requestsOf("savingsPlanOrderAlias.create");
    expect(put).toMatchObject({ method: "PUT", path: `/providers/Microsoft.BillingBenefits/savingsPlanOrderAliases/commitops-${item.token}`, apiVersion: "2022-11-01", bearer: true, status: 201 });
    expect(put!.body).toEqual({
      sku: { name: "Compute_Savings_Plan" },
      properties: {
        displayName: `commitops ${item.token}`,
        billingScopeId: BILLING_SCOPE,
        term: "P3Y",
        billingPlan: "P1M",
        appliedScopeType: "Shared",
        commitment: { grain: "Hourly", currencyCode: "USD", amount: 1.25 },
      },
    });

    expect(await purchaserOf().findExisting(item, new Set())).toEqual(outcome);
    expect((await purchaserOf().buy(item, quote)).providerPurchaseId).toBe(outcome.providerPurchaseId);
    expect(server.orders).toHaveLength(1);
  });

  test("all upfront is bought without a billing plan and costs the commitment for every hour of the term", async () => {
    const p = purchaserOf(server, { applied_scope_subscription_id: APPLIED_SUBSCRIPTION });
    const item = savingsPlan({ contractTerm: "one_year", paymentOption: "all_upfront", amount: 2, maxUpfront: 17520, plannedHourly: 0 });
    const quote = await p.quote(item);
    expect(quote).toMatchObject({ offeringId: "Compute_Savings_Plan/P1Y/Upfront", upfront: 17520, hourly: 0, durationSeconds: YEAR_SECONDS });
    const outcome = await p.buy(item, quote);
    expect(outcome).toMatchObject({ upfront: 17520, hourly: 0 });
    const body = requestsOf("savingsPlanOrderAlias.create")[0]!.body as { properties: Record<string, unknown> };
    expect(body.properties).not.toHaveProperty("billingPlan");
    expect(body.properties).toMatchObject({ term: "P1Y", appliedScopeType: "Single", appliedScopeProperties: { subscriptionId: `/subscriptions/${APPLIED_SUBSCRIPTION}` } });

    const f = await failureOf(p.quote(savingsPlan({ contractTerm: "one_year", paymentOption: "all_upfront", amount: 2, maxUpfront: 17000 })));
    expect(f.cause).toBe("price_changed");
    expect(server.orders).toHaveLength(1);
  });
});

describe("items Azure cannot buy here", () => {
  test("are unsupported, with what to do instead, before any call to Azure", async () => {
    const p = purchaserOf();
    const cases: [Partial<PurchaseItemSpec>, RegExp][] = [
      [{ paymentOption: "partial_upfront" }, /all_upfront or no_upfront/],
      [{ commitmentType: "compute_savings_plan" }, /reservations and savings plans/],
      [{ instanceType: null }, /VM size/],
      [{ region: null }, /region/],
      [{ amount: 1.5 }, /whole VMs/],
      [{ contractTerm: "five_year" }, /one- and three-year/],
    ];
    for (const [over, message] of cases) {
      const f = await failureOf(p.quote(reservation(over)));
      expect(f.cause).toBe("unsupported");
      expect(f.message).toMatch(message);
      expect((await failureOf(p.buy(reservation(over), { offeringId: "x", upfront: 0, hourly: 0, currency: "USD", durationSeconds: YEAR_SECONDS }))).cause).toBe("unsupported");
    }
    expect((await failureOf(p.quote(savingsPlan({ paymentOption: "partial_upfront" })))).cause).toBe("unsupported");
    expect(server.requests).toHaveLength(0);
  });
});

describe("failures", () => {
  test("a wrong client secret is refused by Entra ID (invalid_client): credentials, without the secret in the message", async () => {
    const wrong = `${server.clientSecret}-old`;
    const p = azurePurchaser(configOf(server), { client_secret: wrong });
    const f = await failureOf(p.check());
    expect(f.cause).toBe("credentials");
    expect(f.message).toContain("AADSTS7000215");
    expect(f.message).not.toContain(wrong);
    expect(f.retryable).toBe(false);
    expect(requestsOf("token").map((r) => r.status)).toEqual([401]);
    expect(requestsOf("reservationOrder.list")).toHaveLength(0);
  });

  test("an unknown client id is credentials too", async () => {
    const f = await failureOf(purchaserOf(server, { client_id: randomUUID() }).check());
    expect(f.cause).toBe("credentials");
    expect(f.message).toContain("AADSTS700016");
  });

  test("ARM's 401 InvalidAuthenticationToken is credentials, 403 AuthorizationFailed is permission", async () => {
    server.failNext("reservationOrder.list", { status: 401, code: "InvalidAuthenticationToken", message: "The access token is invalid." });
    expect((await failureOf(purchaserOf().check())).cause).toBe("credentials");

    server.failNext("calculatePrice", { status: 403, code: "AuthorizationFailed", message: "The client does not have authorization to perform action 'Microsoft.Capacity/calculatePrice/action'." });
    const denied = await failureOf(purchaserOf().quote(reservation()));
    expect(denied.cause).toBe("permission");
    expect(denied.message).toContain("AuthorizationFailed");
    expect(denied.retryable).toBe(false);
  });

  test("5xx and 429 are retried by the SDK, then unreachable and retryable", async () => {
    server.failNext("calculatePrice", { status: 503, code: "ServiceUnavailable", message: "Try again." });
    expect((await purchaserOf().quote(reservation())).upfront).toBe(1226.4);
    expect(requestsOf("calculatePrice").map((r) => r.status)).toEqual([503, 200]);

    server.failNext("reservationOrderAlias.create", { status: 429, code: "TooManyRequests", message: "Slow down." }, 3);
    const p = purchaserOf();
    const item = reservation();
    const throttled = await failureOf(p.buy(item, await p.quote(item)));
    expect(throttled.cause).toBe("unreachable");
    expect(throttled.retryable).toBe(true);
    expect(server.orders).toHaveLength(0);
  });

  test("a dropped connection or an ARM endpoint that is down is unreachable and retryable", async () => {
    server.failNext("reservationOrder.list", { network: true }, 3);
    const dropped = await failureOf(purchaserOf().check());
    expect(dropped.cause).toBe("unreachable");
    expect(dropped.retryable).toBe(true);

    const closed = `https://127.0.0.1:${await freePort()}`;
    const down = await failureOf(purchaserOf(server, { endpoint_url: closed }).check());
    expect(down.cause).toBe("unreachable");
    expect(down.retryable).toBe(true);
  });

  test("an http endpoint is refused: Azure credentials only travel over https", async () => {
    const f = await failureOf(purchaserOf(server, { endpoint_url: server.url.replace("https:", "http:") }).check());
    expect(f.cause).toBe("credentials");
    expect(f.message).toContain("https");
  });
});

describe("check and inventory", () => {
  test("check() is one authenticated read", async () => {
    await purchaserOf().check();
    expect(server.requests.map((r) => r.operation)).toEqual(["openidConfiguration", "token", "reservationOrder.list"]);
    expect(requestsOf("reservationOrder.list")[0]).toMatchObject({ bearer: true, apiVersion: "2022-11-01", status: 200 });
  });

  test("without a client secret the default Azure credential chain signs in (here from the environment)", async () => {
    const saved = { t: process.env.AZURE_TENANT_ID, c: process.env.AZURE_CLIENT_ID, s: process.env.AZURE_CLIENT_SECRET };
    process.env.AZURE_TENANT_ID = server.tenantId;
    process.env.AZURE_CLIENT_ID = server.clientId;
    process.env.AZURE_CLIENT_SECRET = server.clientSecret;
    try {
      await azurePurchaser(configOf(server), {}).check();
      expect(requestsOf("token").map((r) => r.status)).toEqual([200]);
      expect(requestsOf("reservationOrder.list")[0]!.bearer).toBe(true);
    } finally {
      for (const [k, v] of [["AZURE_TENANT_ID", saved.t], ["AZURE_CLIENT_ID", saved.c], ["AZURE_CLIENT_SECRET", saved.s]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("listCommitments lists reservations and savings plans across pages with their terms, costs and states", async () => {
    const paged = await startAzurePurchasingServer({ pageSize: 1 });
    try {
      const p = purchaserOf(paged);
      const buy = async (item: PurchaseItemSpec) => p.buy(item, await p.quote(item));
      const upfrontRes = reservation();
      const monthlyRes = reservation({ instanceType: "Standard_D4s_v3", contractTerm: "three_year", paymentOption: "no_upfront", amount: 1, maxUpfront: 0 });
      const expiredRes = reservation({ amount: 1, maxUpfront: 613.2 });
      const monthlySp = savingsPlan();
      const upfrontSp = savingsPlan({ contractTerm: "one_year", paymentOption: "all_upfront", amount: 0.5, maxUpfront: 4380 });
      const bought = new Map<PurchaseItemSpec, string>();
      for (const item of [upfrontRes, monthlyRes, expiredRes, monthlySp, upfrontSp]) bought.set(item, (await buy(item)).providerPurchaseId);
      paged.setOrderState(bought.get(expiredRes)!, "Expired");
      paged.hold();
      const pendingRes = reservation({ amount: 1, maxUpfront: 613.2 });
      const pendingBuy = buy(pendingRes);
      await paged.waitForRequest("reservationOrderAlias.create");
      const listed = await p.listCommitments(["eastus"]);
      paged.release();
      await pendingBuy;

      const byOrder = (orderId: string) => listed.filter((c) => c.providerCommitmentId.startsWith(`${orderId}/`));
      expect(listed).toHaveLength(6);
      const [a] = byOrder(bought.get(upfrontRes)!);
      expect(a).toEqual({
        providerCommitmentId: expect.stringMatching(/^\/providers\/Microsoft\.Capacity\/reservationOrders\/[0-9a-f-]{36}\/reservations\/[0-9a-f-]{36}$/),
        commitmentType: "reservation",
        category: "Usage",
        contractTerm: "one_year",
        paymentOption: "all_upfront",
        region: "eastus",
        instanceType: "Standard_D2s_v3",
        instanceFamily: null,
        amount: 2,
        upfrontCost: 1226.4,
        recurringHourlyCost: 0,
        startsAt: paged.orders[0]!.createdAt,
        endsAt: paged.orders[0]!.expiresAt,
        state: "active",
        name: `commitops ${upfrontRes.token}`,
      });
      const [b] = byOrder(bought.get(monthlyRes)!);
      expect(b).toMatchObject({ contractTerm: "three_year", paymentOption: "no_upfront", instanceType: "Standard_D4s_v3", amount: 1, upfrontCost: 0, state: "active" });
      expect(b!.recurringHourlyCost).toBeCloseTo(65.7 / 730, 9);
      expect(byOrder(bought.get(expiredRes)!)[0]!.state).toBe("retired");
      expect(listed.filter((c) => c.commitmentType === "reservation" && c.state === "pending").map((c) => c.name)).toEqual([`commitops ${pendingRes.token}`]);
      const [sp] = byOrder(bought.get(monthlySp)!);
      expect(sp).toMatchObject({ commitmentType: "savings_plan", category: "Spend", contractTerm: "three_year", paymentOption: "no_upfront", region: null, instanceType: null, amount: 1.25, upfrontCost: 0, recurringHourlyCost: 1.25, state: "active" });
      expect(sp!.providerCommitmentId).toMatch(/^\/providers\/Microsoft\.BillingBenefits\/savingsPlanOrders\/[0-9a-f-]{36}\/savingsPlans\/[0-9a-f-]{36}$/);
      expect(byOrder(bought.get(upfrontSp)!)[0]).toMatchObject({ contractTerm: "one_year", paymentOption: "all_upfront", amount: 0.5, upfrontCost: 4380, recurringHourlyCost: 0 });
      // One item a page: the SDK followed the nextLinks.
      expect(requestsOf("reservation.listAll", paged).length).toBeGreaterThanOrEqual(4);
      expect(requestsOf("reservation.listAll", paged).slice(1).every((r) => r.query.$skiptoken !== undefined && r.apiVersion === "2022-11-01")).toBe(true);
      expect(requestsOf("savingsPlan.listAll", paged).length).toBeGreaterThanOrEqual(2);

      const later = await purchaserOf(paged, {}, { now: () => new Date(Date.now() + 4 * 366 * 86_400_000) }).listCommitments([]);
      expect(later.every((c) => c.state === "retired")).toBe(true);
    } finally {
      await paged.close();
    }
  });
});
