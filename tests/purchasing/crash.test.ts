/**
 * Exactly one purchase per item across crashes and replicas (issue 13), on PostgreSQL with real
 * processes: `commitops autopurchase tick` is killed with SIGKILL at each boundary of the state
 * machine (after the intent is committed and before the provider is called; after the provider
 * said yes and before our commit), then two replicas tick at once. The loopback AWS server lives
 * in this process, so it remembers every purchase across the kills.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { startAwsPurchasingServer, type AwsPurchasingServer } from "../helpers/awsPurchasingServer.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createTemplate } from "../../lib/templates/service.ts";
import { utcDate } from "../../lib/templates/schedule.ts";
import { createPurchasingConnection } from "../../lib/purchasing/connections.ts";
import { secretBoxOf } from "../../lib/secrets/index.ts";
import { seedCatalog, seedUsage } from "../planning/fixtures.ts";
import { startAzurePurchasingServer, type AzurePurchasingServer } from "../helpers/azurePurchasingServer.ts";
import { startGcpComputeServer, type GcpComputeServer } from "../helpers/gcpComputeServer.ts";
import { addComputeSavingsPlanOffer, AZURE_D2S, GCP_N2, seedWorkload, type Workload } from "./fixtures.ts";

const ROOT = join(import.meta.dir, "..", "..");
const SECRET_KEY = randomBytes(32).toString("base64");
const LEASE_SECONDS = 600;
/**
 * Every process here runs on a fixed clock (`autopurchase tick --now`), never the wall's: "within
 * the lease" and "after it lapsed" are instants, not sleeps, so a slow machine (a process start
 * that takes seconds) cannot turn one into the other. Noon UTC today: the day never turns within a test.
 */
const T0 = new Date(`${utcDate(new Date())}T12:00:00.000Z`);
const WITHIN_LEASE = new Date(T0.getTime() + LEASE_SECONDS * 1000 - 1000);
const LEASE_LAPSED = new Date(T0.getTime() + LEASE_SECONDS * 1000 + 1000);

interface Exit {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** One `commitops autopurchase tick` process at instant `at`: a replica's auto-purchase job, once. */
function tick(url: string, at: Date, env: Record<string, string> = {}): Promise<Exit> {
  return cli(url, ["autopurchase", "tick", "--now", at.toISOString(), "--json"], env);
}

/** What every child needs to reach the loopback providers (the Azure one speaks HTTPS with a test CA). */
let childEnv: Record<string, string> = {};

function cli(url: string, args: string[], env: Record<string, string> = {}): Promise<Exit> {
  const child = spawn(process.execPath, ["scripts/main.ts", ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      LOG_LEVEL: "silent",
      SEED_DEMO: "false",
      COMMITOPS_SECRET_KEY: SECRET_KEY,
      CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: "true",
      PURCHASE_LEASE_SECONDS: String(LEASE_SECONDS),
      ...childEnv,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

// Needs a PostgreSQL server shared by several processes: skipped without TEST_DATABASE_URL.
const maybe = process.env.TEST_DATABASE_URL ? describe : describe.skip;

maybe("purchases across crashes and replicas [postgres]", () => {
  let db: TestDatabase;
  let s: Services;
  let aws: AwsPurchasingServer;
  let azure: AzurePurchasingServer;
  let gcp: GcpComputeServer;

  beforeAll(async () => {
    azure = await startAzurePurchasingServer();
    gcp = await startGcpComputeServer();
    childEnv = azure.childEnv;
    db = await createTestDatabase("postgres");
    s = createServices(db.handle, loadConfig({ ...process.env }, { jobsEnabled: false, seedDemo: false, secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true }), createLogger("silent"));
    aws = await startAwsPurchasingServer();
  });
  afterAll(async () => {
    await aws?.close();
    await azure?.close();
    await gcp?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    aws.reset();
    // The provider's clock too: purchase start times are the ones a recovery's time window compares.
    aws.setNow(T0);
    azure.reset();
    gcp.reset();
    await db.handle.query("UPDATE commitment_plan_templates SET schedule = NULL, start_date = NULL");
  });

  const items = (orgId: string) => db.handle.query<any>("SELECT * FROM purchase_items WHERE org_id = $1 ORDER BY position", [orgId]);
  const realPurchaseCalls = (op: string) => aws.calls(op).filter((c) => c.params.DryRun !== "true" && c.status === 200);

  /** An org buying 4 m5.large (reserved instances, or a compute savings plan) daily, without approval, for real. */
  async function scheduled(kind: "reserved_instance" | "compute_savings_plan", opts: { requireApproval?: boolean } = {}): Promise<string> {
    const org = await createOrganization(s.db, { name: `Crash org ${kind}` });
    await seedCatalog(s.db, org.id);
    const now = T0;
    await seedUsage(s.db, org.id, new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000), 7 * 24, () => 4);
    if (kind === "compute_savings_plan") {
      await addComputeSavingsPlanOffer(s.db, org.id);
    }
    await createPurchasingConnection(
      s.db,
      secretBoxOf(s.config),
      org.id,
      { name: "AWS", kind: "aws_purchasing", dry_run: false, config: { region: "us-east-1", access_key_id: "AKIACRASHTEST0000001", endpoint_url: aws.url }, secrets: { secret_access_key: "crash-secret" } },
      { now, allowPrivateEndpoints: true },
    );
    await createTemplate(
      s.db,
      org.id,
      {
        provider: "aws",
        name: "Nightly",
        configuration: { contract_specs: [{ commitment_type: kind, contract_term: "one_year", payment_option: "no_upfront" }], lookback_days: 7 },
        auto_purchase: { schedule: "daily", start_date: utcDate(now), enabled: true, min_monthly_savings: 0, require_approval: opts.requireApproval ?? false },
      },
      now,
    );
    return org.id;
  }

  test("killed after the provider said yes, before our commit: two replicas recover it, the RI is bought once", async () => {
    const orgId = await scheduled("reserved_instance");
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "after_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(crashed.stderr).toContain("purchase-crash after_provider");
    expect(aws.purchases.ec2).toHaveLength(1);
    let [item] = await items(orgId);
    expect(item).toMatchObject({ status: "submitting", provider_purchase_id: null, attempts: 1 });
    expect(aws.purchases.ec2[0]!.tags["commitops:purchase-token"]).toBe(item.token);

    // Within the lease (its last second) nobody touches it, however long this process took to start.
    const early = await tick(db.url!, WITHIN_LEASE);
    expect(early.code).toBe(0);
    expect((await items(orgId))[0].status).toBe("submitting");

    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    [item] = await items(orgId);
    expect(item).toMatchObject({ status: "confirmed", provider_purchase_id: aws.purchases.ec2[0]!.reservedInstancesId });
    expect(aws.purchases.ec2).toHaveLength(1);
    expect(realPurchaseCalls("PurchaseReservedInstancesOffering")).toHaveLength(1);
    const [{ n }] = await db.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitments WHERE org_id = $1 AND source = 'purchase'", [orgId]);
    expect(Number(n)).toBe(1);
    const [order] = await db.handle.query<any>("SELECT status FROM purchases WHERE org_id = $1", [orgId]);
    expect(order.status).toBe("confirmed");
  }, 60_000);

  test("killed after the intent was committed, before the provider was called: recovery looks, finds nothing, buys once", async () => {
    const orgId = await scheduled("reserved_instance");
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "before_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(aws.purchases.ec2).toHaveLength(0);
    expect(realPurchaseCalls("PurchaseReservedInstancesOffering")).toHaveLength(0);
    expect((await items(orgId))[0]).toMatchObject({ status: "submitting" });
    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(aws.purchases.ec2).toHaveLength(1);
    expect((await items(orgId))[0]).toMatchObject({ status: "confirmed", provider_purchase_id: aws.purchases.ec2[0]!.reservedInstancesId });
    expect(aws.calls("DescribeReservedInstances").length).toBeGreaterThan(0);
  }, 60_000);

  test("the EC2 purchase went through but its tag did not: recovery finds it by offering and time window, still once", async () => {
    const orgId = await scheduled("reserved_instance");
    aws.failNext("CreateTags", { code: "InternalError", status: 500, times: 10 });
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "after_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(aws.purchases.ec2).toHaveLength(1);
    expect(aws.purchases.ec2[0]!.tags["commitops:purchase-token"]).toBeUndefined();
    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(aws.purchases.ec2).toHaveLength(1);
    const [item] = await items(orgId);
    expect(item).toMatchObject({ status: "confirmed", provider_purchase_id: aws.purchases.ec2[0]!.reservedInstancesId });
  }, 60_000);

  test("a savings plan killed after CreateSavingsPlan answered: found under its clientToken, one plan", async () => {
    const orgId = await scheduled("compute_savings_plan");
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "after_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(aws.purchases.savingsPlans).toHaveLength(1);
    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(aws.purchases.savingsPlans).toHaveLength(1);
    const [item] = await items(orgId);
    expect(item).toMatchObject({ status: "confirmed", commitment_type: "compute_savings_plan", provider_purchase_id: aws.purchases.savingsPlans[0]!.savingsPlanId });
    expect(new Set(aws.calls("CreateSavingsPlan").map((c) => c.idempotencyToken))).toEqual(new Set([item.token]));
  }, 60_000);

  test("two replicas ticking the same due schedule place one order and buy each item once", async () => {
    const orgId = await scheduled("reserved_instance");
    const [a, b] = await Promise.all([tick(db.url!, T0), tick(db.url!, T0)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const [{ n }] = await db.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM purchases WHERE org_id = $1", [orgId]);
    expect(Number(n)).toBe(1);
    expect(aws.purchases.ec2).toHaveLength(1);
    expect(realPurchaseCalls("PurchaseReservedInstancesOffering")).toHaveLength(1);
    expect((await items(orgId))[0].status).toBe("confirmed");
  }, 60_000);

  test("CLI: purchases list shows the pending approval, approve buys it once, a second approve is refused", async () => {
    const orgId = await scheduled("reserved_instance", { requireApproval: true });
    expect((await tick(db.url!, T0)).code).toBe(0);
    expect(aws.purchases.ec2).toHaveLength(0);
    const listed = await cli(db.url!, ["purchases", "list", "--org", orgId, "--status", "pending_approval", "--json"]);
    expect(listed.code).toBe(0);
    const [pending] = JSON.parse(listed.stdout);
    expect(pending.status).toBe("pending_approval");
    const approved = await cli(db.url!, ["purchases", "approve", pending.id, "--org", orgId, "--note", "capacity for Q3", "--json"]);
    expect(approved.code).toBe(0);
    const view = JSON.parse(approved.stdout);
    expect(view).toMatchObject({ status: "confirmed", decision_note: "capacity for Q3" });
    expect(view.decided_by).toStartWith("cli:");
    expect(aws.purchases.ec2).toHaveLength(1);
    const again = await cli(db.url!, ["purchases", "approve", pending.id, "--org", orgId]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("only a purchase pending approval can be approved");
    expect(aws.purchases.ec2).toHaveLength(1);
  }, 60_000);

  /** An org running 3 instances of a workload, the provider's purchasing connection (live) and a daily template without approval. */
  async function scheduledAt(w: Workload): Promise<string> {
    const org = await createOrganization(s.db, { name: `Crash org ${w.provider}` });
    const now = T0;
    await seedWorkload(s.db, org.id, w, new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000), 7 * 24, 3);
    const connection =
      w.provider === "azure"
        ? { kind: "azure_purchasing" as const, config: { tenant_id: azure.tenantId, client_id: azure.clientId, billing_scope_id: "/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590", endpoint_url: azure.url, authority_host: azure.authorityHost }, secrets: { client_secret: azure.clientSecret } }
        : { kind: "gcp_purchasing" as const, config: { project_id: gcp.projectId, endpoint_url: gcp.url }, secrets: { service_account_key: gcp.serviceAccountKey } };
    await createPurchasingConnection(s.db, secretBoxOf(s.config), org.id, { name: w.provider, dry_run: false, ...connection }, { now, allowPrivateEndpoints: true });
    const o = w.offer;
    await createTemplate(
      s.db,
      org.id,
      {
        provider: w.provider,
        name: "Nightly",
        configuration: { contract_specs: [{ commitment_type: o.commitmentType, contract_term: o.contractTerm as any, payment_option: o.paymentOption as any }], lookback_days: 7 },
        auto_purchase: { schedule: "daily", start_date: utcDate(now), enabled: true, min_monthly_savings: 0, require_approval: false },
      },
      now,
    );
    return org.id;
  }

  test("Azure: a reservation killed after the provider said yes is found under its alias by two replicas, one order", async () => {
    const orgId = await scheduledAt(AZURE_D2S);
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "after_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(azure.orders).toHaveLength(1);
    let [item] = await items(orgId);
    expect(item).toMatchObject({ status: "submitting", commitment_type: "reservation" });
    expect(azure.orders[0]!).toMatchObject({ kind: "reservation", aliasName: `commitops-${item.token}`, sku: "Standard_D2s_v3", location: "eastus", quantity: 3, term: "P1Y", billingPlan: "Monthly" });
    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    [item] = await items(orgId);
    expect(item.status).toBe("confirmed");
    expect(item.provider_purchase_id).toBe(azure.orders[0]!.orderId);
    expect(azure.orders).toHaveLength(1);
    const armCalls = azure.requests.filter((r) => !["openidConfiguration", "instanceDiscovery", "token"].includes(r.operation));
    expect(armCalls.length).toBeGreaterThan(0);
    expect(armCalls.every((r) => r.bearer)).toBe(true);
    expect(azure.requests.filter((r) => r.operation === "reservationOrderAlias.create" && r.status < 300).map((r) => r.aliasName)).toEqual([`commitops-${item.token}`]);
  }, 60_000);

  test("GCP: a commitment killed after the insert was accepted is found by its name, one commitment", async () => {
    const orgId = await scheduledAt(GCP_N2);
    const crashed = await tick(db.url!, T0, { COMMITOPS_TEST_PURCHASE_CRASH: "after_provider" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(gcp.commitments).toHaveLength(1);
    let [item] = await items(orgId);
    expect(item.status).toBe("submitting");
    expect(gcp.commitments[0]!.name).toBe(`commitops-${item.token}`);
    const [a, b] = await Promise.all([tick(db.url!, LEASE_LAPSED), tick(db.url!, LEASE_LAPSED)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    [item] = await items(orgId);
    expect(item.status).toBe("confirmed");
    expect(gcp.commitments).toHaveLength(1);
    expect(item.provider_purchase_id).toBe(gcp.commitments[0]!.selfLink);
    const inserts = gcp.requests.filter((r) => r.call === "regionCommitments.insert");
    expect(inserts).toHaveLength(1);
    expect(inserts[0]!.query.requestId).toBe(item.token);
  }, 60_000);
});
