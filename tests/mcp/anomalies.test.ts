import { beforeAll, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { importFocus } from "../../lib/billing/focus.ts";
import { rng } from "../../lib/billing/generator.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { focusCsv } from "../reports/helpers.ts";
import { connectMcp } from "./fixtures.ts";

/** Mid-morning: today (2026-03-20) is partial by the clock, and aws's export stops at 08:00 on the 19th. */
const NOW = new Date("2026-03-20T10:00:00Z");
const DAY = 86_400_000;
const FIRST = Date.UTC(2026, 0, 5); // a Monday
const ymd = (t: number) => new Date(t).toISOString().slice(0, 10);
const isWeekend = (t: number) => [0, 6].includes(new Date(t).getUTCDay());

/**
 * aws (USD, billing account ba-aws): account acct-a "Web" runs "Compute Service" at 100 a weekday
 * and 40 a weekend day, with spikes of +150 on 2026-02-24 and +300 on 2026-03-10, and a partial
 * trailing day (2026-03-19, 00:00-08:00, 30); account acct-b "Batch" has intermittent "Storage"
 * charges (about a third of the days, 14-26). azure (EUR, billing account ba-eur): account eur-1
 * runs "Virtual Machines" at 50 a day, 5 on 2026-03-12, complete through 2026-03-19, plus
 * today's first hours.
 */
function rows() {
  const out: Record<string, string | number | null>[] = [];
  const r = rng(11);
  const row = (start: number, end: number, o: Record<string, string | number | null>) => {
    const d = new Date(start);
    const bp = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const bpEnd = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    out.push({
      BillingPeriodStart: new Date(bp).toISOString(), BillingPeriodEnd: new Date(bpEnd).toISOString(),
      ChargePeriodStart: new Date(start).toISOString(), ChargePeriodEnd: new Date(end).toISOString(), ...o,
    });
  };
  const aws = (acct: string, name: string, service: string, cost: number) => ({ ProviderName: "AWS", BillingAccountId: "ba-aws", SubAccountId: acct, SubAccountName: name, ServiceName: service, BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost });
  const eur = (cost: number) => ({ ProviderName: "Microsoft", BillingAccountId: "ba-eur", SubAccountId: "eur-1", SubAccountName: "EUR sub", BillingCurrency: "EUR", ServiceName: "Virtual Machines", BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost });
  for (let t = FIRST; t < Date.UTC(2026, 2, 19); t += DAY) {
    row(t, t + DAY, aws("acct-a", "Web", "Compute Service", isWeekend(t) ? 40 : 100));
    if (r() < 0.33) row(t, t + DAY, aws("acct-b", "Batch", "Storage", Math.round((14 + 12 * r()) * 100) / 100));
    row(t, t + DAY, eur(ymd(t) === "2026-03-12" ? 5 : 50));
  }
  row(Date.UTC(2026, 1, 24), Date.UTC(2026, 1, 25), aws("acct-a", "Web", "Compute Service", 150));
  row(Date.UTC(2026, 2, 10), Date.UTC(2026, 2, 11), aws("acct-a", "Web", "Compute Service", 300));
  // aws: the 19th only up to 08:00 (a partial day); azure: the 19th complete, today's first hours.
  row(Date.UTC(2026, 2, 19), Date.UTC(2026, 2, 19, 8), aws("acct-a", "Web", "Compute Service", 30));
  row(Date.UTC(2026, 2, 19), Date.UTC(2026, 2, 20), eur(50));
  row(Date.UTC(2026, 2, 20), Date.UTC(2026, 2, 20, 8), eur(12));
  return out;
}

const ROWS = rows();
/** acct-b's first charge: its series starts there (days before it are not "missing"). */
const FIRST_B = Date.parse(String(ROWS.find((r) => r.SubAccountId === "acct-b")!.ChargePeriodStart));

describeEachDb("mcp detect_spend_anomalies on imported FOCUS data", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let client: Client;
  const raw = (args: Record<string, unknown> = {}) => client.callTool({ name: "detect_spend_anomalies", arguments: args }) as Promise<any>;
  const call = async (args: Record<string, unknown> = {}) => {
    const r = await raw(args);
    if (r.isError) throw new Error(r.content?.[0]?.text);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return r.structuredContent;
  };
  const brief = (a: any) => [a.provider, a.currency, a.key, a.date, a.direction];

  beforeAll(async () => {
    const res = await importFocus(t.s.db, t.org.id, Readable.from([focusCsv(ROWS)]), { fileName: "anomalies.csv", now: NOW });
    expect(res.rows_rejected ?? 0).toBe(0);
    client = await connectMcp(t, t.org.key);
  }, 60_000);

  test("by account: the spikes and the drop, per currency, complete days only", async () => {
    const r = await call();
    // Default window: the 30 days up to the last complete day of the data (ba-eur: the 19th).
    expect(r.window).toEqual({ start_date: "2026-02-18", end_date: "2026-03-20" });
    expect(r.complete_through).toEqual([
      { provider: "aws", billing_account_id: "ba-aws", date: "2026-03-18" },
      { provider: "azure", billing_account_id: "ba-eur", date: "2026-03-19" },
    ]);
    expect(r.anomalies.map(brief)).toEqual([
      ["azure", "EUR", "eur-1", "2026-03-12", "drop"],
      ["aws", "USD", "acct-a", "2026-03-10", "spike"],
      ["aws", "USD", "acct-a", "2026-02-24", "spike"],
    ]);
    // A flat weekday series: expected = the Tuesday level, spread at its 2 % floor; the weekend
    // days (40) and the intermittent Storage account are not anomalies, nor is the partial 19th.
    expect(r.anomalies[1]).toMatchObject({ name: "Web", weekday: "Tuesday", expected: 100, actual: 400, impact: 300, spread: 2, score: 150 });
    expect(r.anomalies[2]).toMatchObject({ expected: 100, actual: 250, impact: 150 });
    expect(r.anomalies[0]).toMatchObject({ name: "EUR sub", expected: 50, actual: 5, impact: -45, spread: 1, score: -45 });
    for (const a of r.anomalies) expect(a.impact).toBe(Math.round((a.actual - a.expected) * 100) / 100);
    // Totals per currency, never mixed: the sums of the anomalies shown.
    expect(r.totals).toEqual([
      { currency: "EUR", anomalies: 1, spike_impact: 0, drop_impact: -45 },
      { currency: "USD", anomalies: 2, spike_impact: 450, drop_impact: 0 },
    ]);
    expect(r.total_count).toBe(3);
    expect(r.scored.series).toBe(3);
    // acct-a: 2026-02-18..03-18 (29 days); eur-1: ..03-19 (30); acct-b: from its first day to the 18th.
    expect(r.scored.days).toBe(29 + 30 + 29);
    expect(r.method).toContain("same weekday");
    expect(r.measured.false_positive_rate).toBeGreaterThan(0);
    expect(r.measured.false_positive_rate).toBeLessThanOrEqual(0.01);
    expect(r.parameters.k).toBe(3.5);
    const text = (await raw()).content[0].text;
    expect(text).toContain("USD 450");
    expect(text).toContain("EUR -45");
  });

  test("a trailing partial day and today are never scored, even when the window asks for them", async () => {
    const r = await call({ start_date: "2026-03-16", end_date: "2026-03-25" });
    expect(r.window).toEqual({ start_date: "2026-03-16", end_date: "2026-03-20" });
    expect(r.anomalies).toEqual([]);
    // aws: 16-18 (the 19th stops at 08:00); azure: 16-19 (today, the 20th, is partial by the clock).
    expect(r.scored.days).toBe(3 + 4 + 3);
    const err = await raw({ start_date: "2026-03-20" });
    expect(err.isError).toBe(true);
    expect(err.content[0].text).toContain("today");
  });

  test("by service, with provider, direction, min_impact and limit", async () => {
    const s = await call({ dimension: "service" });
    expect(s.anomalies.map(brief)).toEqual([
      ["azure", "EUR", "Virtual Machines", "2026-03-12", "drop"],
      ["aws", "USD", "Compute Service", "2026-03-10", "spike"],
      ["aws", "USD", "Compute Service", "2026-02-24", "spike"],
    ]);
    expect(s.anomalies.every((a: any) => a.name === null)).toBe(true);
    const azure = await call({ provider: "azure" });
    expect(azure.anomalies.map(brief)).toEqual([["azure", "EUR", "eur-1", "2026-03-12", "drop"]]);
    expect(azure.complete_through.map((c: any) => c.provider)).toEqual(["azure"]);
    // aws alone is complete through the 18th: the default window ends there.
    const aws = await call({ provider: "aws" });
    expect(aws.window).toEqual({ start_date: "2026-02-17", end_date: "2026-03-19" });
    expect(aws.anomalies.map(brief)).toEqual([
      ["aws", "USD", "acct-a", "2026-03-10", "spike"],
      ["aws", "USD", "acct-a", "2026-02-24", "spike"],
    ]);
    const spikes = await call({ direction: "spike" });
    expect(spikes.anomalies.map((a: any) => a.direction)).toEqual(["spike", "spike"]);
    expect(spikes.totals.map((x: any) => x.currency)).toEqual(["USD"]);
    const big = await call({ min_impact: 200 });
    expect(big.anomalies.map(brief)).toEqual([["aws", "USD", "acct-a", "2026-03-10", "spike"]]);
    expect(big.parameters.min_impact).toBe(200);
    // limit is per currency; totals count every anomaly.
    const one = await call({ limit: 1 });
    expect(one.anomalies.map(brief)).toEqual([
      ["azure", "EUR", "eur-1", "2026-03-12", "drop"],
      ["aws", "USD", "acct-a", "2026-03-10", "spike"],
    ]);
    expect(one).toMatchObject({ total_count: 3, returned_count: 2, truncated: true });
    expect(one.totals.find((x: any) => x.currency === "USD")).toEqual({ currency: "USD", anomalies: 2, spike_impact: 450, drop_impact: 0 });
  });

  test("a window before the spikes finds nothing; bad windows are tool errors", async () => {
    const early = await call({ start_date: "2026-02-02", end_date: "2026-02-23" });
    expect(early.anomalies).toEqual([]);
    expect(early.scored.days).toBeGreaterThan(0);
    // The first 28 days of a series lack history: acct-a and eur-1 (from 2026-01-05) are scored
    // from 2026-02-02 on, acct-b from its 29th day.
    expect(early.scored.days_without_enough_history).toBe(Math.max(0, (FIRST_B + 28 * DAY - Date.UTC(2026, 1, 2)) / DAY));
    expect(early.scored.days + early.scored.days_without_enough_history).toBe(21 * 2 + (Date.UTC(2026, 1, 23) - Math.max(FIRST_B, Date.UTC(2026, 1, 2))) / DAY);
    const first = await call({ start_date: "2026-01-26", end_date: "2026-02-02" });
    expect(first.scored.days).toBe(0);
    for (const args of [{ start_date: "2026-02-30" }, { start_date: "2026-03-10", end_date: "2026-03-01" }, { start_date: "2024-01-01", end_date: "2026-03-01" }]) {
      const r = await raw(args);
      expect(r.isError).toBe(true);
    }
    const bad = await raw({ limit: 0 });
    expect(bad.isError).toBe(true);
  });

  test("another organization sees none of this data; the tool needs only assistant:read", async () => {
    const other = await t.newOrg("Reader", ["assistant:read"]);
    const c = await connectMcp(t, other.key);
    const { tools } = await c.listTools();
    expect(tools.map((x) => x.name)).toContain("detect_spend_anomalies");
    const r: any = await c.callTool({ name: "detect_spend_anomalies", arguments: {} });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent.anomalies).toEqual([]);
    expect(r.structuredContent.complete_through).toEqual([]);
    expect(r.structuredContent.scored.series).toBe(0);
  });
});
