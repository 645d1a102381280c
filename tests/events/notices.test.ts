/**
 * The events of the jobs, through the real flow: period.finalized by the freeze (job and CLI
 * path), commitment.expiring by the daily job run day after day on a fixed clock (90/30/7 days,
 * each once, the nearest only for a commitment first seen late), anomaly.detected by the daily
 * scan after a file import, catalog.refresh_failed by the daily refresh against a failing
 * loopback price API (to the orgs that buy from the catalog or asked for it, once a day), and a
 * scan whose transaction rolls back leaves no event. Each event's data validates against its
 * catalog schema and its links open the right API resource and console page. Both drivers.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Value } from "@sinclair/typebox/value";
import { eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { setReportHidden } from "../../lib/reports/service.ts";
import { commitments, commitmentPlanTemplates, webhookEndpoints } from "../../lib/db/schema/index.ts";
import { EVENT_CATALOG, type EventType } from "../../lib/events/catalog.ts";
import { emitEvent } from "../../lib/events/emit.ts";
import { runScan, type ScanJob } from "../../lib/events/scans.ts";
import { freezePeriodsJob } from "../../jobs/freeze-periods.ts";
import { anomalyScanJob, commitmentExpiryJob } from "../../jobs/event-scans.ts";
import { catalogRefreshJob } from "../../jobs/catalog-refresh.ts";
import { startAwsPricingServer, type AwsPricingServer } from "../helpers/awsPricingServer.ts";
import { startAzurePricesServer, type AzurePricesServer } from "../helpers/azurePricesServer.ts";

const DAY = 86_400_000;
const NOW0 = Date.parse("2026-12-01T06:00:00Z");

describeEachDb("events: periods, expiring commitments, anomalies and the price catalog", (driver) => {
  let clock = new Date(NOW0);
  const t = useTestApp(driver, { now: () => clock, config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  let aws: AwsPricingServer;
  let azure: AzurePricesServer;

  beforeAll(async () => {
    [aws, azure] = await Promise.all([startAwsPricingServer(), startAzurePricesServer({ pageSize: 20 })]);
  });
  afterAll(async () => {
    await Promise.all([aws?.close(), azure?.close()]);
  });

  async function eventsOf(type: EventType, org: { id: string; key: string }) {
    const r = await t.request("GET", `/beta/v1/org/${org.id}/events?type=${type}&order=oldest_first&page_size=500`, { key: org.key });
    expect(r.status).toBe(200);
    const list = (await r.json()) as any[];
    for (const e of list) {
      const schema = EVENT_CATALOG[type].data;
      expect(Value.Check(schema, e.data), `${type}: ${JSON.stringify([...Value.Errors(schema, e.data)].slice(0, 3))}`).toBe(true);
      expect(Object.keys(e.data).sort()).toEqual(Object.keys((schema as any).properties).sort());
    }
    return list;
  }

  async function followApi(e: any, org: { key: string }) {
    const u = new URL(e.links.api);
    expect(u.origin).toBe("http://localhost");
    const r = await t.request("GET", `${u.pathname}${u.search}`, { key: org.key });
    expect(r.status, e.links.api).toBe(200);
    return r.json();
  }

  const usage = (month: string, next: string, day: string, cost: number, over: Record<string, string | number> = {}) => ({
    BillingPeriodStart: `${month}-01T00:00:00Z`,
    BillingPeriodEnd: `${next}-01T00:00:00Z`,
    ChargePeriodStart: `${month}-${day}T00:00:00Z`,
    ChargePeriodEnd: `${month}-${day}T01:00:00Z`,
    BilledCost: cost,
    EffectiveCost: cost,
    ListCost: cost,
    ContractedCost: cost,
    ...over,
  });

  test("period.finalized: the freeze job finalizes September (once), the CLI's close + freeze November; links open the month's report", async () => {
    const org = await t.newOrg("Periods org");
    clock = new Date(NOW0);
    await importCsvText(t, org.id, focusCsv([usage("2026-09", "2026-10", "03", 12.5), usage("2026-11", "2026-12", "04", 7.25)]), { now: clock });
    await freezePeriodsJob.run(t.s);
    await freezePeriodsJob.run(t.s);
    let list = await eventsOf("period.finalized", org);
    expect(list.length).toBe(1);
    expect(list[0].data).toMatchObject({ provider: "aws", period: "2026-09", year: 2026, month: 9, finalized_at: clock.toISOString() });
    expect(list[0].data.closed_at).toBe(clock.toISOString());
    expect(list[0].data.reports).toContain("cloud_bill_by_account");
    expect(list[0].links).toEqual({
      api: `http://localhost/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account?year=2026&month=9`,
      console: "http://localhost/app/reports?report=cloud_bill_by_account&year=2026&month=9",
    });
    const report = await followApi(list[0], org);
    expect(JSON.stringify(report)).toContain("12.5");
    // The CLI path (`periods close` then the freeze of that period); a hidden report is not linked nor listed.
    await setReportHidden(t.s.db, org.id, "cloud_bill_by_account", true);
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-11", clock);
    await freezeClosedPeriods(t.s.db, clock, { orgId: org.id, provider: "aws", month: "2026-11" });
    list = await eventsOf("period.finalized", org);
    expect(list.map((e) => e.data.period)).toEqual(["2026-09", "2026-11"]);
    expect(list[1].data.reports).not.toContain("cloud_bill_by_account");
    expect(list[1].links.api).toBe(`http://localhost/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_service?year=2026&month=11`);
    await followApi(list[1], org);
    // Another org's log has none of them.
    expect(await eventsOf("period.finalized", t.org)).toEqual([]);
  });

  test("commitment.expiring: the daily job day after day for 100 days: 90, 30 and 7 days before each end, once each; first seen late, only the nearest", async () => {
    const org = await t.newOrg("Commitments org");
    const other = await t.newOrg("Other commitments org");
    clock = new Date(NOW0);
    // The org's AWS bill is in EUR: the commitments' currency.
    await importCsvText(t, org.id, focusCsv([usage("2026-11", "2026-12", "03", 40, { BillingCurrency: "EUR" })]), { now: clock });
    const at = (days: number) => new Date(NOW0 + days * DAY);
    const rows = await t.s.db
      .insert(commitments)
      .values([
        // A: a savings plan, 3 $/h, ends in 95 days: its three notices to come.
        { orgId: org.id, provider: "aws", providerCommitmentId: "arn:aws:savingsplans::1:savingsplan/sp-a", name: "A", commitmentType: "compute_savings_plan", category: "Spend", contractTerm: "one_year", paymentOption: "no_upfront", startsAt: at(95 - 365), endsAt: at(95), amount: "3", upfrontCost: "0", recurringHourlyCost: "3", holdingAccountId: "acct-a" },
        // B: first seen 5 days before its end: the 7-day notice only.
        { orgId: org.id, provider: "aws", providerCommitmentId: "ri-b", name: "B", commitmentType: "reserved_instance", category: "Usage", contractTerm: "one_year", paymentOption: "all_upfront", region: "us-east-1", instanceType: "m5.large", startsAt: at(5 - 365), endsAt: at(5), amount: "2", upfrontCost: "8760", recurringHourlyCost: "0" },
        // C: first seen 45 days before its end: the 90-day notice, then 30 and 7.
        { orgId: org.id, provider: "aws", providerCommitmentId: "ri-c", name: "C", commitmentType: "reserved_instance", category: "Usage", startsAt: at(45 - 365), endsAt: at(45), amount: "1", upfrontCost: "0", recurringHourlyCost: "0.5" },
        // D ended, E ends in 200 days: nothing.
        { orgId: org.id, provider: "aws", providerCommitmentId: "ri-d", name: "D", commitmentType: "reserved_instance", startsAt: at(-400), endsAt: at(-35), amount: "1", recurringHourlyCost: "0.5" },
        { orgId: org.id, provider: "aws", providerCommitmentId: "ri-e", name: "E", commitmentType: "reserved_instance", startsAt: at(-165), endsAt: at(200), amount: "1", recurringHourlyCost: "0.5" },
        // Another org's, ending in 30 days: its own notice, in its own log.
        { orgId: other.id, provider: "azure", providerCommitmentId: "ro-x", name: "X", commitmentType: "reservation", startsAt: at(-335), endsAt: at(30), amount: "1", recurringHourlyCost: "1" },
      ])
      .returning({ id: commitments.id, name: commitments.name });
    const idOf = Object.fromEntries(rows.map((r) => [r.name!, r.id]));
    for (let d = 0; d <= 100; d++) {
      clock = at(d);
      await commitmentExpiryJob.run(t.s);
      // A second wake the same day (another replica, the next hour) changes nothing.
      if (d % 10 === 0) await Promise.all([commitmentExpiryJob.run(t.s), commitmentExpiryJob.run(t.s)]);
    }
    const list = await eventsOf("commitment.expiring", org);
    const seen = list.map((e) => [e.data.commitment.name, e.data.notice_days, e.data.days_left, e.timestamp]);
    expect(seen).toEqual([
      ["B", 7, 5, at(0).toISOString()],
      ["C", 90, 45, at(0).toISOString()],
      ["A", 90, 90, at(5).toISOString()],
      ["C", 30, 30, at(15).toISOString()],
      ["C", 7, 7, at(38).toISOString()],
      ["A", 30, 30, at(65).toISOString()],
      ["A", 7, 7, at(88).toISOString()],
    ]);
    const a90 = list[2];
    expect(a90.data).toMatchObject({
      commitment: { id: idOf.A, provider: "aws", provider_commitment_id: "arn:aws:savingsplans::1:savingsplan/sp-a", commitment_type: "compute_savings_plan", contract_term: "one_year", ends_at: at(95).toISOString(), holding_account_id: "acct-a", insured: false },
      amount: 3,
      hourly_commitment: 3,
      monthly_commitment: 2190,
      upfront_cost: 0,
      currency: "EUR",
    });
    // B: all upfront 8760 over a 365-day term = 1 $/h.
    expect(list[0].data).toMatchObject({ hourly_commitment: 1, monthly_commitment: 730, upfront_cost: 8760, amount: 2 });
    expect(a90.links).toEqual({ api: `http://localhost/beta/v1/org/${org.id}/commitments/${idOf.A}`, console: "http://localhost/app/#expiring" });
    expect((await followApi(a90, org)).id).toBe(idOf.A);
    const theirs = await eventsOf("commitment.expiring", other);
    expect(theirs.map((e) => [e.data.commitment.name, e.data.notice_days, e.data.currency])).toEqual([["X", 30, null], ["X", 7, null]]);
    expect(JSON.stringify(list)).not.toContain("ro-x");
  }, 120_000);

  test("anomaly.detected by the daily scan after a file import (no sync): the spike day, once", async () => {
    const org = await t.newOrg("Anomalies org");
    clock = new Date("2026-12-01T09:00:00Z");
    const rows = [];
    for (let ms = Date.parse("2026-09-01T00:00:00Z"); ms < Date.parse("2026-12-01T00:00:00Z"); ms += DAY) {
      const day = new Date(ms).toISOString().slice(0, 10);
      const month = day.slice(0, 7);
      const next = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 1)).toISOString().slice(0, 7);
      const cost = day === "2026-11-30" ? 5 : 200 + (Math.floor(ms / DAY) % 3);
      rows.push({ BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: new Date(ms).toISOString(), ChargePeriodEnd: new Date(ms + DAY).toISOString(), BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost, ServiceName: "Storage" });
    }
    await importCsvText(t, org.id, focusCsv(rows), { now: clock });
    await anomalyScanJob.run(t.s);
    await anomalyScanJob.run(t.s);
    const list = await eventsOf("anomaly.detected", org);
    expect(list.map((e) => [e.data.dimension, e.data.key, e.data.date, e.data.direction, e.data.actual])).toEqual([
      ["account", "acct-1", "2026-11-30", "drop", 5],
      ["service", "Storage", "2026-11-30", "drop", 5],
    ]);
    expect(list[0].links.console).toContain("/app/explorer?group_by=day&start_date=2026-11-03&end_date=2026-12-01");
  });

  test("catalog.refresh_failed: a price API failing → to the orgs buying or subscribed, once a day; the others see nothing", async () => {
    const buyer = await t.newOrg("Buyer org");
    const planner = await t.newOrg("Auto-purchase org");
    const subscriber = await t.newOrg("Subscribed org");
    const bystander = await t.newOrg("Bystander org");
    const created = await t.request("POST", `/beta/v1/org/${buyer.id}/purchasing-connections`, {
      key: buyer.key,
      body: { name: "AWS buyer", kind: "aws_purchasing", config: { region: "us-east-1", access_key_id: "AKIAEVENTSTEST000001", endpoint_url: "http://127.0.0.1:9" }, secrets: { secret_access_key: "events-secret" } },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    // An auto-purchasing template (its segment is the org's default one, made on first use): set as the API would leave it.
    const templates = await (await t.request("GET", `/beta/v1/org/${planner.id}/commitment-plan-templates?provider=aws`, { key: planner.key })).json();
    expect(templates.length).toBeGreaterThan(0);
    await t.s.db.update(commitmentPlanTemplates).set({ schedule: "daily", autoPurchaseEnabled: true }).where(eq(commitmentPlanTemplates.id, templates[0].id));
    await t.s.db.insert(webhookEndpoints).values({ orgId: subscriber.id, url: "https://hooks.example.com/commitops", eventTypes: ["catalog.refresh_failed"] });
    await t.s.db.insert(webhookEndpoints).values({ orgId: bystander.id, url: "https://hooks.example.com/other", eventTypes: ["purchase.confirmed"] });

    azure.fault = { page: 1, status: 500 };
    const config = { ...t.s.config, catalogRefreshEnabled: true, awsPricingBaseUrl: aws.url, azurePricesBaseUrl: azure.url, gcpPricingApiKey: undefined, catalogRefreshAwsRegions: ["us-east-1"], catalogRefreshAzureRegions: ["eastus"], catalogRefreshGcpRegions: ["us-central1"] };
    const services = { ...t.s, config, now: () => new Date("2026-12-06T03:17:00Z") };
    await catalogRefreshJob.run(services);
    // A partial refresh marks the day done; a wake the next hour does nothing, an event or not.
    await catalogRefreshJob.run({ ...services, now: () => new Date("2026-12-06T04:17:00Z") });
    for (const org of [buyer, planner, subscriber]) {
      const list = await eventsOf("catalog.refresh_failed", org);
      expect(list.length, org.id).toBe(1);
      expect(list[0].data).toMatchObject({ day: "2026-12-06", status: "partial", prices_kept: true });
      expect(list[0].data.feeds_failed).toBeGreaterThan(0);
      expect(list[0].data.feeds_refreshed).toBeGreaterThan(0);
      expect(list[0].data.failures.every((f: any) => f.provider === "azure")).toBe(true);
      expect(list[0].links).toEqual({ api: `http://localhost/beta/v1/org/${org.id}/catalog-skus?provider=azure`, console: "http://localhost/app/estimates" });
      expect((await followApi(list[0], org)).length).toBeGreaterThanOrEqual(0);
    }
    expect(await eventsOf("catalog.refresh_failed", bystander)).toEqual([]);
    expect(await eventsOf("catalog.refresh_failed", t.org)).toEqual([]);
    // The next day everything fails (AWS too): told again, once, though the job retries every hour.
    aws.fail("/offers/v1.0/aws/index.json", 500);
    for (const hour of ["03", "04"]) await catalogRefreshJob.run({ ...services, now: () => new Date(`2026-12-07T${hour}:17:00Z`) });
    const list = await eventsOf("catalog.refresh_failed", buyer);
    expect(list.map((e) => [e.data.day, e.data.status])).toEqual([["2026-12-06", "partial"], ["2026-12-07", "failed"]]);
    expect(list[1].data.failures).toContainEqual({ provider: "aws", feed: null, error: expect.any(String) });
    aws.fail("/offers/v1.0/aws/index.json", null);
    azure.fault = null;
  }, 120_000);

  test("a scan whose transaction fails writes no event and gives the org back: the next run scans it", async () => {
    const org = await t.newOrg("Rollback org");
    let fail = true;
    const scan: ScanJob = {
      job: "test-rollback",
      period: (now) => now.toISOString().slice(0, 10),
      candidates: async () => [org.id],
      async scan(_s, tx, orgId, now) {
        await emitEvent(tx, { orgId, type: "billing_sync.stale", occurredAt: now, data: {}, dedupeKey: "rollback-test" });
        if (fail) throw new Error("the scan failed after writing its event");
        return 1;
      },
    };
    clock = new Date(NOW0);
    expect(await runScan(t.s, scan)).toEqual({ orgs: 0, events: 0 });
    const count = async () => Number((await t.s.handle.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE org_id = $1`, [org.id]))[0]!.n);
    expect(await count()).toBe(0);
    fail = false;
    expect(await runScan(t.s, scan)).toEqual({ orgs: 1, events: 1 });
    expect(await runScan(t.s, scan)).toEqual({ orgs: 0, events: 0 });
    expect(await count()).toBe(1);
  });
});
