// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Notifications in Chromium: an admin adds a webhook endpoint at a loopback receiver and sees its
// signing secret once (the receiver verifies the deliveries with it, by the Standard Webhooks
// library) and never again; the events a budget fired are listed as GET /events answers them,
// filtered by type, each linking to its console page; the endpoint's delivery log equals the
// API's, "Redeliver" sends the same webhook-id again; rotate (the new secret once), disable,
// delete (confirmed). A member saves their email choices and after a reload the page shows the
// API's answer; no endpoints for them; 375 px.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole, type ConsoleOrg } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { dailyRows, importThroughCli } from "../budgets/helpers.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { deliverUntilIdle, SECRET_KEY } from "../webhooks/fixtures.ts";
import { emitEvent } from "../../lib/events/emit.ts";

const DAY = 86_400_000;
const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The Notifications page's table cells, row by row. */
const cells = (page: Page, table: string) => page.$$eval(`${table} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent!.trim())));

/** The caller's email choices as the API answers them to the signed-in person (the console's own API route). */
const myPreferences = (page: Page, orgId: string) => page.evaluate(async (path) => (await fetch(path)).json(), `/app/api/beta/v1/org/${orgId}/notification-preferences`);

describeEachDb("console: notifications", (driver) => {
  // Wall-clock time: receivers check webhook-timestamp against their own clock.
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console notifications", { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let receiver: Receiver;
  let org: ConsoleOrg;
  let key: string;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const api = (method: string, path: string, body?: unknown) => t.request(method, `/beta/v1/org/${org.orgId}${path}`, { key, body });

  test.skipIf(!hasChromium)("an admin adds a webhook endpoint (secret shown once, verifies the deliveries), reads the events and the delivery log, redelivers, rotates, disables, deletes", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "notifications check" })).key;
    // Spend this month (today's included, so the 1st of a month has some): $100 a day of EC2.
    const today = Date.parse(`${ymd(Date.now())}T00:00:00Z`);
    await importThroughCli(t.s, org.orgId, dailyRows([{ account: "111", service: "EC2", perDay: 100 }], ymd(today - 40 * DAY), ymd(today + DAY)));
    receiver.behave("/hook", { kind: "ok", status: 200, body: "thanks from the receiver" });

    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/notifications", problems);
      await page.waitForSelector("#events .empty");
      await page.waitForSelector("#endpoints .empty");
      await page.waitForSelector("#email-prefs-form");
      await expectCleanPage(page, problems);

      // Add an endpoint for budget events only.
      await page.fill("#endpoint-url", receiver.url("/hook"));
      await page.fill("#endpoint-description", "Ops receiver");
      await page.uncheck("#endpoint-type-all");
      await page.check("#endpoint-type-budget-threshold-crossed");
      await page.click("#add-endpoint-submit");
      await page.waitForSelector("#endpoint-secret-value");
      const secret = (await page.textContent("#endpoint-secret-value"))!.trim();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
      expect(await page.textContent("#endpoint-secret")).toContain("only time the signing secret is shown");
      await page.waitForSelector("#endpoints-table");
      const endpoints = await apiGet(t, base, org.orgId, key, "/webhook-endpoints");
      expect(endpoints.length).toBe(1);
      const endpoint = endpoints[0];
      expect(endpoint).toMatchObject({ url: receiver.url("/hook"), kind: "webhook", event_types: ["budget.threshold_crossed"], description: "Ops receiver", enabled: true });
      expect(JSON.stringify(endpoints)).not.toContain(secret);
      expect(await cells(page, "#endpoints-table")).toEqual([[receiver.url("/hook"), "Webhook", "Ops receiver", "Budget threshold crossed", "Enabled"]]);
      await expectCleanPage(page, problems);
      await screenshot(page, `notifications-secret-${driver}`);

      // Leaving the page forgets the secret: never shown again.
      await page.click("nav.side >> text=Budgets");
      await page.waitForFunction(() => location.pathname === "/app/budgets");
      await page.click("nav.side >> text=Notifications");
      await page.waitForSelector("#endpoints-table");
      expect(await page.$("#endpoint-secret-value")).toBeNull();
      expect(await page.content()).not.toContain(secret);

      // A budget crosses its thresholds: events, delivered to the receiver, which verifies them with the secret.
      receiver.verifyWith("/hook", [secret]);
      const created = await api("POST", "/budgets", { name: "Tight", amount: 10, currency: "USD", thresholds: [{ percent: 50, basis: "actual" }, { percent: 100, basis: "actual" }] });
      expect(created.status).toBe(201);
      const budget = await created.json();
      // And one event of another type, written as its producer writes it.
      await t.s.db.transaction((tx) =>
        emitEvent(tx, {
          orgId: org.orgId,
          type: "support.ticket_created",
          occurredAt: new Date(Date.now() - 60_000),
          data: { ticket_key: "OPS-1", kind: "bug", summary: "Report totals look off", provider: null, filed_by: { user_id: null, credential_kind: "api_key" }, ticket_url: "https://tracker.example/OPS-1" },
          resourcePath: `/beta/v1/org/${org.orgId}/support/tickets`,
          consolePath: "/app/support",
        }),
      );
      await deliverUntilIdle(t.s);
      const events = await apiGet(t, base, org.orgId, key, "/events");
      const budgetEvents = events.filter((e: any) => e.type === "budget.threshold_crossed");
      expect(budgetEvents.length).toBe(2);
      expect(receiver.on("/hook").every((r) => r.verified === true)).toBe(true);
      expect(receiver.unique("/hook").map((r) => r.id).sort()).toEqual(budgetEvents.map((e: any) => e.id).sort());

      // The events, as GET /events lists them, newest first; the filter by type.
      await page.reload();
      await page.waitForSelector("#events-table");
      const rows = await cells(page, "#events-table");
      expect(rows.length).toBe(events.length);
      expect(rows.map((r) => r[1])).toEqual(events.map((e: any) => ({ "budget.threshold_crossed": "Budget threshold crossed", "support.ticket_created": "Support ticket filed" })[e.type as string]));
      expect(rows.find((r) => r[1] === "Support ticket filed")!.slice(2)).toEqual(["OPS-1: Report totals look off", "Open support"]);
      expect(rows.find((r) => r[1] === "Budget threshold crossed")![3]).toBe("Open the budget");
      await page.selectOption("#event-type", "budget.threshold_crossed");
      await page.waitForFunction(() => new URLSearchParams(location.search).get("type") === "budget.threshold_crossed");
      await page.waitForFunction((n) => document.querySelectorAll("#events-table tbody tr").length === n, budgetEvents.length);
      await page.selectOption("#event-type", "purchase.*");
      await page.waitForSelector("#events .empty");
      await page.selectOption("#event-type", "");
      await page.waitForFunction((n) => document.querySelectorAll("#events-table tbody tr").length === n, events.length);
      await expectCleanPage(page, problems);
      await screenshot(page, `notifications-${driver}`);

      // Each event links to the console page it names: the budget's own page.
      const link = new URL(budgetEvents[0].links.console);
      expect(link.pathname).toBe(`/app/budgets/${budgetEvents[0].data.budget_id}`);
      await page.click(`#events-table a[href="${link.pathname}${link.search}"]`);
      await page.waitForFunction((href) => location.pathname + location.search === href, `${link.pathname}${link.search}`);
      await page.waitForFunction((name) => document.getElementById("page-title")?.textContent === name, budgetEvents[0].data.budget_name);
      await page.goBack();

      // The endpoint's delivery log: the API's figures.
      await page.waitForSelector("#endpoints-table a");
      await page.click("#endpoints-table a");
      await page.waitForSelector("#deliveries-table");
      const deliveries = await apiGet(t, base, org.orgId, key, `/webhook-endpoints/${endpoint.id}/deliveries`);
      expect(deliveries.length).toBe(2);
      const logged = await cells(page, "#deliveries-table");
      expect(logged.length).toBe(deliveries.length);
      deliveries.forEach((d: any, i: number) => {
        expect(logged[i]![0]).toContain(d.event_id);
        expect(logged[i]![1].startsWith(`${d.status}Last attempt `)).toBe(true);
        expect(d.status).toBe("succeeded");
        expect(logged[i]![2]).toBe(String(d.attempts));
        expect(logged[i]![3]).toBe(String(d.last_status_code));
        expect(logged[i]![4]).toBe(`${d.last_latency_ms} ms`);
        expect(logged[i]![5]).toBe(d.last_response_excerpt);
      });
      expect(logged[0]![5]).toBe("thanks from the receiver");
      await expectCleanPage(page, problems);
      await screenshot(page, `notifications-deliveries-${driver}`);

      // Redeliver: the same webhook-id again.
      const first = deliveries[0];
      await page.click(`[data-redeliver="${first.id}"]`);
      await page.waitForSelector("#deliveries-result .notice");
      expect((await apiGet(t, base, org.orgId, key, `/webhook-endpoints/${endpoint.id}/deliveries`))[0].redelivery_requested).toBe(true);
      await deliverUntilIdle(t.s);
      const again = (await apiGet(t, base, org.orgId, key, `/webhook-endpoints/${endpoint.id}/deliveries`))[0];
      expect(again).toMatchObject({ id: first.id, attempts: 2, status: "succeeded", redelivery_requested: false });
      expect(receiver.on("/hook").filter((r) => r.id === first.event_id).length).toBe(2);
      await page.click("text=Refresh");
      await page.waitForFunction((id) => document.querySelector(`[data-redeliver="${id}"]`)?.closest("tr")?.querySelectorAll("td")[2]?.textContent === "2", first.id);

      // Rotate: the new secret, once.
      await page.click("#endpoint-rotate");
      await page.waitForSelector("#confirm-rotate");
      await page.fill("#rotate-overlap", "0");
      await page.click("#confirm-rotate");
      await page.waitForSelector("#endpoint-secret-value");
      const rotated = (await page.textContent("#endpoint-secret-value"))!.trim();
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);
      await expectCleanPage(page, problems);

      // Disable: the status and its reason, as the API says.
      await page.click("#endpoint-toggle");
      await page.waitForFunction(() => document.querySelector("#endpoint-status")?.textContent?.startsWith("Disabled"));
      const disabled = await apiGet(t, base, org.orgId, key, `/webhook-endpoints/${endpoint.id}`);
      expect(disabled.enabled).toBe(false);
      expect(await page.textContent("#endpoint-status")).toContain(disabled.disabled_reason);
      // Redelivering to a disabled endpoint: the API's refusal, shown as it words it.
      await page.click(`[data-redeliver="${first.id}"]`);
      await page.waitForSelector("#deliveries-result .error");
      expect(await page.textContent("#deliveries-result .error")).toContain("disabled");
      expect(problems.errors).toEqual([`HTTP 409 POST /app/api/beta/v1/org/${org.orgId}/webhook-endpoints/${endpoint.id}/deliveries/${first.id}/redeliver`]);
      problems.errors.splice(0);
      await page.click("#endpoint-toggle");
      await page.waitForFunction(() => document.querySelector("#endpoint-status")?.textContent === "Enabled");
      await expectCleanPage(page, problems);

      // Delete, confirmed.
      await page.click("#endpoint-delete");
      await page.waitForSelector("#confirm-delete-endpoint");
      expect(await page.textContent(".confirm")).toContain(receiver.url("/hook"));
      await page.click("#confirm-delete-endpoint");
      await page.waitForFunction(() => location.pathname === "/app/notifications");
      await page.waitForSelector("#endpoints .empty");
      expect(await apiGet(t, base, org.orgId, key, "/webhook-endpoints")).toEqual([]);
      expect(budget.status.thresholds.every((x: any) => x.crossed_at !== null)).toBe(true);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 180_000);

  test.skipIf(!hasChromium)("a member saves their email choices (the API's answer after a reload), sees the events but no endpoints; at 375 px nothing scrolls sideways", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.member, org.orgId, "/app/notifications", problems);
      await page.waitForSelector("#email-prefs-form");
      await page.waitForSelector("#events-table");
      expect(await page.$("#endpoints")).toBeNull();
      // A member's defaults: nothing.
      const before = await myPreferences(page, org.orgId);
      expect(before).toMatchObject({ email_event_types: [], is_default: true });
      expect(await page.$$eval("#email-prefs-form input:checked", (xs) => xs.length)).toBe(0);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);

      await page.check("#email-budget-threshold-crossed");
      await page.check("#email-purchase-pending-approval");
      await page.click("#email-prefs-save");
      await page.waitForSelector("#email-prefs-status .notice");
      const after = await myPreferences(page, org.orgId);
      expect(after).toMatchObject({ email_event_types: ["budget.threshold_crossed", "purchase.pending_approval"], is_default: false });

      await page.reload();
      await page.waitForSelector("#email-prefs-form");
      const checked = await page.$$eval("#email-prefs-form input:checked", (xs) => xs.map((x) => (x as HTMLInputElement).value));
      expect(checked.sort()).toEqual(after.email_event_types);
      expect(await page.textContent("#email-prefs-form")).toContain("Last changed");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `notifications-member-375-${driver}`);

      // Unchecking all and saving: none, the API's answer too.
      await page.click("text=Clear all");
      await page.click("#email-prefs-save");
      await page.waitForSelector("#email-prefs-status .notice");
      expect((await myPreferences(page, org.orgId)).email_event_types).toEqual([]);
      // The endpoint pages are not offered by URL either.
      await page.goto(`${base}/app/notifications/endpoints/00000000-0000-4000-8000-000000000000`);
      await page.waitForSelector("#page-title");
      expect(await page.textContent("main")).toContain("Only administrators manage webhook endpoints");
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a viewer sees the events with their links, and their own email choices", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/notifications", problems);
      await page.waitForSelector("#events-table");
      await page.waitForSelector("#email-prefs-form");
      expect(await page.$("#endpoints")).toBeNull();
      const events = await apiGet(t, base, org.orgId, key, "/events");
      expect((await cells(page, "#events-table")).length).toBe(events.length);
      expect(await page.$$eval("#events-table tbody a", (as) => as.length)).toBe(events.filter((e: any) => e.links.console).length);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 60_000);

  test.skipIf(!hasChromium)("an admin at 375 px: the endpoints, the add form and an endpoint's delivery log fit the screen", async () => {
    const base = baseUrl();
    // A long answer: its start shown, the rest behind "details" (nothing scrolls sideways).
    receiver.behave("/narrow", { kind: "ok", status: 200, body: `{"received":true,"note":"${"a long receiver answer ".repeat(30)}"}` });
    const created = await api("POST", "/webhook-endpoints", { url: receiver.url("/narrow"), event_types: ["*"], description: "Narrow screen" });
    expect(created.status).toBe(201);
    const endpoint = await created.json();
    await t.s.db.transaction((tx) =>
      emitEvent(tx, {
        orgId: org.orgId,
        type: "support.ticket_created",
        occurredAt: new Date(),
        data: { ticket_key: "OPS-2", kind: "feature", summary: "Budgets per team", provider: null, filed_by: { user_id: null, credential_kind: "api_key" }, ticket_url: "https://tracker.example/OPS-2" },
        consolePath: "/app/support",
      }),
    );
    await deliverUntilIdle(t.s);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/notifications", problems);
      await page.waitForSelector("#endpoints-table");
      await page.waitForSelector("#events-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await page.goto(`${base}/app/notifications/endpoints/${endpoint.id}`);
      await page.waitForSelector("#deliveries-table");
      const deliveries = await apiGet(t, base, org.orgId, key, `/webhook-endpoints/${endpoint.id}/deliveries`);
      expect((await cells(page, "#deliveries-table")).length).toBe(deliveries.length);
      expect(deliveries[0].last_response_excerpt.length).toBeGreaterThan(160);
      await page.click("#deliveries-table details.excerpt summary");
      expect(await page.$eval("#deliveries-table details.excerpt", (d) => d.textContent!.replace("…", ""))).toBe(deliveries[0].last_response_excerpt);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `notifications-endpoint-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);
});
