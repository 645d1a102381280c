// The console in a real Chromium against the real server and database (tests/helpers/chromium.ts):
// people of each role, the sign-in journey, and checks every page must pass (axe, no CSP or
// console errors, no horizontal scroll at 375 px).
import { expect } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { useServedTestApp } from "../helpers/chromium.ts";
import type { DriverName } from "../helpers/db.ts";
import type { TestContext } from "../helpers/app.ts";
import { addMember, createOrganization, createUser } from "../../lib/orgs/service.ts";
import type { Role } from "../../lib/auth/scopes.ts";

export const SCREENSHOTS = join(import.meta.dir, "..", "artifacts", "console");
export const PASSWORD = "console test password";

export interface Person {
  email: string;
  role: Role;
}

export interface ConsoleOrg {
  orgId: string;
  name: string;
  people: Record<Role, Person>;
}

let seq = 0;
/** An organization with one person per role (all with PASSWORD). */
export async function consoleOrg(t: TestContext, name = `Console Org ${++seq}`): Promise<ConsoleOrg> {
  const org = await createOrganization(t.s.db, { name });
  const people = {} as Record<Role, Person>;
  for (const role of ["admin", "member", "viewer"] as Role[]) {
    const email = `${role}.${seq}.${Math.random().toString(36).slice(2, 8)}@example.com`;
    const u = await createUser(t.s.db, { email, password: PASSWORD, emailVerified: true });
    await addMember(t.s.db, { orgId: org.id, userId: u.id, role });
    people[role] = { email, role };
  }
  return { orgId: org.id, name, people };
}

export interface PageProblems {
  /** Console errors and CSP violations the page reported. */
  errors: string[];
}

/** A fresh browser context (no cookies) whose page records console errors and CSP violations. */
export async function newPage(browser: Browser, opts: { width?: number } = {}): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1280, height: 900 }, locale: "en-US", timezoneId: "UTC" });
  const page = await context.newPage();
  const problems: PageProblems = { errors: [] };
  page.on("console", (m) => {
    // A failed load is reported below with its URL.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.errors.push(m.text());
  });
  page.on("pageerror", (e) => problems.errors.push(String(e)));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.errors.push(`HTTP ${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  return { context, page, problems };
}

/** Signs in through the real login and organization pages; ends on the console page asked for. */
export async function signIn(page: Page, base: string, person: Person, orgId: string, path = "/app/", problems?: PageProblems): Promise<void> {
  await page.goto(`${base}${path}`);
  await page.waitForSelector("#email");
  await page.fill("#email", person.email);
  await page.fill("#password", PASSWORD);
  await page.click("#sign-in");
  await page.waitForSelector("#approve");
  if (await page.$("#org_id")) await page.selectOption("#org_id", orgId);
  await page.click("#approve");
  await page.waitForURL((u) => u.pathname.startsWith("/app"));
  await page.waitForSelector("#page-title");
  problems?.errors.splice(0);
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core on the page as it is now: the serious and critical violations (none are allowed). */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const result = (await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ["violations"] }))) as { violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] };
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`);
}

/** The page is wider than its viewport (something forces horizontal scrolling of the whole page). */
export async function overflowsHorizontally(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** The standard checks of a finished page: no errors, no CSP violation, axe clean. */
export async function expectCleanPage(page: Page, problems: PageProblems): Promise<void> {
  expect(problems.errors.join("\n")).toBe("");
  expect(await seriousAxeViolations(page)).toEqual([]);
}

/** The API's answer for the same question, with an admin API key of the org (figures compared to the cent). */
export async function apiGet(t: TestContext, base: string, orgId: string, key: string, path: string): Promise<any> {
  const r = await fetch(`${base}/beta/v1/org/${orgId}${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(r.status).toBe(200);
  return r.headers.get("content-type")?.includes("json") ? r.json() : r.text();
}

export function useConsole(driver: DriverName, suite: string, opts: { now?: () => Date; config?: Record<string, unknown> } = {}) {
  return useServedTestApp(driver, suite, opts);
}
