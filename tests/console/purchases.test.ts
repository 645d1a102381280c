// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Purchases in Chromium: an admin approves a pending purchase and sees it bought at the loopback
// AWS server (its provider id on the page and in the API), rejects another, reads the story; a
// member sees the list without the decision and the server refuses a forged approval.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { describeEachDb } from "../helpers/db.ts";
import { consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { startAwsPurchasingServer, type AwsPurchasingServer } from "../helpers/awsPurchasingServer.ts";
import { runPurchasingTick } from "../../lib/purchasing/autoPurchase.ts";
import { backgroundPurchasesSettled } from "../../lib/purchasing/executor.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { seedWorkload, type Workload } from "../purchasing/fixtures.ts";
import { deliverWebhooks } from "../../lib/webhooks/deliver.ts";

const START = new Date("2026-06-10T12:00:00Z");
const workload: Workload = {
  provider: "aws",
  region: "us-east-1",
  instanceType: "m5.large",
  instanceFamily: "m5",
  od: 0.096,
  offer: { commitmentType: "reserved_instance", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, recurring: 0.0576, upfront: 0 },
};

describeEachDb("console: purchases", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console purchases", {
    now: () => START,
    config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true },
  });
  let aws: AwsPurchasingServer;
  beforeAll(async () => {
    aws = await startAwsPurchasingServer();
    aws.setNow(START);
  });
  afterAll(async () => {
    await backgroundPurchasesSettled(t.s);
    await aws?.close();
  });

  /** An org with usage, a live AWS purchasing connection at the loopback server and a template that waits for approval: one pending purchase. */
  async function pendingPurchase(beforeTick?: (api: (method: string, path: string, body?: unknown) => Promise<Response>) => Promise<void>) {
    const org = await consoleOrg(t);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "purchases check" });
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${baseUrl()}/beta/v1/org/${org.orgId}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    await beforeTick?.(api);
    await seedWorkload(t.s.db, org.orgId, workload, START, 30 * 24, 2);
    expect(
      (await api("POST", "/purchasing-connections", { name: "AWS buyer", kind: "aws_purchasing", dry_run: false, config: { region: "us-east-1", access_key_id: "AKIACONSOLETEST00001", endpoint_url: aws.url }, secrets: { secret_access_key: "console-secret" } })).status,
    ).toBe(201);
    await t.s.handle.query("UPDATE commitment_plan_templates SET schedule = NULL, start_date = NULL");
    const tpl = await api("POST", "/commitment-plan-templates", {
      provider: "aws",
      name: "Nightly RIs",
      configuration: { contract_specs: [{ commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "no_upfront" }], lookback_days: 30 },
      auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: 0, require_approval: true },
    });
    expect(tpl.status).toBe(200);
    await runPurchasingTick(t.s);
    const list = await (await api("GET", "/purchases")).json();
    expect(list.map((p: any) => p.status)).toEqual(["pending_approval"]);
    return { org, api, purchase: list[0] };
  }

  test.skipIf(!hasChromium)("an admin approves a waiting purchase and sees it bought at the provider; the story tells it", async () => {
    const base = baseUrl();
    const { org, api, purchase } = await pendingPurchase();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/purchases", problems);
      await page.waitForSelector("#waiting-table");
      expect(await page.$$eval("#waiting-table tbody tr", (trs) => trs.length)).toBe(1);
      await expectCleanPage(page, problems);
      await screenshot(page, `purchases-waiting-${driver}`);
      await page.click("#waiting-table tbody a");
      await page.waitForSelector("#approve");
      await page.click("#approve");
      await page.fill("#decision-note", "Approved from the console");
      await screenshot(page, `purchases-confirm-${driver}`);
      await page.click("#confirm-decision");
      // Bought in the background; the page reads the order again until it settles.
      await page.waitForFunction(() => document.querySelector("#purchase-status-value")?.textContent === "confirmed", undefined, { timeout: 30_000 });
      const view = await (await api("GET", `/purchases/${purchase.id}`)).json();
      expect(view.status).toBe("confirmed");
      expect(view.decision_note).toBe("Approved from the console");
      const providerId = view.items[0].provider_purchase_id;
      expect(providerId).toBeTruthy();
      expect(aws.purchases.ec2.length).toBe(1);
      expect(await page.textContent("#purchase-items")).toContain(providerId);
      expect(await page.$$eval("#purchase-events li", (lis) => lis.length)).toBe(view.events.length);
      expect(await page.$("#approve")).toBeNull();
      await expectCleanPage(page, problems);
      await screenshot(page, `purchases-bought-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a purchase waiting for approval sends a Slack message whose button opens its approval page", async () => {
    const base = baseUrl();
    // A loopback server standing in for Slack's incoming webhook (it answers "ok" as Slack does).
    const slackMessages: any[] = [];
    const slack = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (r) => (slackMessages.push(await r.json()), new Response("ok")) });
    try {
      const { org, purchase } = await pendingPurchase(async (api) => {
        const r = await api("POST", "/webhook-endpoints", { url: `http://127.0.0.1:${slack.port}/services/T000/B000/XXXX`, kind: "slack", event_types: ["purchase.pending_approval"] });
        expect(r.status).toBe(201);
      });
      while ((await deliverWebhooks(t.s)).endpoints > 0);
      expect(slackMessages).toHaveLength(1);
      const buttons = slackMessages[0].blocks.flatMap((b: any) => (b.type === "actions" ? b.elements : b.accessory ? [b.accessory] : [])).filter((e: any) => e.type === "button");
      const approve = buttons.find((b: any) => b.text.text === "Review and approve");
      expect(approve.url).toBe(`${base}/app/purchases/${purchase.id}`);
      // Opened by an admin who is not signed in yet: sign-in, then the very page, with its decision.
      const { context, page, problems } = await newPage(browser());
      try {
        await signIn(page, base, org.people.admin, org.orgId, new URL(approve.url).pathname, problems);
        expect(new URL(page.url()).pathname).toBe(`/app/purchases/${purchase.id}`);
        await page.waitForSelector("#approve");
        expect(await page.textContent("#purchase-status-value")).toBe("Waiting for approval");
        await expectCleanPage(page, problems);
      } finally {
        await context.close();
      }
    } finally {
      slack.stop(true);
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a rejection buys nothing; a member sees purchases but no decision, and a forged approval is refused", async () => {
    const base = baseUrl();
    const { org, api, purchase } = await pendingPurchase();
    const bought = aws.purchases.ec2.length;
    const member = await newPage(browser(), { width: 375 });
    try {
      await signIn(member.page, base, org.people.member, org.orgId, "/app/purchases", member.problems);
      await member.page.waitForSelector("#waiting-table");
      expect(await member.page.$$eval("#waiting-table tbody tr", (trs) => trs.length)).toBe(1);
      expect(await member.page.$$("#approve, #reject, #confirm-decision")).toEqual([]);
      expect(await overflowsHorizontally(member.page)).toBe(false);
      await expectCleanPage(member.page, member.problems);
      await screenshot(member.page, `purchases-member-375-${driver}`);
      await member.page.click("#waiting-table tbody a");
      await member.page.waitForSelector("#purchase-facts");
      await member.page.waitForSelector("#purchase-events li");
      expect(await member.page.$("#reject")).toBeNull();
      await screenshot(member.page, `purchases-story-375-${driver}`);
      expect(await member.page.$("#approve")).toBeNull();
      expect(await overflowsHorizontally(member.page)).toBe(false);
      await expectCleanPage(member.page, member.problems);
      const status = await member.page.evaluate(async (path) => {
        const s = await (await fetch("/app/session")).json();
        return (await fetch(path, { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": s.csrf_token }, body: "{}" })).status;
      }, `/app/api/beta/v1/org/${org.orgId}/purchases/${purchase.id}/approve`);
      expect(status).toBe(403);
    } finally {
      await member.context.close();
    }
    const admin = await newPage(browser());
    try {
      await signIn(admin.page, base, org.people.admin, org.orgId, `/app/purchases/${purchase.id}`, admin.problems);
      await admin.page.click("#reject");
      await admin.page.click("#confirm-decision");
      await admin.page.waitForFunction(() => document.querySelector("#purchase-status-value")?.textContent === "rejected");
      const view = await (await api("GET", `/purchases/${purchase.id}`)).json();
      expect(view.status).toBe("rejected");
      expect(view.items.map((i: any) => i.status)).toEqual(["rejected"]);
      await backgroundPurchasesSettled(t.s);
      expect(aws.purchases.ec2.length).toBe(bought);
      await expectCleanPage(admin.page, admin.problems);
    } finally {
      await admin.context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("with nothing waiting the page says so and tells where purchases come from", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/purchases", problems);
      await page.waitForSelector("#waiting .empty");
      expect(await page.textContent("#waiting .empty")).toContain("No purchases are waiting for approval");
      await page.waitForSelector("#all .empty");
      expect(await page.textContent("#all .empty")).toContain("auto-purchase schedule");
      await page.waitForSelector("#runs .empty");
      await expectCleanPage(page, problems);
      await screenshot(page, `purchases-empty-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);
});
