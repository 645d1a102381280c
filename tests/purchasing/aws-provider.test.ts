/**
 * The AWS purchaser on the real SDK clients against the loopback EC2/RDS/Savings Plans/STS
 * server: what goes on the wire, that each item is bought once under its token, and how AWS
 * errors become PurchaseFailures.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { EC2Client, PurchaseReservedInstancesOfferingCommand } from "@aws-sdk/client-ec2";
import { awsPurchaser, PURCHASE_TOKEN_TAG, rdsReservationId } from "../../lib/purchasing/providers/aws.ts";
import type { AwsPurchasingConfig } from "../../lib/purchasing/providers/settings.ts";
import { PurchaseFailure, THREE_YEAR_SECONDS, YEAR_SECONDS, type ProviderPurchaser, type PurchaseItemSpec } from "../../lib/purchasing/providers/types.ts";
import { startAwsPurchasingServer, type AwsPurchasingServer } from "../helpers/awsPurchasingServer.ts";
import { failureOf } from "./fixtures.ts";

let server: AwsPurchasingServer;
const open: ProviderPurchaser[] = [];

beforeAll(async () => {
  server = await startAwsPurchasingServer();
});
afterAll(async () => {
  for (const p of open) await p.close?.();
  await server.close();
});
beforeEach(() => server.reset());

function purchaser(over: Partial<AwsPurchasingConfig> = {}, secret = "test-secret"): ProviderPurchaser {
  const p = awsPurchaser({ region: "us-east-1", access_key_id: "AKIATESTPURCHASER01", endpoint_url: server.url, ...over }, { secret_access_key: secret });
  open.push(p);
  return p;
}

function item(over: Partial<PurchaseItemSpec> = {}): PurchaseItemSpec {
  return {
    token: randomUUID(),
    commitmentType: "reserved_instance",
    contractTerm: "one_year",
    paymentOption: "all_upfront",
    region: "us-east-1",
    instanceType: "m5.large",
    instanceFamily: "m5",
    amount: 2,
    maxUpfront: 10_000,
    plannedHourly: 0,
    submittedAt: new Date(),
    ...over,
  };
}

const param = (op: string, name: string, n = 0) => server.calls(op)[n]?.params[name];

describe("EC2 reserved instances", () => {
  test("quote asks for the item's exact offering and prefers the regional one over a zonal one", async () => {
    const own = await startAwsPurchasingServer({
      offerings: [
        { service: "ec2", region: "us-west-2", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "Partial Upfront", fixedPrice: 240, hourly: 0.03, availabilityZone: "us-west-2a", id: "zonal" },
        { service: "ec2", region: "us-west-2", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "Partial Upfront", fixedPrice: 252, hourly: 0.0288, id: "regional" },
        { service: "ec2", region: "us-east-1", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "Partial Upfront", fixedPrice: 1, hourly: 0.001, id: "other-region" },
      ],
    });
    try {
      const q = await purchaser({ endpoint_url: own.url }).quote(item({ region: "us-west-2", paymentOption: "partial_upfront", amount: 3 }));
      const call = own.calls("DescribeReservedInstancesOfferings")[0]!;
      expect(call.service).toBe("ec2");
      expect(call.region).toBe("us-west-2");
      expect(call.signed).toBe(true);
      expect(call.params).toMatchObject({
        InstanceType: "m5.large",
        ProductDescription: "Linux/UNIX",
        InstanceTenancy: "default",
        OfferingClass: "standard",
        OfferingType: "Partial Upfront",
        MinDuration: String(YEAR_SECONDS),
        MaxDuration: String(YEAR_SECONDS),
        IncludeMarketplace: "false",
      });
      expect(q.offeringId).toBe("regional");
      expect(q.upfront).toBe(756);
      expect(q.hourly).toBeCloseTo(0.0864, 9);
      expect(q).toMatchObject({ durationSeconds: YEAR_SECONDS, currency: "USD" });
    } finally {
      await own.close();
    }
  });

  test("quote reads every page of offerings", async () => {
    const own = await startAwsPurchasingServer({
      pageSize: 1,
      offerings: [
        { service: "ec2", region: "us-east-1", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "All Upfront", fixedPrice: 500, hourly: 0, availabilityZone: "us-east-1a", id: "a" },
        { service: "ec2", region: "us-east-1", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "All Upfront", fixedPrice: 500, hourly: 0, availabilityZone: "us-east-1b", id: "b" },
        { service: "ec2", region: "us-east-1", instanceType: "m5.large", durationSeconds: YEAR_SECONDS, offeringType: "All Upfront", fixedPrice: 505, hourly: 0, id: "regional" },
      ],
    });
    try {
      expect((await purchaser({ endpoint_url: own.url }).quote(item())).offeringId).toBe("regional");
      expect(own.calls("DescribeReservedInstancesOfferings")).toHaveLength(3);
    } finally {
      await own.close();
    }
  });

  test("buy purchases once with a limit price, tags the RI with the token, and findExisting finds it by that tag", async () => {
    const p = purchaser();
    const it = item();
    const q = await p.quote(it);
    const out = await p.buy(it, q);

    expect(server.purchases.ec2).toHaveLength(1);
    const ri = server.purchases.ec2[0]!;
    expect(out.providerPurchaseId).toBe(ri.reservedInstancesId);
    expect(ri.instanceCount).toBe(2);
    expect(ri.availabilityZone).toBeNull();
    expect(ri.tags[PURCHASE_TOKEN_TAG]).toBe(it.token);
    expect(param("PurchaseReservedInstancesOffering", "LimitPrice.Amount")).toBe(String(q.upfront));
    expect(param("PurchaseReservedInstancesOffering", "LimitPrice.CurrencyCode")).toBe("USD");
    expect(param("PurchaseReservedInstancesOffering", "InstanceCount")).toBe("2");
    expect(param("CreateTags", "ResourceId.1")).toBe(ri.reservedInstancesId);
    expect(out).toMatchObject({ upfront: 1010, hourly: 0, currency: "USD", providerState: "payment-pending" });
    expect(out.endsAt!.getTime() - out.startsAt!.getTime()).toBe(YEAR_SECONDS * 1000);

    const found = await p.findExisting(it, new Set());
    expect(found?.providerPurchaseId).toBe(ri.reservedInstancesId);
    expect(param("DescribeReservedInstances", "Filter.1.Name", 1)).toBe(`tag:${PURCHASE_TOKEN_TAG}`);
    expect(await p.findExisting(item({ submittedAt: new Date(Date.now() - 3_600_000), amount: 5 }), new Set())).toBeNull();
    expect(server.purchases.ec2).toHaveLength(1);
  });

  test("a purchase whose answer was lost is not retried by the SDK and is found untagged by shape and time, once", async () => {
    const p = purchaser();
    const it = item({ submittedAt: new Date() });
    const q = await p.quote(it);
    server.failNext("PurchaseReservedInstancesOffering", { network: true, afterEffect: true });
    const f = await failureOf(p.buy(it, q));
    expect(f.cause).toBe("unreachable");
    expect(f.retryable).toBe(true);
    expect(server.calls("PurchaseReservedInstancesOffering")).toHaveLength(1);
    expect(server.purchases.ec2).toHaveLength(1);
    const bought = server.purchases.ec2[0]!;
    expect(bought.tags).toEqual({});

    // Same shape, bought long before this intent: not ours.
    server.setNow(new Date(Date.now() - 86_400_000));
    const older = new EC2Client({ region: "us-east-1", endpoint: server.url, credentials: { accessKeyId: "AKIAOTHERBUYER", secretAccessKey: "x" } });
    await older.send(new PurchaseReservedInstancesOfferingCommand({ ReservedInstancesOfferingId: q.offeringId, InstanceCount: 2 }));
    older.destroy();
    server.setNow(null);

    const found = await p.findExisting(it, new Set());
    expect(found?.providerPurchaseId).toBe(bought.reservedInstancesId);
    expect(bought.tags[PURCHASE_TOKEN_TAG]).toBe(it.token);
    // A second item of the same shape must not adopt it.
    expect(await p.findExisting(item({ submittedAt: it.submittedAt }), new Set([bought.reservedInstancesId]))).toBeNull();
  });

  test("an untagged RI in claimedIds is never returned", async () => {
    const p = purchaser();
    const it = item();
    const q = await p.quote(it);
    server.failNext("PurchaseReservedInstancesOffering", { network: true, afterEffect: true });
    await failureOf(p.buy(it, q));
    const id = server.purchases.ec2[0]!.reservedInstancesId;
    expect(await p.findExisting(it, new Set([id]))).toBeNull();
    expect(server.purchases.ec2[0]!.tags).toEqual({});
  });

  test("a price above the plan is refused before buying; a rise after the quote is refused by the limit price", async () => {
    const p = purchaser();
    const it = item({ maxUpfront: 1010 });
    const q = await p.quote(it);
    expect(q.upfront).toBe(1010);
    expect((await p.quote(item({ maxUpfront: 1009.995 }))).upfront).toBe(1010);

    server.setPrice(q.offeringId, { fixedPrice: 505.02 });
    const dearer = await failureOf(p.quote(it));
    expect(dearer.cause).toBe("price_changed");
    expect(dearer.message).toContain("1010.04");
    expect(await failureOf(p.buy(item({ maxUpfront: 1000 }), q)).then((f) => f.cause)).toBe("price_changed");
    expect(server.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);

    const stale = await failureOf(p.buy(item({ maxUpfront: 5000 }), q));
    expect(stale.cause).toBe("price_changed");
    expect(server.calls("PurchaseReservedInstancesOffering")).toHaveLength(1);
    expect(server.purchases.ec2).toHaveLength(0);
  });

  test("dryRun is EC2's DryRun purchase and buys nothing; a denied key is a permission failure", async () => {
    const p = purchaser();
    const it = item();
    const q = await p.quote(it);
    const { summary } = await p.dryRun(it, q);
    expect(summary).toContain("DryRun");
    expect(summary).toContain(q.offeringId);
    expect(param("PurchaseReservedInstancesOffering", "DryRun")).toBe("true");
    expect(server.purchases.ec2).toHaveLength(0);

    const denied = await failureOf(purchaser({ access_key_id: "DENYPURCHASE01" }).dryRun(it, q));
    expect(denied.cause).toBe("permission");
    expect(denied.message).toContain("ec2:PurchaseReservedInstancesOffering");
  });

  test("shapes EC2 cannot buy are unsupported or have no offering, without buying", async () => {
    const p = purchaser();
    const half = await failureOf(p.quote(item({ amount: 1.5 })));
    expect(half.cause).toBe("unsupported");
    expect(half.message).toContain("whole");
    expect((await failureOf(p.quote(item({ instanceType: "cache.r5.large" })))).cause).toBe("unsupported");
    expect((await failureOf(p.quote(item({ instanceType: null })))).cause).toBe("unsupported");
    expect(server.requests).toHaveLength(0);
    const none = await failureOf(p.quote(item({ instanceType: "x9z.huge" })));
    expect(none.cause).toBe("no_offering");
    expect(none.message).toContain("x9z.huge");
  });

  test("insured terms are bought as three-year no-upfront", async () => {
    const p = purchaser();
    const q = await p.quote(item({ contractTerm: "one_year_gris", paymentOption: "all_upfront" }));
    expect(param("DescribeReservedInstancesOfferings", "OfferingType")).toBe("No Upfront");
    expect(param("DescribeReservedInstancesOfferings", "MinDuration")).toBe(String(THREE_YEAR_SECONDS));
    expect(q.durationSeconds).toBe(THREE_YEAR_SECONDS);
    expect(q.upfront).toBe(0);
    expect(q.hourly).toBeGreaterThan(0);
  });

  test("quota, throttling and provider refusals map to their causes; a throttled purchase is not retried", async () => {
    const p = purchaser();
    const it = item();
    const q = await p.quote(it);
    server.failNext("PurchaseReservedInstancesOffering", { code: "ReservedInstancesLimitExceeded", status: 400 });
    expect((await failureOf(p.buy(it, q))).cause).toBe("limit_exceeded");
    server.failNext("PurchaseReservedInstancesOffering", { code: "RequestLimitExceeded", status: 503 });
    const throttled = await failureOf(p.buy(it, q));
    expect(throttled).toMatchObject({ cause: "unreachable", retryable: true });
    server.failNext("PurchaseReservedInstancesOffering", { code: "InvalidParameterCombination", status: 400, message: "The offering is not available for purchase." });
    const refused = await failureOf(p.buy(it, q));
    expect(refused).toMatchObject({ cause: "refused", retryable: false });
    expect(refused.message).toContain("InvalidParameterCombination");
    expect(server.calls("PurchaseReservedInstancesOffering")).toHaveLength(3);
    expect(server.purchases.ec2).toHaveLength(0);
  });
});

describe("RDS reserved instances", () => {
  test("quote takes a single-AZ offering of the class; buy names the reservation after the token; a repeat returns the same one", async () => {
    const p = purchaser();
    const it = item({ instanceType: "db.r5.large", instanceFamily: "db.r5", paymentOption: "partial_upfront", region: "us-west-2", amount: 2 });
    const q = await p.quote(it);
    const call = server.calls("DescribeReservedDBInstancesOfferings")[0]!;
    expect(call.service).toBe("rds");
    expect(call.region).toBe("us-west-2");
    expect(call.params).toMatchObject({ DBInstanceClass: "db.r5.large", Duration: String(YEAR_SECONDS), OfferingType: "Partial Upfront", MultiAZ: "false" });

    const out = await p.buy(it, q);
    expect(out.providerPurchaseId).toBe(rdsReservationId(it.token));
    expect(server.purchases.rds).toHaveLength(1);
    const r = server.purchases.rds[0]!;
    expect(r).toMatchObject({ multiAZ: false, productDescription: "mysql", count: 2, offeringId: q.offeringId });
    expect(r.tags[PURCHASE_TOKEN_TAG]).toBe(it.token);
    expect(server.calls("PurchaseReservedDBInstancesOffering")[0]!.idempotencyToken).toBe(`co-${it.token}`);
    expect(out.upfront).toBe(q.upfront);
    expect(out.hourly).toBeCloseTo(q.hourly, 9);

    const again = await p.buy(it, q);
    expect(again.providerPurchaseId).toBe(out.providerPurchaseId);
    expect(server.purchases.rds).toHaveLength(1);

    expect((await p.findExisting(it, new Set()))?.providerPurchaseId).toBe(out.providerPurchaseId);
    expect(await p.findExisting({ ...it, token: randomUUID() }, new Set())).toBeNull();
  });

  test("dryRun re-reads the offering's price and says RDS has no dry run", async () => {
    const p = purchaser();
    const it = item({ instanceType: "db.m5.large", amount: 1, paymentOption: "no_upfront", contractTerm: "three_year" });
    const q = await p.quote(it);
    const { summary } = await p.dryRun(it, q);
    expect(summary).toContain("RDS has no dry run");
    expect(summary).toContain(q.offeringId);
    expect(server.calls("DescribeReservedDBInstancesOfferings")[1]!.params).toEqual({ ReservedDBInstancesOfferingId: q.offeringId });
    expect(server.calls("PurchaseReservedDBInstancesOffering")).toHaveLength(0);

    server.removeOffering(q.offeringId);
    expect((await failureOf(p.dryRun(it, q))).cause).toBe("no_offering");
  });

  test("an offering withdrawn after the quote is no_offering; a quota refusal is limit_exceeded", async () => {
    const p = purchaser();
    const it = item({ instanceType: "db.r5.large", amount: 1 });
    const q = await p.quote(it);
    server.failNext("PurchaseReservedDBInstancesOffering", { code: "ReservedDBInstanceQuotaExceeded", status: 400 });
    expect((await failureOf(p.buy(it, q))).cause).toBe("limit_exceeded");
    server.removeOffering(q.offeringId);
    expect((await failureOf(p.buy(it, q))).cause).toBe("no_offering");
    expect(server.purchases.rds).toHaveLength(0);
  });
});

describe("Savings Plans", () => {
  const sp = (over: Partial<PurchaseItemSpec> = {}) => item({ commitmentType: "compute_savings_plan", instanceType: null, instanceFamily: null, region: null, amount: 1.5, paymentOption: "all_upfront", maxUpfront: 20_000, ...over });

  test("a compute plan is bought under the token as clientToken and tag; a repeat is the same plan; findExisting finds it by tag", async () => {
    const p = purchaser();
    const it = sp();
    const q = await p.quote(it);
    expect(q).toMatchObject({ upfront: 1.5 * 8760, hourly: 0, durationSeconds: YEAR_SECONDS });
    const offerings = server.calls("DescribeSavingsPlansOfferings")[0]!;
    expect(offerings.service).toBe("savingsplans");
    expect(offerings.region).toBe("us-east-1");
    expect(offerings.params).toMatchObject({ planTypes: ["Compute"], durations: [YEAR_SECONDS], paymentOptions: ["All Upfront"], currencies: ["USD"] });
    expect(offerings.params.productType).toBeUndefined();

    const out = await p.buy(it, q);
    const create = server.calls("CreateSavingsPlan")[0]!;
    expect(create.idempotencyToken).toBe(it.token);
    expect(create.params).toMatchObject({ savingsPlanOfferingId: q.offeringId, commitment: "1.5", tags: { [PURCHASE_TOKEN_TAG]: it.token } });
    expect(create.params.upfrontPaymentAmount).toBeUndefined();
    expect(server.purchases.savingsPlans).toHaveLength(1);
    expect(out).toMatchObject({ providerPurchaseId: server.purchases.savingsPlans[0]!.savingsPlanId, upfront: 13140, hourly: 0, providerState: "payment-pending" });

    const again = await p.buy(it, q);
    expect(again.providerPurchaseId).toBe(out.providerPurchaseId);
    expect(server.purchases.savingsPlans).toHaveLength(1);

    expect((await p.findExisting(it, new Set()))?.providerPurchaseId).toBe(out.providerPurchaseId);
    expect(await p.findExisting(sp(), new Set())).toBeNull();
  });

  test("an EC2 instance plan is looked up by region and family; partial upfront pays half; the commitment keeps three decimals, rounded down", async () => {
    const p = purchaser();
    const it = sp({ commitmentType: "ec2_instance_savings_plan", instanceFamily: "c5", region: "us-west-2", paymentOption: "partial_upfront", contractTerm: "three_year", amount: 0.12349 });
    const q = await p.quote(it);
    expect(server.calls("DescribeSavingsPlansOfferings")[0]!.params).toMatchObject({
      planTypes: ["EC2Instance"],
      productType: "EC2",
      durations: [THREE_YEAR_SECONDS],
      paymentOptions: ["Partial Upfront"],
      filters: [{ name: "region", values: ["us-west-2"] }, { name: "instanceFamily", values: ["c5"] }],
    });
    expect(q.upfront).toBe(Math.round(0.123 * 26280 * 50) / 100);
    expect(q.hourly).toBeCloseTo(0.0615, 9);
    const out = await p.buy(it, q);
    expect(server.calls("CreateSavingsPlan")[0]!.params).toMatchObject({ commitment: "0.123", upfrontPaymentAmount: q.upfront.toFixed(2) });
    expect(server.purchases.savingsPlans[0]).toMatchObject({ planType: "EC2Instance", instanceFamily: "c5", region: "us-west-2" });
    expect(out.upfront).toBeCloseTo(q.upfront, 2);

    expect((await failureOf(p.quote(sp({ commitmentType: "ec2_instance_savings_plan", instanceFamily: "zz9", region: "us-west-2" })))).cause).toBe("no_offering");
    expect((await failureOf(p.quote(sp({ commitmentType: "ec2_instance_savings_plan" })))).cause).toBe("unsupported");
    expect((await failureOf(p.quote(sp({ amount: 0.0004 })))).cause).toBe("unsupported");
  });

  test("a database plan uses the Database plan type; dryRun checks offering rates and buys nothing", async () => {
    const p = purchaser();
    const it = sp({ commitmentType: "database_savings_plan", paymentOption: "no_upfront", amount: 2 });
    const q = await p.quote(it);
    expect(server.calls("DescribeSavingsPlansOfferings")[0]!.params.planTypes).toEqual(["Database"]);
    expect(q).toMatchObject({ upfront: 0, hourly: 2 });
    const { summary } = await p.dryRun(it, q);
    expect(summary).toContain("Savings Plans has no dry run");
    expect(server.calls("DescribeSavingsPlansOfferingRates")[0]!.params.savingsPlanOfferingIds).toEqual([q.offeringId]);
    expect(server.calls("CreateSavingsPlan")).toHaveLength(0);

    server.removeOffering(q.offeringId);
    expect((await failureOf(p.dryRun(it, q))).cause).toBe("no_offering");
  });

  test("quota and server errors map to limit_exceeded and a retryable unreachable", async () => {
    const p = purchaser();
    const it = sp();
    const q = await p.quote(it);
    server.failNext("CreateSavingsPlan", { code: "ServiceQuotaExceededException", status: 402 });
    expect((await failureOf(p.buy(it, q))).cause).toBe("limit_exceeded");
    server.failNext("CreateSavingsPlan", { code: "InternalServerException", status: 500, times: 3 });
    expect(await failureOf(p.buy(it, q))).toMatchObject({ cause: "unreachable", retryable: true });
    // An answer lost after the plan was made: the SDK's retry carries the same clientToken, so it is still one plan.
    server.failNext("CreateSavingsPlan", { code: "InternalServerException", status: 500, afterEffect: true });
    const out = await p.buy(it, q);
    expect(server.purchases.savingsPlans).toHaveLength(1);
    expect(out.providerPurchaseId).toBe(server.purchases.savingsPlans[0]!.savingsPlanId);
    expect(new Set(server.calls("CreateSavingsPlan").map((c) => c.idempotencyToken))).toEqual(new Set([it.token]));
  });
});

describe("inventory and connection check", () => {
  test("listCommitments lists RIs, RDS reservations and savings plans of every region with their terms and states", async () => {
    const p = purchaser();
    const ri = item({ region: "us-west-2", paymentOption: "no_upfront", contractTerm: "three_year", amount: 3 });
    const db = item({ instanceType: "db.m5.large", amount: 1 });
    const plan = item({ commitmentType: "ec2_instance_savings_plan", instanceType: null, instanceFamily: "m5", region: "us-east-1", amount: 0.5, paymentOption: "partial_upfront" });
    const riOut = await p.buy(ri, await p.quote(ri));
    const dbOut = await p.buy(db, await p.quote(db));
    const planOut = await p.buy(plan, await p.quote(plan));
    server.setState(dbOut.providerPurchaseId, "active");
    server.setState(planOut.providerPurchaseId, "retired");

    const list = await p.listCommitments(["us-east-1", "us-west-2"]);
    expect(list).toHaveLength(3);
    const byId = new Map(list.map((c) => [c.providerCommitmentId, c]));
    expect(byId.get(riOut.providerPurchaseId)).toMatchObject({ commitmentType: "reserved_instance", category: "Usage", contractTerm: "three_year", paymentOption: "no_upfront", region: "us-west-2", instanceType: "m5.large", instanceFamily: "m5", amount: 3, upfrontCost: 0, state: "pending" });
    expect(byId.get(riOut.providerPurchaseId)!.recurringHourlyCost).toBeCloseTo(riOut.hourly, 9);
    expect(byId.get(dbOut.providerPurchaseId)).toMatchObject({ commitmentType: "reserved_instance", category: "Usage", contractTerm: "one_year", paymentOption: "all_upfront", region: "us-east-1", instanceType: "db.m5.large", amount: 1, state: "active" });
    expect(byId.get(planOut.providerPurchaseId)).toMatchObject({ commitmentType: "ec2_instance_savings_plan", category: "Spend", contractTerm: "one_year", paymentOption: "partial_upfront", region: "us-east-1", instanceFamily: "m5", amount: 0.5, state: "retired" });
    expect(new Set(server.calls("DescribeReservedInstances").map((c) => c.region))).toEqual(new Set(["us-east-1", "us-west-2"]));
    expect(new Set(server.calls("DescribeReservedDBInstances").map((c) => c.region))).toEqual(new Set(["us-east-1", "us-west-2"]));
  });

  test("check maps unknown keys to credentials, denied ones to permission and a dead endpoint to a retryable unreachable", async () => {
    await purchaser().check();
    expect(server.requests.at(-1)).toMatchObject({ service: "ec2", operation: "DescribeReservedInstances", signed: true, accessKeyId: "AKIATESTPURCHASER01" });

    const bad = await failureOf(purchaser({ access_key_id: "BADKEY0000000001" }, "wrong-secret-value").check());
    expect(bad.cause).toBe("credentials");
    expect(bad.message).not.toContain("wrong-secret-value");
    expect((await failureOf(purchaser({ access_key_id: "DENYKEY000000001" }).check())).cause).toBe("permission");

    const dead = await startAwsPurchasingServer();
    const url = dead.url;
    await dead.close();
    const down = await failureOf(purchaser({ endpoint_url: url }).check());
    expect(down).toMatchObject({ cause: "unreachable", retryable: true });
  });

  test("a role is assumed once through STS at the endpoint, and its session signs every call", async () => {
    const p = purchaser({ role_arn: "arn:aws:iam::111122223333:role/commitops-buyer", external_id: "ext-123" });
    await p.check();
    await p.quote(item({ commitmentType: "compute_savings_plan", instanceType: null, amount: 1 }));
    await p.quote(item({ region: "us-west-2" }));
    const assumed = server.calls("AssumeRole");
    expect(assumed).toHaveLength(1);
    expect(assumed[0]!.params).toMatchObject({ RoleArn: "arn:aws:iam::111122223333:role/commitops-buyer", ExternalId: "ext-123" });
    expect(assumed[0]!.accessKeyId).toBe("AKIATESTPURCHASER01");
    const others = server.requests.filter((r) => r.service !== "sts");
    expect(others.length).toBe(3);
    for (const r of others) expect(r.accessKeyId).toMatch(/^ASIA/);

    const denied = purchaser({ role_arn: "arn:aws:iam::111122223333:role/deny-all" });
    expect((await failureOf(denied.check())).cause).toBe("permission");
  });

  test("the server refuses unsigned requests as AWS does", async () => {
    const res = await fetch(server.url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "Action=DescribeReservedInstances&Version=2016-11-15" });
    expect(res.status).toBe(401);
    expect(await res.text()).toContain("<Code>AuthFailure</Code>");
    expect(server.requests.at(-1)).toMatchObject({ service: "ec2", signed: false, status: 401 });
    expect(server.purchases.ec2).toHaveLength(0);
  });
});
