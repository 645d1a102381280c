/**
 * get_spend keeps billing currencies apart (issue 15: "59.82 USD + 898.55 EUR = 958.37"): every
 * row carries its currency, the grouping always includes it, totals are per currency and the
 * summary names one figure per currency. Its cents are the REST reports' cents (issue 15: the
 * assistant's answers agree with the reports): read through queryCosts, days and months rounded
 * over their whole month. Its limit keeps the largest accounts of each currency or the latest
 * days, also past the 1000 rows one cost query returns. Through the SDK client, the real app
 * and FOCUS imports (or rows inserted as an import writes them), on both drivers.
 */
import { expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { billingLineItems } from "../../lib/db/schema/index.ts";
import { freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv } from "../reports/helpers.ts";
import { NOW, connectMcp } from "./fixtures.ts";

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
  return { ...r.structuredContent, summary: r.content[0].text as string };
}

const cents = (v: number) => Math.round(v * 100);
const DAY = 86_400_000;
const ymd = (t: number) => new Date(t).toISOString().slice(0, 10);
/** Σ of shown amounts, in cents. */
const sumC = (values: unknown[]) => values.reduce<number>((a, v) => a + cents(Number(v ?? 0)), 0);
const MONEY = ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"] as const;

/** One daily FOCUS row (usage unless said otherwise). */
function row(o: { provider: "AWS" | "Microsoft"; ba: string; account: string; currency: string; day: string; cost: number; service?: string; extra?: Record<string, string | number | null> }) {
  const month = o.day.slice(0, 7);
  const next = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 1)).toISOString().slice(0, 10);
  const end = new Date(Date.parse(`${o.day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 19) + "Z";
  return {
    ProviderName: o.provider, BillingAccountId: o.ba, BillingAccountName: o.ba, SubAccountId: o.account, SubAccountName: o.account, BillingCurrency: o.currency,
    BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}T00:00:00Z`, ChargePeriodStart: `${o.day}T00:00:00Z`, ChargePeriodEnd: end,
    ServiceName: o.service ?? "Compute", BilledCost: o.cost, EffectiveCost: o.cost, ListCost: o.cost, ContractedCost: o.cost, ...o.extra,
  };
}

describeEachDb("mcp get_spend: one figure per currency", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("a USD and a EUR account: rows carry their currency, totals per currency, never the mixed sum", async () => {
    const org = await t.newOrg("Two currencies");
    // The figures: 59.82 USD and 898.55 EUR in May (a naive sum says 958.37).
    const rows = [
      row({ provider: "AWS", ba: "usd-payer", account: "usd-a", currency: "USD", day: "2026-05-04", cost: 20.005 }),
      row({ provider: "AWS", ba: "usd-payer", account: "usd-a", currency: "USD", day: "2026-05-05", cost: 19.81 }),
      row({ provider: "AWS", ba: "usd-payer", account: "usd-b", currency: "USD", day: "2026-05-05", cost: 10, service: "Storage" }),
      row({ provider: "AWS", ba: "usd-payer", account: "usd-c", currency: "USD", day: "2026-05-05", cost: 10, extra: { ChargeCategory: "Tax", ServiceName: "Tax" } }),
      row({ provider: "Microsoft", ba: "eur-ea", account: "eur-sub", currency: "EUR", day: "2026-05-04", cost: 449.27 }),
      row({ provider: "Microsoft", ba: "eur-ea", account: "eur-sub", currency: "EUR", day: "2026-05-05", cost: 449.28 }),
    ];
    await importFocus(t.s.db, org.id, Readable.from([focusCsv(rows)]), { fileName: "two-currencies.csv", now: NOW });
    const client = await connectMcp(t, org.key);
    const window = { start_date: "2026-05-01", end_date: "2026-06-01" };

    for (const group_by of ["month", "day", "account", "service"]) {
      const s = await call(client, "get_spend", { group_by, ...window });
      expect(s.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
      for (const r of s.rows) expect(["EUR", "USD"]).toContain(r.currency);
      for (const tot of s.totals) {
        const mine = s.rows.filter((r: any) => r.currency === tot.currency);
        for (const k of MONEY) expect(cents(tot[k])).toBe(mine.reduce((a: number, r: any) => a + cents(r[k]), 0));
      }
      const usd = s.totals.find((x: any) => x.currency === "USD");
      const eur = s.totals.find((x: any) => x.currency === "EUR");
      expect(usd.effective_cost).toBe(59.82);
      expect(usd.other_cost).toBe(10);
      expect(eur.effective_cost).toBe(898.55);
      expect(eur.billed_cost).toBe(898.55);
      // One figure per currency in the summary, and the mixed sum nowhere.
      expect(s.summary).toContain("EUR 898.55, USD 59.82");
      expect(JSON.stringify(s)).not.toContain("958.37");
    }
    // A day with both currencies is two rows, not one added row.
    const d = await call(client, "get_spend", { group_by: "day", ...window });
    expect(d.rows.filter((r: any) => r.key === "2026-05-05").map((r: any) => `${r.currency}:${r.effective_cost}`).sort()).toEqual(["EUR:449.28", "USD:39.81"]);

    // Only one currency when asked.
    const onlyEur = await call(client, "get_spend", { group_by: "account", currency: "EUR", ...window });
    expect(onlyEur.rows).toEqual([{ key: "eur-sub", provider: "azure", currency: "EUR", billed_cost: 898.55, effective_cost: 898.55, ondemand_cost: 898.55, commitment_cost: 0, other_cost: 0 }]);
    expect(onlyEur.totals.map((x: any) => x.currency)).toEqual(["EUR"]);
    expect((await call(client, "get_spend", { currency: "JPY", ...window })).totals).toEqual([]);
    const bad: any = await client.callTool({ name: "get_spend", arguments: { currency: "euro" } }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
    expect(bad.isError).toBe(true);

    // Over the limit, the largest account of each currency is kept (EUR is not crowded out by
    // comparing its amounts with USD ones, nor the other way round).
    const top = await call(client, "get_spend", { group_by: "account", limit: 2, ...window });
    expect(top.truncated).toBe(true);
    expect(top.total_rows).toBe(4);
    expect(top.rows.map((r: any) => `${r.currency}:${r.key}`)).toEqual(["EUR:eur-sub", "USD:usd-a"]);
    expect(top.totals.find((x: any) => x.currency === "USD").effective_cost).toBe(59.82);
    await client.close();
  }, 60_000);

  test("the reports' cents: days as cloud_bill_daily (also in a partial month), months as the monthly reports, accounts as cloud_bill_by_account", async () => {
    const org = await t.newOrg("Report cents");
    // Sub-cent amounts on every day from May 25 to June 9: each day rounded on its own (half up),
    // or rounded over a part of its month, would show other cents than the reports.
    const rows = [];
    for (let day = Date.UTC(2026, 4, 25), k = 0; day < Date.UTC(2026, 5, 10); day += DAY, k++) {
      const d = ymd(day);
      rows.push(row({ provider: "AWS", ba: "usd-payer", account: "usd-a", currency: "USD", day: d, cost: 10 + ((k * 37) % 10) / 1000 + 0.004 }));
      rows.push(row({ provider: "AWS", ba: "usd-payer", account: "usd-b", currency: "USD", day: d, cost: 3 + ((k * 53) % 10) / 1000 + 0.0051, service: "Storage" }));
      rows.push(row({ provider: "AWS", ba: "usd-payer", account: "usd-b", currency: "USD", day: d, cost: 0.3 + ((k * 71) % 10) / 1000, extra: { ChargeCategory: "Tax", ServiceName: "Tax" } }));
      rows.push(row({ provider: "Microsoft", ba: "eur-ea", account: "eur-sub", currency: "EUR", day: d, cost: 7 + ((k * 29) % 10) / 1000 + 0.0049 }));
    }
    await importFocus(t.s.db, org.id, Readable.from([focusCsv(rows)]), { fileName: "sub-cents.csv", now: NOW });
    // May is closed (as an invoiced import closes it); the freeze job then finalizes its reports.
    await t.s.handle.query(`UPDATE billing_periods SET status = 'closed', closed_at = $2::timestamptz WHERE org_id = $1::uuid AND month = '2026-05-01'`, [org.id, NOW.toISOString()]);
    expect((await freezeClosedPeriods(t.s.db, NOW, { orgId: org.id })).map((f) => `${f.provider} ${f.month}`).sort()).toEqual(["aws 2026-05-01", "azure 2026-05-01"]);
    const rest = async (type: string, month: number) => {
      const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}?year=2026&month=${month}`, { key: org.key });
      expect(r.status).toBe(200);
      return ((await r.json()) as any).rows as any[];
    };
    const daily = [...(await rest("cloud_bill_daily", 5)), ...(await rest("cloud_bill_daily", 6))];
    const client = await connectMcp(t, org.key);
    const same = (r: any, line: any, what: string) => {
      expect(cents(r.effective_cost), `${what} effective`).toBe(cents(line.total_cost));
      for (const k of ["billed_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(cents(r[k]), `${what} ${k}`).toBe(cents(line[k]));
    };

    // Days of a window within a month: cloud_bill_daily's rows, rounded over the whole month.
    const week = { start_date: "2026-06-02", end_date: "2026-06-07" };
    const d = await call(client, "get_spend", { group_by: "day", ...week });
    const inWeek = daily.filter((x) => x.date >= week.start_date && x.date < week.end_date);
    expect(d.rows).toHaveLength(inWeek.length);
    for (const line of inWeek) same(d.rows.find((r: any) => r.key === line.date && r.provider === line.provider && r.currency === line.billing_currency), line, `${line.date} ${line.provider}`);
    for (const tot of d.totals) expect(cents(tot.effective_cost)).toBe(sumC(inWeek.filter((x) => x.billing_currency === tot.currency).map((x) => x.total_cost)));
    // The data tell the rules apart: rounded over the window alone (a cost query of those days),
    // or each day half up, some day would show other cents.
    const windowOnly = ((await client.callTool({ name: "query_costs", arguments: { ...week, group_by: ["day", "provider"], limit: 1000 } })) as any).structuredContent;
    const exact = new Map<string, number>();
    for (const r of rows) {
      const k = `${r.ChargePeriodStart.slice(0, 10)}/${r.BillingCurrency}`;
      exact.set(k, (exact.get(k) ?? 0) + r.EffectiveCost);
    }
    expect(inWeek.some((line) => cents(windowOnly.rows.find((r: any) => r.keys.day === line.date && r.currency === line.billing_currency).effective_cost) !== cents(line.total_cost))).toBe(true);
    expect(inWeek.some((line) => Math.round(exact.get(`${line.date}/${line.billing_currency}`)! * 100) !== cents(line.total_cost))).toBe(true);

    // A window across two partial months, by day and by month: each month is Σ of its report days in the window.
    const across = { start_date: "2026-05-29", end_date: "2026-06-04" };
    const ad = await call(client, "get_spend", { group_by: "day", ...across });
    const acrossDays = daily.filter((x) => x.date >= across.start_date && x.date < across.end_date);
    expect(ad.rows).toHaveLength(acrossDays.length);
    for (const line of acrossDays) same(ad.rows.find((r: any) => r.key === line.date && r.provider === line.provider && r.currency === line.billing_currency), line, `${line.date} ${line.provider}`);
    const am = await call(client, "get_spend", { group_by: "month", ...across });
    expect(am.rows.map((r: any) => `${r.key}/${r.provider}/${r.currency}`)).toEqual(["2026-05/azure/EUR", "2026-06/azure/EUR", "2026-05/aws/USD", "2026-06/aws/USD"]);
    for (const r of am.rows) {
      const mine = acrossDays.filter((x) => x.date.startsWith(r.key) && x.provider === r.provider && x.billing_currency === r.currency);
      expect(cents(r.effective_cost)).toBe(sumC(mine.map((x) => x.total_cost)));
      for (const k of ["billed_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(cents(r[k])).toBe(sumC(mine.map((x) => x[k])));
    }
    expect(am.totals).toEqual(ad.totals);

    // Whole months: the monthly reports per provider and currency (cloud_bill_by_service summed).
    const m = await call(client, "get_spend", { group_by: "month", start_date: "2026-05-01", end_date: "2026-07-01" });
    for (const month of [5, 6]) {
      const svc = await rest("cloud_bill_by_service", month);
      for (const r of m.rows.filter((x: any) => x.key === `2026-0${month}`)) {
        const mine = svc.filter((x) => x.provider === r.provider && x.billing_currency === r.currency);
        expect(mine.length).toBeGreaterThan(0);
        expect(cents(r.effective_cost)).toBe(sumC(mine.map((x) => x.total_cost)));
        expect(cents(r.billed_cost)).toBe(sumC(mine.map((x) => x.billed_cost)));
      }
    }

    // Accounts of a closed (frozen) month: cloud_bill_by_account's rows.
    const byAccount = await rest("cloud_bill_by_account", 5);
    const a = await call(client, "get_spend", { group_by: "account", start_date: "2026-05-01", end_date: "2026-06-01" });
    expect(a.rows.map((r: any) => `${r.currency}/${r.key}`)).toEqual(["EUR/eur-sub", "USD/usd-a", "USD/usd-b"]);
    for (const r of a.rows) same(r, byAccount.find((x) => x.account_id === r.key && x.billing_currency === r.currency), r.key);
    for (const tot of a.totals) expect(cents(tot.billed_cost)).toBe(sumC(byAccount.filter((x) => x.billing_currency === tot.currency).map((x) => x.billed_cost)));
    await client.close();
  }, 60_000);

  test("past the 1000 rows of one cost query: the largest accounts of each currency, the latest days, totals over every row", async () => {
    const org = await t.newOrg("Many rows");
    const line = (o: { provider: "aws" | "azure" | "gcp"; ba: string; account: string; currency: string; day: string; cost: number }) => {
      const s = new Date(`${o.day}T00:00:00Z`);
      return {
        orgId: org.id, provider: o.provider, billingAccountId: o.ba, subAccountId: o.account, billingCurrency: o.currency, billingPeriod: `${o.day.slice(0, 7)}-01`,
        chargePeriodStart: s, chargePeriodEnd: new Date(s.getTime() + DAY), chargeCategory: "Usage", serviceName: "Compute", billedCost: String(o.cost), effectiveCost: String(o.cost),
      };
    };
    const rows = [];
    // 1001 USD accounts on gcp (100 to 1100 USD) and three small EUR ones on azure (1, 2, 3 EUR), in September 2023.
    for (let i = 0; i < 1001; i++) rows.push(line({ provider: "gcp", ba: "usd-payer", account: `usd-${String(i).padStart(4, "0")}`, currency: "USD", day: "2023-09-10", cost: 100 + i }));
    for (let i = 1; i <= 3; i++) rows.push(line({ provider: "azure", ba: "eur-ea", account: `eur-${i}`, currency: "EUR", day: "2023-09-10", cost: i }));
    // Every day from 2023-08-01 to 2026-06-16 on aws and azure (USD): 1 + the day's index.
    const first = Date.UTC(2023, 7, 1);
    const last = Date.UTC(2026, 5, 16);
    for (let day = first; day <= last; day += DAY) {
      const cost = 1 + (day - first) / DAY;
      for (const provider of ["aws", "azure"] as const) rows.push(line({ provider, ba: `${provider}-days`, account: `${provider}-days`, currency: "USD", day: ymd(day), cost }));
    }
    for (let i = 0; i < rows.length; i += 500) await t.s.db.insert(billingLineItems).values(rows.slice(i, i + 500) as any);
    const client = await connectMcp(t, org.key);

    // Accounts of September 2023: 1006 rows (the two daily accounts are the largest); the largest
    // of each currency, the EUR ones not crowded out by the 1003 larger USD ones.
    const sept = { start_date: "2023-09-01", end_date: "2023-10-01" };
    const a = await call(client, "get_spend", { group_by: "account", limit: 6, ...sept });
    expect(a.total_rows).toBe(1004 + 2);
    expect(a.truncated).toBe(true);
    expect(a.rows.map((r: any) => `${r.currency}:${r.key}`)).toEqual(["EUR:eur-3", "EUR:eur-2", "EUR:eur-1", "USD:aws-days", "USD:azure-days", "USD:usd-1000"]);
    const accounts = Array.from({ length: 1001 }, (_, i) => 100 + i).reduce((x, y) => x + y, 0);
    const septDays = Array.from({ length: 30 }, (_, i) => 1 + (Date.UTC(2023, 8, 1) - first) / DAY + i).reduce((x, y) => x + y, 0);
    const usdSept = accounts + 2 * septDays;
    expect(a.totals).toEqual([
      { currency: "EUR", billed_cost: 6, effective_cost: 6, ondemand_cost: 6, commitment_cost: 0, other_cost: 0 },
      { currency: "USD", billed_cost: usdSept, effective_cost: usdSept, ondemand_cost: usdSept, commitment_cost: 0, other_cost: 0 },
    ]);
    const eur = await call(client, "get_spend", { group_by: "account", currency: "EUR", limit: 2, ...sept });
    expect(eur.rows.map((r: any) => r.key)).toEqual(["eur-3", "eur-2"]);
    expect(eur.total_rows).toBe(3);
    expect(eur.totals.map((x: any) => `${x.currency}:${x.effective_cost}`)).toEqual(["EUR:6"]);

    // Days over almost three years (partial first and last months): the latest kept, totals over all.
    const span = { start_date: "2023-08-10", end_date: "2026-06-17" };
    const inSpan = (Date.UTC(2026, 5, 17) - Date.UTC(2023, 7, 10)) / DAY;
    const d = await call(client, "get_spend", { group_by: "day", provider: "aws", limit: 40, ...span });
    expect(d.total_rows).toBe(inSpan);
    expect(d.rows.map((r: any) => r.key)).toEqual(Array.from({ length: 40 }, (_, i) => ymd(last - (39 - i) * DAY)));
    for (const r of d.rows) expect(r.effective_cost).toBe(1 + (Date.parse(`${r.key}T00:00:00Z`) - first) / DAY);
    const dayIndex = (Date.UTC(2023, 7, 10) - first) / DAY;
    const awsTotal = Array.from({ length: inSpan }, (_, i) => 1 + dayIndex + i).reduce((x, y) => x + y, 0);
    expect(d.totals.map((x: any) => x.effective_cost)).toEqual([awsTotal]);
    // Both providers: 2 rows a day, the most recent 1000 (the last 500 days).
    const both = await call(client, "get_spend", { group_by: "day", limit: 1000, ...span });
    expect(both.total_rows).toBe(2 * inSpan + 2);
    expect(both.rows).toHaveLength(1000);
    const keptDays = [...new Set(both.rows.map((r: any) => r.key))].sort();
    expect(keptDays).toHaveLength(500);
    expect(keptDays[499]).toBe(ymd(last));
    expect(keptDays[0]).toBe(ymd(last - 499 * DAY));
    expect(both.totals.map((x: any) => `${x.currency}:${x.effective_cost}`)).toEqual(["EUR:6", `USD:${2 * awsTotal + accounts}`]);
    // Months: the latest kept.
    const months = await call(client, "get_spend", { group_by: "month", provider: "aws", limit: 3, ...span });
    expect(months.rows.map((r: any) => r.key)).toEqual(["2026-04", "2026-05", "2026-06"]);
    expect(months.total_rows).toBe(35);
    expect(months.totals).toEqual(d.totals);
    await client.close();
  }, 120_000);
});
