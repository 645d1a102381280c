// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Connections in Chromium: an admin adds a billing connection to a loopback S3 holding an AWS
// Data Export, tests it, syncs it now and sees the run and its status; the secret is write-only
// (never in the page nor in any answer the page received); a purchasing connection's dry run
// is turned off and on and the API agrees; a member or viewer is offered nothing and the server
// refuses a forged call.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { focusMonths, toCsv } from "../connections/fixtures.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole, type ConsoleOrg } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

// A key pair of the loopback S3 server's account model (as tests/connections/aws-sync.test.ts).
const ACCESS_KEY_ID = "AKIACONSOLETEST0001";
const SECRET_ACCESS_KEY = `consolesecret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

const NOW = new Date();
const MONTH = new Date(Date.UTC(NOW.getUTCFullYear(), NOW.getUTCMonth() - 1, 15));
const months = focusMonths({ now: MONTH, months: 1, providers: ["aws"], accountsPerProvider: 1, resourcesPerAccount: 2, grain: "daily" });
const [PERIOD, FOCUS] = [...months.entries()][0]!;

/** Every body of an /app/api answer the page received. */
function recordApiAnswers(page: Page): string[] {
  const bodies: string[] = [];
  page.on("response", async (r) => {
    if (!new URL(r.url()).pathname.startsWith("/app/api/")) return;
    try {
      bodies.push(await r.text());
    } catch {
      // A redirect or aborted request has no body.
    }
  });
  return bodies;
}

describeEachDb("console: connections", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console connections");
  let s3: S3Server;
  let org: ConsoleOrg;
  let key: string;
  const bucket = `console-billing-${driver}`;

  beforeAll(async () => {
    // The loopback S3 is a private address; the secret box needs a key.
    t.s.config.connectionsAllowPrivateEndpoints = true;
    t.s.config.secretKey ??= randomBytes(32).toString("base64");
    s3 = await startS3();
    await s3.createBucket(bucket);
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: PERIOD, files: [{ name: "focus-daily-00001.csv.gz", bytes: gzipSync(toCsv(FOCUS.header, FOCUS.rows)) }] });
  });
  afterAll(async () => {
    await s3?.stop();
  });

  test.skipIf(!hasChromium)("an admin adds a billing connection, tests it, syncs it now and sees the run; the secret never reaches the page", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "connections check" })).key;
    const { context, page, problems } = await newPage(browser());
    const answers = recordApiAnswers(page);
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/connections", problems);
      await page.waitForSelector("#billing-connections .empty");
      expect(await page.textContent("#billing-connections .empty")).toContain("No billing connection yet");
      await expectCleanPage(page, problems);
      await screenshot(page, `connections-empty-${driver}`);

      // The secret field is a password input, empty.
      expect(await page.getAttribute("#new-billing-secret-secret_access_key", "type")).toBe("password");
      expect(await page.inputValue("#new-billing-secret-secret_access_key")).toBe("");
      await page.fill("#new-billing-name", "AWS payer");
      await page.selectOption("#new-billing-kind", "aws_data_exports");
      await page.fill("#new-billing-config-bucket", bucket);
      await page.fill("#new-billing-config-prefix", "cur");
      await page.fill("#new-billing-config-export_name", "focus-daily");
      await page.fill("#new-billing-config-region", "us-east-1");
      await page.fill("#new-billing-config-access_key_id", ACCESS_KEY_ID);
      await page.fill("#new-billing-config-endpoint_url", s3.endpoint);
      await page.fill("#new-billing-secret-secret_access_key", SECRET_ACCESS_KEY);
      await page.click("#new-billing-submit");
      await page.waitForURL((u) => /\/app\/connections\/billing\/[0-9a-f-]{36}$/.test(u.pathname));
      const id = new URL(page.url()).pathname.split("/").pop()!;
      await page.waitForSelector("#connection-facts");
      // Only whether the secret is set is shown.
      expect(await page.textContent("#connection-settings")).toContain("Secret access key: Set");
      expect(await page.textContent("#runs-table, #connection-runs .empty")).toContain("No sync yet");

      await page.click("#connection-test");
      await page.waitForSelector("#test-result");
      expect(await page.textContent("#test-result")).toContain("Test passed.");
      expect(await page.textContent("#test-result")).toContain(PERIOD);

      await page.click("#connection-sync");
      await page.waitForFunction(() => /Succeeded|Failed/.test(document.querySelector("#runs-table tbody tr")?.textContent ?? ""), null, { timeout: 60_000 });
      const [run] = await apiGet(t, base, org.orgId, key, `/billing-connections/${id}/runs`);
      expect(run).toMatchObject({ status: "succeeded", trigger: "manual", periods_seen: 1, periods_imported: 1, rows_imported: FOCUS.rows.length });
      const cells = await page.$$eval("#runs-table tbody tr:first-child td", (tds) => tds.map((td) => td.textContent));
      expect(cells[1]).toBe("Manual");
      expect(cells[2]).toBe("Succeeded");
      expect(cells[3]).toBe("1");
      expect(cells[4]).toBe("1");
      expect(cells[6]).toBe(new Intl.NumberFormat("en-US").format(run.rows_imported));
      const conn = await apiGet(t, base, org.orgId, key, `/billing-connections/${id}`);
      expect(conn.status).toBe("ok");
      await page.waitForFunction(() => document.querySelector("#connection-status-value")?.textContent === "OK");
      await expectCleanPage(page, problems);
      await screenshot(page, `connections-billing-${driver}`);

      // The list shows it, with its status.
      await page.click("text=All connections");
      await page.waitForSelector("#billing-table");
      expect(await page.textContent("#billing-table tbody")).toContain("AWS payer");
      expect(await page.textContent("#billing-table tbody")).toContain("OK");

      // Write-only: nowhere in the page, nowhere in what the API answered it.
      expect(await page.content()).not.toContain(SECRET_ACCESS_KEY);
      await page.goto(`${base}/app/connections/billing/${id}`);
      await page.waitForSelector("#runs-table");
      expect(await page.content()).not.toContain(SECRET_ACCESS_KEY);
      expect(answers.length).toBeGreaterThan(5);
      for (const a of answers) expect(a).not.toContain(SECRET_ACCESS_KEY);
      expect(answers.some((a) => a.includes("secrets_set"))).toBe(true);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a purchasing connection starts in dry run; turning it off (confirmed) and on again, the API agrees", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/connections", problems);
      await page.waitForSelector("#new-purchasing-form");
      await page.fill("#new-purchasing-name", "AWS buyer");
      await page.selectOption("#new-purchasing-kind", "aws_purchasing");
      await page.fill("#new-purchasing-config-region", "us-east-1");
      // A server refusal is shown with its message: an access key id without its secret.
      await page.fill("#new-purchasing-config-access_key_id", ACCESS_KEY_ID);
      await page.click("#new-purchasing-submit");
      await page.waitForSelector("#new-purchasing-form .error");
      expect(await page.textContent("#new-purchasing-form .error")).toContain("secrets.secret_access_key");
      problems.errors.splice(0); // the 422 above was expected
      await page.fill("#new-purchasing-config-access_key_id", "");
      await page.click("#new-purchasing-submit");
      await page.waitForURL((u) => /\/app\/connections\/purchasing\/[0-9a-f-]{36}$/.test(u.pathname));
      const id = new URL(page.url()).pathname.split("/").pop()!;
      await page.waitForSelector("#dry-run-value");
      expect(await page.textContent("#dry-run-value")).toContain("Dry run");
      expect((await apiGet(t, base, org.orgId, key, `/purchasing-connections/${id}`)).dry_run).toBe(true);

      await page.click("#dry-run-off");
      await page.waitForSelector("#dry-run-off-confirm");
      await expectCleanPage(page, problems);
      await screenshot(page, `connections-purchasing-confirm-${driver}`);
      await page.click("#dry-run-off-confirm");
      await page.waitForSelector("#dry-run-on");
      expect(await page.textContent("#dry-run-value")).toContain("Live purchases");
      expect((await apiGet(t, base, org.orgId, key, `/purchasing-connections/${id}`)).dry_run).toBe(false);

      await page.click("#dry-run-on");
      await page.waitForSelector("#dry-run-off");
      expect(await page.textContent("#dry-run-value")).toContain("Dry run");
      expect((await apiGet(t, base, org.orgId, key, `/purchasing-connections/${id}`)).dry_run).toBe(true);

      await page.click("text=All connections");
      await page.waitForSelector("#purchasing-table");
      expect(await page.textContent("#purchasing-table tbody")).toContain("AWS buyer");
      await expectCleanPage(page, problems);
      await screenshot(page, `connections-list-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("at 375 px the pages fit the screen", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/connections", problems);
      await page.waitForSelector("#billing-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `connections-375-${driver}`);
      await page.click("#billing-table >> text=AWS payer");
      await page.waitForSelector("#runs-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await screenshot(page, `connections-billing-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);

  test.skipIf(!hasChromium)("a member or viewer has no Connections section, and the server refuses a forged write", async () => {
    const base = baseUrl();
    for (const role of ["member", "viewer"] as const) {
      const { context, page } = await newPage(browser());
      try {
        await signIn(page, base, org.people[role], org.orgId);
        expect(await page.$$eval("nav.side a", (as) => as.map((a) => a.textContent))).not.toContain("Connections");
        await page.goto(`${base}/app/connections`);
        await page.waitForSelector("#page-title");
        expect(await page.textContent("main")).toContain("does not include this page");
        expect(await page.$("#new-billing-form")).toBeNull();
        const statuses = await page.evaluate(async (orgId) => {
          const s = await (await fetch("/app/session")).json();
          const headers = { "content-type": "application/json", "x-csrf-token": s.csrf_token };
          const post = await fetch(`/app/api/beta/v1/org/${orgId}/billing-connections`, { method: "POST", headers, body: JSON.stringify({ name: "sneaky", kind: "aws_data_exports", config: { bucket: "sneaky-bucket", export_name: "x", region: "us-east-1" } }) });
          const list = await fetch(`/app/api/beta/v1/org/${orgId}/billing-connections`);
          return [post.status, list.status];
        }, org.orgId);
        expect(statuses).toEqual([403, 403]);
      } finally {
        await context.close();
      }
    }
    const names = (await apiGet(t, base, org.orgId, key, "/billing-connections")).map((c: any) => c.name);
    expect(names).toEqual(["AWS payer"]);
  }, 90_000);
});
