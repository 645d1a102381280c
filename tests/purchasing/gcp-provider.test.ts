/**
 * The GCP purchaser on the real @google-cloud/compute clients against a loopback Compute Engine
 * (v1 REST wire format, operations, OAuth2 JWT bearer grant): what one purchase sends and holds,
 * that a token buys at most once (lost answers, repeated inserts, names already taken), what
 * dry runs, quotes and inventory read, and each provider refusal mapped to its failure cause.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { gcpPurchaser } from "../../lib/purchasing/providers/gcp.ts";
import { PurchaseFailure, THREE_YEAR_SECONDS, YEAR_SECONDS, type ProviderPurchaser, type PurchaseItemSpec } from "../../lib/purchasing/providers/types.ts";
import { startGcpComputeServer, type GcpComputeServer } from "../helpers/gcpComputeServer.ts";
import { failureOf } from "./fixtures.ts";

let server: GcpComputeServer;
const purchasers: ProviderPurchaser[] = [];

beforeAll(async () => {
  server = await startGcpComputeServer({
    regions: { "us-central1": ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"], "europe-west1": ["europe-west1-b", "europe-west1-c", "europe-west1-d"] },
    machineTypes: [
      { name: "n2-standard-4", guestCpus: 4, memoryMb: 16384 },
      { name: "n1-standard-4", guestCpus: 4, memoryMb: 15360 },
      { name: "c3-standard-8", guestCpus: 8, memoryMb: 32768 },
      { name: "m1-ultramem-40", guestCpus: 40, memoryMb: 983040 },
      { name: "e2-medium", guestCpus: 2, memoryMb: 4096, isSharedCpu: true },
      { name: "c2d-standard-8", guestCpus: 8, memoryMb: 32768, zones: ["us-central1-c"] },
      { name: "a2-highgpu-1g", guestCpus: 12, memoryMb: 87040, accelerators: [{ guestAcceleratorType: "nvidia-tesla-a100", guestAcceleratorCount: 1 }] },
    ],
  });
});
afterAll(async () => {
  for (const p of purchasers) await p.close?.();
  await server.close();
});
beforeEach(() => {
  server.reset();
  server.operationPolls = 1;
});

function purchaser(overrides: { key?: string; endpoint?: string; project?: string; operationTimeoutMs?: number } = {}): ProviderPurchaser {
  const p = gcpPurchaser(
    { project_id: overrides.project ?? server.projectId, endpoint_url: overrides.endpoint ?? server.url },
    { service_account_key: overrides.key ?? server.serviceAccountKey },
    { operationTimeoutMs: overrides.operationTimeoutMs },
  );
  purchasers.push(p);
  return p;
}

function item(fields: Partial<PurchaseItemSpec> = {}): PurchaseItemSpec {
  return {
    token: randomUUID(),
    commitmentType: "resource_cud",
    contractTerm: "one_year",
    paymentOption: "no_upfront",
    region: "us-central1",
    instanceType: "n2-standard-4",
    instanceFamily: "n2",
    amount: 3,
    maxUpfront: 0,
    plannedHourly: 0.4275,
    submittedAt: new Date(),
    ...fields,
  };
}

const calls = (name: string) => server.requests.filter((r) => r.call === name);
/** A key of the same service account signed with a private key Google does not know. */
function foreignKey(): string {
  const key = JSON.parse(server.serviceAccountKey);
  key.private_key = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return JSON.stringify(key);
}

describe("buying a resource CUD", () => {
  test("inserts one commitment named after the token, sized from the machine type, and waits for its operation", async () => {
    server.operationPolls = 3;
    const p = purchaser();
    const spec = item();
    const quote = await p.quote(spec);
    const bought = await p.buy(spec, quote);

    const inserts = calls("regionCommitments.insert");
    expect(inserts).toHaveLength(1);
    expect(inserts[0]!.path).toBe(`/compute/v1/projects/${server.projectId}/regions/us-central1/commitments`);
    expect(inserts[0]!.query.requestId).toBe(spec.token);
    expect(inserts[0]!.body).toMatchObject({
      name: `commitops-${spec.token}`,
      category: "MACHINE",
      type: "GENERAL_PURPOSE_N2",
      plan: "TWELVE_MONTH",
      resources: [
        { type: "VCPU", amount: "12" },
        { type: "MEMORY", amount: "49152" },
      ],
    });
    // PENDING on insert, RUNNING, RUNNING, DONE: three waits.
    expect(calls("regionOperations.wait")).toHaveLength(3);
    expect(server.requests.filter((r) => r.call !== "oauth2.token").every((r) => r.bearer)).toBe(true);
    expect(calls("oauth2.token").length).toBeGreaterThan(0);

    const [held] = server.commitments;
    expect(server.commitments).toHaveLength(1);
    expect(held!.status).toBe("ACTIVE");
    expect(bought).toEqual({
      providerPurchaseId: held!.selfLink,
      upfront: 0,
      hourly: 0.4275,
      currency: "USD",
      startsAt: new Date(held!.startTimestamp),
      endsAt: new Date(held!.endTimestamp),
      providerState: "ACTIVE",
    });
    expect(bought.endsAt!.getTime() - bought.startsAt!.getTime()).toBeGreaterThanOrEqual(YEAR_SECONDS * 1000);
  });

  test("three-year and insured terms are bought as THIRTY_SIX_MONTH", async () => {
    const p = purchaser();
    for (const contractTerm of ["three_year", "one_year_gris", "thirty_day_gris"]) {
      const spec = item({ contractTerm, amount: 1 });
      const quote = await p.quote(spec);
      expect(quote).toEqual({ offeringId: "GENERAL_PURPOSE_N2/THIRTY_SIX_MONTH/n2-standard-4", upfront: 0, hourly: spec.plannedHourly, currency: "USD", durationSeconds: THREE_YEAR_SECONDS });
      await p.buy(spec, quote);
    }
    expect(server.commitments.map((c) => c.plan)).toEqual(["THIRTY_SIX_MONTH", "THIRTY_SIX_MONTH", "THIRTY_SIX_MONTH"]);
  });

  test("each machine family gets its commitment type, and a machine type missing from the first zones is found in another", async () => {
    const p = purchaser();
    const offering = async (instanceType: string) => (await p.quote(item({ instanceType, instanceFamily: instanceType.split("-")[0]! }))).offeringId;
    expect(await offering("n1-standard-4")).toBe("GENERAL_PURPOSE/TWELVE_MONTH/n1-standard-4");
    expect(await offering("c3-standard-8")).toBe("COMPUTE_OPTIMIZED_C3/TWELVE_MONTH/c3-standard-8");
    expect(await offering("m1-ultramem-40")).toBe("MEMORY_OPTIMIZED/TWELVE_MONTH/m1-ultramem-40");
    expect(await offering("c2d-standard-8")).toBe("COMPUTE_OPTIMIZED_C2D/TWELVE_MONTH/c2d-standard-8");
    expect(calls("machineTypes.get").filter((r) => r.path.endsWith("/c2d-standard-8")).map((r) => r.path.split("/")[6])).toEqual(["us-central1-a", "us-central1-b", "us-central1-c"]);
  });

  test("a region without an -a zone is looked up through its own zones", async () => {
    const p = purchaser();
    const spec = item({ region: "europe-west1" });
    await p.buy(spec, await p.quote(spec));
    expect(calls("machineTypes.get").map((r) => r.path.split("/")[6])).toEqual(["europe-west1-b", "europe-west1-b"]);
    expect(server.commitments[0]!.region).toEndWith("/regions/europe-west1");
  });
});

describe("buying exactly once", () => {
  test("findExisting finds nothing before a purchase and buys nothing", async () => {
    const p = purchaser();
    expect(await p.findExisting(item(), new Set())).toBeNull();
    expect(calls("regionCommitments.insert")).toHaveLength(0);
    expect(server.commitments).toHaveLength(0);
  });

  test("a purchase whose answer was lost is found by its token, not bought again", async () => {
    const p = purchaser();
    const spec = item();
    const quote = await p.quote(spec);
    server.failNext("regionCommitments.insert", { drop: "after" });
    const lost = await failureOf(p.buy(spec, quote));
    expect(lost.cause).toBe("unreachable");
    expect(lost.retryable).toBe(true);

    const found = await p.findExisting(spec, new Set());
    expect(found?.providerPurchaseId).toBe(server.commitments[0]!.selfLink);
    expect(server.commitments).toHaveLength(1);
    expect(calls("regionCommitments.get").at(-1)!.path).toEndWith(`/commitments/commitops-${spec.token}`);
  });

  test("a buy repeated with the same token gets Compute's first operation back and creates nothing new", async () => {
    const p = purchaser();
    const spec = item();
    const quote = await p.quote(spec);
    const first = await p.buy(spec, quote);
    const again = await p.buy(spec, quote);
    expect(again.providerPurchaseId).toBe(first.providerPurchaseId);
    expect(server.commitments).toHaveLength(1);
    expect(calls("regionCommitments.insert").map((r) => r.query.requestId)).toEqual([spec.token, spec.token]);
  });

  test("a name already taken by this token (request id forgotten by Compute) answers 409 and the existing commitment is the purchase", async () => {
    const p = purchaser();
    const spec = item();
    const earlier = server.addCommitment("us-central1", { name: `commitops-${spec.token}` });
    const bought = await p.buy(spec, await p.quote(spec));
    expect(bought.providerPurchaseId).toBe(earlier.selfLink);
    expect(server.commitments).toHaveLength(1);
  });

  test("an insert whose operation outlasts the wait is found by its token afterwards", async () => {
    server.operationPolls = 1_000;
    const p = purchaser({ operationTimeoutMs: 300 });
    const spec = item();
    const stillRunning = await failureOf(p.buy(spec, await p.quote(spec)));
    expect(stillRunning.cause).toBe("unreachable");
    expect(stillRunning.retryable).toBe(true);
    expect(calls("regionOperations.wait").length).toBeGreaterThan(0);
    const found = await p.findExisting(spec, new Set());
    expect(found?.providerState).toBe("CREATING");
    expect(server.commitments).toHaveLength(1);
  });
});

describe("dry runs and shapes Compute cannot buy", () => {
  test("a dry run resolves the machine type and reads the region's commitments without inserting", async () => {
    const p = purchaser();
    const spec = item();
    const { summary } = await p.dryRun(spec, await p.quote(spec));
    expect(summary).toContain("n2-standard-4");
    expect(summary).toContain("12 vCPUs and 49152 MB");
    expect(summary).toContain("Nothing was bought");
    expect(calls("regionCommitments.get")).toHaveLength(1);
    expect(calls("regionCommitments.insert")).toHaveLength(0);
    expect(server.commitments).toHaveLength(0);
  });

  test("a dry run against a changed offering fails as price_changed", async () => {
    const p = purchaser();
    const spec = item();
    const quote = await p.quote(spec);
    const failure = await failureOf(p.dryRun(spec, { ...quote, offeringId: "GENERAL_PURPOSE_N2/THIRTY_SIX_MONTH/n2-standard-4" }));
    expect(failure.cause).toBe("price_changed");
  });

  test.each([
    ["spend_cud", { commitmentType: "spend_cud", instanceType: null, amount: 5 }, "Cloud Billing"],
    ["all_upfront", { paymentOption: "all_upfront" }, "no_upfront"],
    ["partial_upfront", { paymentOption: "partial_upfront" }, "no_upfront"],
    ["GPU machine type", { instanceType: "a2-highgpu-1g", instanceFamily: "a2" }, "reservation"],
    ["shared-core machine type", { instanceType: "e2-medium", instanceFamily: "e2" }, "shared-core"],
    ["fractional count", { amount: 1.5 }, "whole number"],
    ["no region", { region: null }, "region"],
  ] as const)("%s is unsupported, with what to do instead", async (_, fields, hint) => {
    const p = purchaser();
    const spec = item(fields as Partial<PurchaseItemSpec>);
    const failure = await failureOf(p.quote(spec));
    expect(failure.cause).toBe("unsupported");
    expect(failure.message).toContain(hint);
    expect((await failureOf(p.buy(spec, { offeringId: "x", upfront: 0, hourly: 0, currency: "USD", durationSeconds: YEAR_SECONDS }))).cause).toBe("unsupported");
    expect(calls("regionCommitments.insert")).toHaveLength(0);
  });

  test.each([
    ["a machine type Compute does not offer", { instanceType: "n2-standard-3" }],
    ["a family without a commitment type", { instanceType: "f1-micro", instanceFamily: "f1" }],
    ["a region Compute does not have", { region: "mars-north1" }],
  ] as const)("%s has no offering", async (_, fields) => {
    const failure = await failureOf(purchaser().quote(item(fields)));
    expect(failure.cause).toBe("no_offering");
  });
});

describe("provider refusals", () => {
  test("a key the token endpoint does not know fails as credentials, without echoing it", async () => {
    const key = foreignKey();
    const p = purchaser({ key });
    for (const failure of [await failureOf(p.check()), await failureOf(p.quote(item()))]) {
      expect(failure.cause).toBe("credentials");
      expect(failure.retryable).toBe(false);
      expect(failure.message).toContain("invalid_grant");
      expect(failure.message).not.toContain("PRIVATE KEY");
    }
    expect(calls("oauth2.token").length).toBeGreaterThan(0);
    expect(server.requests.filter((r) => r.call !== "oauth2.token")).toHaveLength(0);
  });

  test("a key that is not a service-account key fails as credentials before any call", async () => {
    const failure = await failureOf(purchaser({ key: '{"type":"authorized_user"}' }).check());
    expect(failure.cause).toBe("credentials");
    expect(server.requests).toHaveLength(0);
  });

  test("Compute answering 401 fails as credentials", async () => {
    const p = purchaser();
    await p.check();
    server.revokeTokens();
    const failure = await failureOf(p.findExisting(item(), new Set()));
    expect(failure.cause).toBe("credentials");
  });

  test("403 fails as permission; another project fails check() as permission", async () => {
    const p = purchaser();
    server.failNext("regionCommitments.insert", { status: 403, message: "Required 'compute.commitments.create' permission for 'projects/commitops-test-project'" });
    const spec = item();
    const failure = await failureOf(p.buy(spec, await p.quote(spec)));
    expect(failure.cause).toBe("permission");
    expect(failure.message).toContain("compute.commitments.create");
    expect(server.commitments).toHaveLength(0);
    expect((await failureOf(purchaser({ project: "someone-elses-project" }).check())).cause).toBe("permission");
  });

  test("throttling, 5xx and dropped connections are unreachable and retryable, and buy nothing", async () => {
    const p = purchaser();
    const spec = item();
    const quote = await p.quote(spec);
    for (const fault of [{ status: 429 }, { status: 503 }, { status: 403, reason: "rateLimitExceeded" }, { drop: "before" as const }]) {
      server.failNext("regionCommitments.insert", fault);
      const failure = await failureOf(p.buy(spec, quote));
      expect([failure.cause, failure.retryable]).toEqual(["unreachable", true]);
    }
    expect(server.commitments).toHaveLength(0);
    // The next attempt with the same token buys once.
    await p.buy(spec, quote);
    expect(server.commitments).toHaveLength(1);
  });

  test("a Compute endpoint that refuses connections is unreachable", async () => {
    const failure = await failureOf(purchaser({ endpoint: "http://127.0.0.1:1" }).check());
    expect([failure.cause, failure.retryable]).toEqual(["unreachable", true]);
  });

  test("a token endpoint answering 5xx is unreachable, not a credentials failure", async () => {
    server.failNext("oauth2.token", { status: 503 }, 10);
    const failure = await failureOf(purchaser().check());
    expect([failure.cause, failure.retryable]).toEqual(["unreachable", true]);
  });

  test("an operation ending in QUOTA_EXCEEDED is limit_exceeded, and creates nothing", async () => {
    const limited = await startGcpComputeServer({ committedCpuQuota: 8 });
    try {
      const p = gcpPurchaser({ project_id: limited.projectId, endpoint_url: limited.url }, { service_account_key: limited.serviceAccountKey });
      purchasers.push(p);
      const spec = item();
      const failure = await failureOf(p.buy(spec, await p.quote(spec)));
      expect(failure.cause).toBe("limit_exceeded");
      expect(failure.message).toContain("QUOTA_EXCEEDED");
      expect(limited.commitments).toHaveLength(0);
      expect(await p.findExisting(spec, new Set())).toBeNull();
    } finally {
      await limited.close();
    }
  });

  test("an operation ending in another error is refused", async () => {
    const p = purchaser();
    const spec = item();
    server.failNext("regionCommitments.insert", { operationError: { code: "CONDITION_NOT_MET", message: "The commitment conflicts with an existing one." } });
    const failure = await failureOf(p.buy(spec, await p.quote(spec)));
    expect([failure.cause, failure.retryable]).toEqual(["refused", false]);
    expect(failure.message).toContain("CONDITION_NOT_MET");
    expect(server.commitments).toHaveLength(0);
  });
});

describe("inventory and check", () => {
  test("lists every region's commitments, paged, with state, term and amount", async () => {
    const p = purchaser();
    const ours = item({ amount: 2 });
    await p.buy(ours, await p.quote(ours));
    const past = (years: number) => new Date(Date.now() - years * 365 * 86_400_000).toISOString();
    server.addCommitment("us-central1", { name: "expired-n1", status: "EXPIRED", type: "GENERAL_PURPOSE", plan: "THIRTY_SIX_MONTH", startTimestamp: past(4), endTimestamp: past(1) });
    server.addCommitment("us-central1", { name: "cancelled", status: "CANCELLED" });
    server.addCommitment("europe-west1", { name: "upcoming-c2d", status: "NOT_YET_ACTIVE", type: "COMPUTE_OPTIMIZED_C2D", resources: [{ type: "VCPU", amount: "16" }, { type: "MEMORY", amount: "65536" }] });
    for (let i = 0; i < 501; i++) server.addCommitment("us-central1", { name: `bulk-${i}` });

    const listed = await p.listCommitments(["us-central1", "europe-west1", "us-central1"]);
    expect(listed).toHaveLength(505);
    expect(calls("regionCommitments.list").filter((r) => r.path.includes("/us-central1/"))).toHaveLength(2);
    const byName = new Map(listed.map((c) => [c.name, c]));
    expect(byName.get(`commitops-${ours.token}`)).toMatchObject({ commitmentType: "resource_cud", category: "Usage", contractTerm: "one_year", paymentOption: "no_upfront", region: "us-central1", instanceType: "n2-standard-4", instanceFamily: "n2", amount: 2, state: "active" });
    expect(byName.get("expired-n1")).toMatchObject({ state: "retired", contractTerm: "three_year", instanceFamily: "n1", amount: 4, instanceType: null });
    expect(byName.get("cancelled")!.state).toBe("retired");
    expect(byName.get("upcoming-c2d")).toMatchObject({ state: "pending", region: "europe-west1", instanceFamily: "c2d", amount: 16 });
    expect(byName.get("bulk-500")!.providerCommitmentId).toEndWith("/regions/us-central1/commitments/bulk-500");
  });

  test("check() makes one authenticated read and buys nothing", async () => {
    await purchaser().check();
    const api = server.requests.filter((r) => r.call !== "oauth2.token");
    expect(api.map((r) => [r.call, r.query.maxResults, r.bearer])).toEqual([["regionCommitments.list", "1", true]]);
  });
});
