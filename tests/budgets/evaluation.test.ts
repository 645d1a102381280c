/**
 * Budgets evaluated for real: FOCUS files imported through the CLI's `import focus` command, the
 * events read back from the event log. A threshold fires once per month (a second evaluation, a
 * second import, the daily job on two "replicas" fire nothing again), forecast thresholds fire
 * before actual ones, a filtered budget counts exactly GET /costs's figure for its filter, the
 * forecast is the assistant's forecast_spend month-end projection, a new month fires again, and a
 * failing evaluation never fails the import.
 */
import { beforeAll, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { connectMcp } from "../mcp/fixtures.ts";
import { dailyRows, importThroughCli, type DailyCharge } from "./helpers.ts";
import { evaluateBudgets, runDueBudgetEvaluations } from "../../lib/budgets/evaluate.ts";
import { BudgetThresholdCrossedData } from "../../lib/events/data/budget.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";

const JUNE_17 = new Date("2026-06-17T12:00:00Z");

const EC2: DailyCharge = { account: "111", service: "EC2", perDay: 30.3337, team: "web" };
const RDS: DailyCharge = { account: "222", service: "RDS", perDay: 9.6663, team: "data" };
const EUR_VM: DailyCharge = { payer: "eur-ba", provider: "Microsoft", currency: "EUR", account: "eur-sub", service: "Virtual Machines", perDay: 5.55 };
const S3: DailyCharge = { payer: "payer-2", account: "333", service: "S3", perDay: 15 };

const EC2_WEB_FILTER = { provider: "aws", billing_account_id: "payer-1", account_id: "111", service: "EC2", tag: { key: "team", value: "web" } };

interface EventRow {
  id: string;
  data: any;
  dedupe_key: string;
  resource_path: string;
  console_path: string;
  occurred_at: string;
}

describeEachDb("budgets evaluated after imports, daily and across months", (driver) => {
  let clock = JUNE_17;
  const t = useTestApp(driver, { now: () => clock });
  let client: Client;
  const ids: Record<string, string> = {};

  const call = async (method: string, path: string, body?: unknown) => {
    const r = await t.orgRequest(method, path, { body });
    const text = await r.text();
    expect(r.status, `${method} ${path}: ${text.slice(0, 500)}`).toBeLessThan(300);
    return text ? JSON.parse(text) : null;
  };
  const budget = (name: string) => call("GET", `/budgets/${ids[name]}`);
  const events = (orgId = t.org.id) =>
    t.s.handle.query<EventRow>(
      `SELECT id, data, dedupe_key, resource_path, console_path, occurred_at FROM events WHERE org_id = $1 AND type = 'budget.threshold_crossed' ORDER BY seq`,
      [orgId],
    );
  const keysOf = (rows: EventRow[]) => rows.map((e) => e.dedupe_key.replace(/^budget:[^:]+:/, `${Object.keys(ids).find((n) => e.dedupe_key.includes(ids[n]!))}:`)).sort();
  const tool = async (name: string, args: Record<string, unknown>) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    return r.structuredContent;
  };
  /** GET /costs's total of one month for these filter params, in one currency. */
  const costsOfMonth = async (month: string, params: string, currency: string) => {
    const next = month === "2026-06" ? "2026-07-01" : "2026-08-01";
    const r = await call("GET", `/costs?start_date=${month}-01&end_date=${next}&metric=effective_cost${params ? `&${params}` : ""}`);
    return r.totals.find((x: any) => x.currency === currency)?.effective_cost ?? 0;
  };

  beforeAll(async () => {
    const create = async (name: string, body: Record<string, unknown>) => (ids[name] = (await call("POST", "/budgets", { name, ...body })).id);
    await create("org", { amount: 1000, currency: "USD", thresholds: [50, 80, 100].map((percent) => ({ percent, basis: "actual" })).concat([{ percent: 100, basis: "forecast" }]) });
    await create("ec2-web", { amount: 600, currency: "USD", filter: EC2_WEB_FILTER, thresholds: [{ percent: 50, basis: "actual" }, { percent: 100, basis: "forecast" }] });
    await create("eur", { amount: 100, currency: "EUR", thresholds: [{ percent: 100, basis: "actual" }, { percent: 100, basis: "forecast" }] });
    await create("aws", { amount: 5000, currency: "USD", filter: { provider: "aws" }, thresholds: [{ percent: 100, basis: "forecast" }] });
    await create("lambda", { amount: 10, currency: "USD", filter: { service: "Lambda" }, thresholds: [{ percent: 1, basis: "actual" }, { percent: 1, basis: "forecast" }] });
    client = await connectMcp(t, t.org.key);
  }, 60_000);

  test("no data, no event: budgets created before any import are evaluated at 0", async () => {
    expect(await events()).toEqual([]);
    expect((await budget("org")).status).toMatchObject({ month: "2026-06", actual: 0, forecast: null });
  });

  test("an import crosses thresholds: one event each, with its data; the forecast threshold fires before the actual one", async () => {
    // May 1 – June 16, complete days (each row ends at midnight): June so far is 16 days.
    const r = await importThroughCli(t.s, t.org.id, dailyRows([EC2, RDS, EUR_VM], "2026-05-01", "2026-06-17"));
    expect(r.rows_rejected).toBe(0);
    const fired = await events();
    expect(keysOf(fired)).toEqual(["ec2-web:2026-06:actual:50", "ec2-web:2026-06:forecast:100", "eur:2026-06:forecast:100", "org:2026-06:actual:50", "org:2026-06:forecast:100"]);

    const org = await budget("org");
    const actual = await costsOfMonth("2026-06", "", "USD");
    expect(actual).toBeCloseTo(16 * 40, 1);
    expect(org.status).toMatchObject({ month: "2026-06", amount: 1000, actual, last_complete_date: "2026-06-16", evaluated_at: JUNE_17.toISOString() });
    // The forecast crossed 100% while the actual has not: warned before it happens.
    expect(org.status.forecast).toBeGreaterThan(1000);
    expect(org.status.actual).toBeLessThan(800);
    const crossed = Object.fromEntries(org.status.thresholds.map((x: any) => [`${x.basis}:${x.percent}`, x.crossed_at]));
    expect(crossed).toEqual({ "actual:50": JUNE_17.toISOString(), "actual:80": null, "actual:100": null, "forecast:100": JUNE_17.toISOString() });

    const ev = fired.find((e) => e.dedupe_key === `budget:${ids.org}:2026-06:forecast:100`)!;
    expect(Value.Check(BudgetThresholdCrossedData, ev.data), JSON.stringify([...Value.Errors(BudgetThresholdCrossedData, ev.data)].slice(0, 3))).toBe(true);
    expect(ev.data).toEqual({
      budget_id: ids.org,
      budget_name: "org",
      month: "2026-06",
      basis: "forecast",
      threshold_percent: 100,
      threshold_amount: 1000,
      amount: 1000,
      currency: "USD",
      actual,
      forecast: org.status.forecast,
      percent_used: org.status.percent_used,
      forecast_percent_used: org.status.forecast_percent_used,
      filter: {},
    });
    expect(org.status.percent_used).toBeCloseTo((actual / 1000) * 100, 6);
    expect(ev.resource_path).toBe(`/beta/v1/org/${t.org.id}/budgets/${ids.org}`);
    expect(ev.console_path).toBe(`/app/budgets/${ids.org}`);
    const filtered = fired.find((e) => e.dedupe_key === `budget:${ids["ec2-web"]}:2026-06:actual:50`)!;
    expect(filtered.data).toMatchObject({ basis: "actual", threshold_percent: 50, threshold_amount: 300, filter: EC2_WEB_FILTER });
    expect(filtered.console_path).toBe(`/app/budgets/${ids["ec2-web"]}`);

    // Created in June: May (its period still open) is none of these budgets' business.
    expect((await call("GET", `/budgets/${ids.org}/history`)).map((m: any) => m.month)).toEqual(["2026-06"]);
    // No history to forecast a filter matching nothing: no forecast, nothing fired.
    expect((await budget("lambda")).status).toMatchObject({ actual: 0, forecast: null, forecast_percent_used: null });
  });

  test("the same figures again fire nothing: a second evaluation, then a second import fires only the newly crossed threshold", async () => {
    const before = await events();
    const again = await evaluateBudgets(t.s, t.org.id);
    expect(again.flatMap((e) => e.fired)).toEqual([]);
    expect(again.every((e) => e.recorded)).toBe(true);
    expect(await events()).toEqual(before);

    // An hour later, another billing account's June: the org's actual goes past 80% (not 100%); ec2-web is unchanged.
    clock = new Date("2026-06-17T13:00:00Z");
    await importThroughCli(t.s, t.org.id, dailyRows([S3], "2026-06-01", "2026-06-17"));
    const after = await events();
    expect(keysOf(after.slice(before.length))).toEqual(["org:2026-06:actual:80"]);
    const org = await budget("org");
    expect(org.status.actual).toBeCloseTo(16 * 55, 1);
    expect(org.status.thresholds.find((x: any) => x.basis === "actual" && x.percent === 100).crossed_at).toBeNull();
    expect(after[after.length - 1]!.data).toMatchObject({ basis: "actual", threshold_percent: 80, actual: org.status.actual });
  });

  test("a filtered budget counts exactly what GET /costs shows for its filter and currency, to the cent", async () => {
    const cases: [string, string, string][] = [
      ["org", "", "USD"],
      ["ec2-web", "provider=aws&billing_account=payer-1&account=111&service=EC2&tag:team=web", "USD"],
      ["eur", "", "EUR"],
      ["aws", "provider=aws", "USD"],
      ["lambda", "service=Lambda", "USD"],
    ];
    for (const [name, params, currency] of cases) {
      const b = await budget(name);
      expect(b.status.actual, name).toBe(await costsOfMonth("2026-06", params, currency));
      const history = await call("GET", `/budgets/${ids[name]}/history`);
      expect(history[0]).toMatchObject({ month: "2026-06", actual: b.status.actual, forecast: b.status.forecast, currency });
    }
    // The filter keeps only the matching cost: EC2 of account 111 tagged web, not RDS, S3 or EUR.
    expect((await budget("ec2-web")).status.actual).toBeCloseTo(16 * 30.3337, 1);
    expect((await budget("eur")).status.actual).toBeCloseTo(16 * 5.55, 1);
    // A tag value or an account that does not match: nothing.
    const miss = await call("POST", "/budgets", { name: "web of 222", amount: 10, currency: "USD", filter: { account_id: "222", tag: { key: "team", value: "web" } }, thresholds: [{ percent: 1, basis: "actual" }] });
    expect(miss.status.actual).toBe(0);
    await call("DELETE", `/budgets/${miss.id}`);
  });

  test("the forecast is the assistant's forecast_spend month-end projection (unfiltered, and by provider)", async () => {
    const whole = await tool("forecast_spend", { currency: "USD" });
    expect(whole.month_end.month).toBe("2026-06");
    expect((await budget("org")).status.forecast).toBe(whole.month_end.projected_total);
    const aws = await tool("forecast_spend", { currency: "USD", provider: "aws" });
    expect((await budget("aws")).status.forecast).toBe(aws.month_end.projected_total);
    const eur = await tool("forecast_spend", { currency: "EUR" });
    expect((await budget("eur")).status.forecast).toBe(eur.month_end.projected_total);
    expect((await budget("eur")).status.last_complete_date).toBe(eur.history.last_complete_date);
  });

  test("the daily job: due budgets are claimed once across two replicas, evaluated, and due again the next UTC day", async () => {
    const other = await t.newOrg("Daily job org");
    const theirs = await (await t.request("POST", `/beta/v1/org/${other.id}/budgets`, { key: other.key, body: { name: "theirs", amount: 5, currency: "USD", thresholds: [{ percent: 100, basis: "actual" }] } })).json();
    const before = await events();
    clock = new Date("2026-06-18T00:10:00Z");
    // Two replicas (their own Services on the same database) run the job at once.
    const replica = createServices(t.s.handle, t.s.config, createLogger("silent"), { now: () => clock });
    const [a, b] = await Promise.all([runDueBudgetEvaluations(t.s), runDueBudgetEvaluations(replica)]);
    const all = [...a, ...b].sort();
    expect(all).toEqual([...Object.values(ids), theirs.id].sort());
    expect(new Set(all).size).toBe(all.length);
    expect(await runDueBudgetEvaluations(t.s)).toEqual([]);
    // Nothing new crossed; every status was evaluated now.
    expect(await events()).toEqual(before);
    expect((await budget("org")).status.evaluated_at).toBe(clock.toISOString());
    clock = new Date("2026-06-18T23:59:00Z");
    expect(await runDueBudgetEvaluations(t.s)).toEqual([]);
    clock = new Date("2026-06-19T00:05:00Z");
    expect((await runDueBudgetEvaluations(t.s)).length).toBe(Object.keys(ids).length + 1);
  });

  test("a new month fires every threshold again (its own dedupe keys); the month before, while its period is open, tells of its late data once", async () => {
    const before = await events();
    clock = new Date("2026-07-10T12:00:00Z");
    // The providers restate June in full (its last two weeks arrive late) and bring July 1–9.
    await importThroughCli(t.s, t.org.id, dailyRows([EC2, RDS], "2026-06-01", "2026-07-10"));
    await importThroughCli(t.s, t.org.id, [...dailyRows([S3], "2026-06-01", "2026-07-01"), ...dailyRows([{ ...S3, perDay: 25 }], "2026-07-01", "2026-07-10")]);
    const fired = (await events()).slice(before.length);
    // June closed over budget (told after it ended, once); July starts over. The EUR export stopped
    // on June 16: its forecast runs on from there (as forecast_spend's for EUR does).
    expect(keysOf(fired)).toEqual(["ec2-web:2026-07:forecast:100", "eur:2026-07:forecast:100", "org:2026-06:actual:100", "org:2026-07:actual:50", "org:2026-07:forecast:100"]);
    const org = await budget("org");
    expect(org.status).toMatchObject({ month: "2026-07", last_complete_date: "2026-07-09" });
    expect(org.status.actual).toBe(await costsOfMonth("2026-07", "", "USD"));
    expect(org.status.actual).toBeCloseTo(9 * 65, 1);
    expect(org.status.thresholds.filter((x: any) => x.crossed_at).map((x: any) => `${x.basis}:${x.percent}`)).toEqual(["actual:50", "forecast:100"]);
    const history = await call("GET", `/budgets/${ids.org}/history`);
    expect(history.map((m: any) => m.month)).toEqual(["2026-07", "2026-06"]);
    // June is over: its forecast is its actual (every day of it is complete now).
    const june = await costsOfMonth("2026-06", "", "USD");
    expect(june).toBeCloseTo(30 * 55, 1);
    expect(history[1]).toMatchObject({ actual: june, forecast: june, percent_used: (june / 1000) * 100 });
    expect(history[1].crossed.map((c: any) => `${c.basis}:${c.percent}`)).toEqual(["actual:50", "forecast:100", "actual:80", "actual:100"]);
    expect(history[0].crossed.map((c: any) => `${c.basis}:${c.percent}`).sort()).toEqual(["actual:50", "forecast:100"]);
    // Evaluated again (the daily job on July 11): nothing fires twice.
    clock = new Date("2026-07-11T00:05:00Z");
    await runDueBudgetEvaluations(t.s);
    expect((await events()).length).toBe(before.length + fired.length);
  });

  test("a failing evaluation is logged and never fails the import", async () => {
    const logs: any[] = [];
    const s = createServices(t.s.handle, t.s.config, createLogger("debug", (l) => logs.push(JSON.parse(l))), { now: () => clock });
    await t.s.handle.query(`ALTER TABLE budget_months RENAME TO budget_months_away`);
    try {
      const r = await importThroughCli(s, t.org.id, dailyRows([{ ...S3, perDay: 26 }], "2026-07-01", "2026-07-10"));
      expect(r.rows_imported).toBe(9);
    } finally {
      await t.s.handle.query(`ALTER TABLE budget_months_away RENAME TO budget_months`);
    }
    expect(logs).toContainEqual(expect.objectContaining({ level: "error", msg: "budget evaluation after an import failed", org_id: t.org.id }));
    // The import stands, and the next evaluation catches up.
    expect(await costsOfMonth("2026-07", "service=S3", "USD")).toBe(9 * 26);
    await evaluateBudgets(t.s, t.org.id);
    expect((await budget("org")).status.actual).toBe(await costsOfMonth("2026-07", "", "USD"));
  });
});
