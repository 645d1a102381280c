/**
 * Cost exploration questions (query_costs, list_dimension_values, compare_periods), checked
 * against the cloud_bill_* allocation reports to the cent.
 *
 * Why the cents agree: the tools round like the reports (lib/billing/costQuery.ts): exact
 * amounts per cell, then largest remainder per invoice (provider, currency, billing account,
 * month), filters applied to the rounded cells. So
 * - a tool query over whole months at a report's grain (same dimensions, same order) shows the
 *   report's rows cent for cent, whatever its filters;
 * - a tool total over whole months is the sum of the invoices' exact totals rounded, which is
 *   the sum of a report's rows over the same months: a cloud_bill report's rows add up, per
 *   (provider, currency) and month, to the exact total rounded, and in this organization each
 *   provider and currency has one billing account per month, so that is the invoice.
 * The windows are calendar months: charges are billed in the month they are charged in here.
 */
import { expect } from "bun:test";
import { EUR_ACCOUNT, expectCents, sumShown, type EvalContext, type EvalQuestion } from "./harness.ts";

const MAY = { start_date: "2026-05-01", end_date: "2026-06-01" };
const APRIL = { start_date: "2026-04-01", end_date: "2026-05-01" };

type ReportRow = Record<string, any>;
const report = async (ev: EvalContext, type: string, month: number): Promise<ReportRow[]> => (await ev.rest(`/allocation-reports/${type}?year=2026&month=${month}`)).rows;

/** Σ of a money column of report rows per billing currency (shown cents added). */
function perCurrency(rows: ReportRow[], column: string): Map<string, number> {
  const by = new Map<string, (number | string)[]>();
  for (const r of rows) by.set(r.billing_currency, [...(by.get(r.billing_currency) ?? []), r[column]]);
  return new Map([...by].map(([cur, values]) => [cur, sumShown(values)]));
}

/** Tool totals per currency equal the report's Σ per currency (the invoices' totals, see above). */
function expectTotals(totals: { currency: string; [k: string]: any }[], field: string, expected: Map<string, number>, what: string) {
  expect(totals.map((t) => t.currency).sort(), what).toEqual([...expected.keys()].sort());
  for (const t of totals) expectCents(t[field], expected.get(t.currency)!, `${what} ${t.currency}`);
}

export const questions: EvalQuestion[] = [
  {
    question: "What did the prod-platform team (tag team=prod-platform) spend last month, resource by resource?",
    tools: ["list_dimension_values", "query_costs"],
    async run(ev) {
      const teams = await ev.call("list_dimension_values", { dimension: "tag:team", prefix: "prod-", ...MAY });
      expect(teams.values.map((v: any) => v.value)).toContain("prod-platform");
      const r = await ev.call("query_costs", { ...MAY, group_by: ["account", "resource", "service"], filters: { "tag:team": "prod-platform" }, limit: 1000 });
      expect(r.truncated).toBe(false);
      expect(r.rows.length).toBeGreaterThan(0);
      // cloud_bill_by_resource has the same grain (account, resource, service) and rounding: every
      // row of the team is a report row, cent for cent (the filter does not change the cents).
      const rep = await ev.restCsv("/allocation-reports/cloud_bill_by_resource?year=2026&month=5&format=csv");
      const matched: Record<string, string>[] = [];
      for (const row of r.rows) {
        const line = rep.find((x) => x.account_id === row.keys.account && x.resource_id === (row.keys.resource ?? "") && x.service_name === (row.keys.service ?? "") && x.billing_currency === row.currency);
        expect(line, JSON.stringify(row.keys)).toBeDefined();
        expectCents(row.effective_cost, line!.total_cost, `${row.keys.resource} total`);
        expectCents(row.billed_cost, line!.billed_cost, `${row.keys.resource} billed`);
        expectCents(row.commitment_cost, line!.commitment_cost, `${row.keys.resource} commitment`);
        matched.push(line!);
      }
      // The team's total: the sum of those report rows.
      expectTotals(r.totals, "effective_cost", perCurrency(matched, "total_cost"), "team total");
    },
  },
  {
    question: "What were our top 5 services by amortized cost in May?",
    tools: ["query_costs"],
    async run(ev) {
      const r = await ev.call("query_costs", { ...MAY, group_by: ["provider", "service_category", "service"], limit: 5 });
      const rep = await report(ev, "cloud_bill_by_service", 5);
      // Ranked within each currency (a EUR amount is never compared with a USD one): the five
      // kept are each currency's largest in turn, shown by currency, largest first.
      const rank = new Map<any, number>();
      for (const cur of new Set(rep.map((x) => x.billing_currency)))
        rep.filter((x) => x.billing_currency === cur).sort((a, b) => b.total_cost - a.total_cost).forEach((x, i) => rank.set(x, i));
      const top = [...rep]
        .sort((a, b) => rank.get(a)! - rank.get(b)! || a.billing_currency.localeCompare(b.billing_currency))
        .slice(0, 5)
        .sort((a, b) => a.billing_currency.localeCompare(b.billing_currency) || rank.get(a)! - rank.get(b)!);
      expect(r.rows.map((x: any) => [x.keys.provider, x.keys.service, x.currency])).toEqual(top.map((x) => [x.provider, x.service_name, x.billing_currency]));
      r.rows.forEach((x: any, i: number) => {
        expectCents(x.effective_cost, top[i]!.total_cost, `${x.keys.service} amortized`);
        expectCents(x.ondemand_cost, top[i]!.ondemand_cost, `${x.keys.service} on-demand`);
        expectCents(x.commitment_cost, top[i]!.commitment_cost, `${x.keys.service} commitment`);
      });
      expect(r).toMatchObject({ total_rows: rep.length, truncated: true });
      // Totals over every service (not only the five shown) = Σ of all the report's rows, per currency.
      expectTotals(r.totals, "effective_cost", perCurrency(rep, "total_cost"), "May total");
      expectTotals(r.totals, "billed_cost", perCurrency(rep, "billed_cost"), "May billed");
    },
  },
  {
    question: "Which regions do we spend in, and how much in each last month?",
    tools: ["list_dimension_values"],
    async run(ev) {
      const r = await ev.call("list_dimension_values", { dimension: "region", ...MAY });
      expect(r.truncated).toBe(false);
      const regions = r.values.map((v: any) => v.value);
      for (const region of ["us-east-1", "westeurope", "us-central1"]) expect(regions).toContain(region);
      // Charges without a region (tax, credits, commitment fees) are a value of their own.
      expect(regions).toContain(null);
      // Every value's cost in cents adds up to the month's total per currency: Σ of cloud_bill_daily's May rows.
      const byCurrency = new Map<string, number[]>();
      for (const v of r.values) for (const c of v.costs) byCurrency.set(c.currency, [...(byCurrency.get(c.currency) ?? []), c.effective_cost]);
      const daily = perCurrency(await report(ev, "cloud_bill_daily", 5), "total_cost");
      expectTotals(r.totals, "effective_cost", daily, "regions total");
      for (const [cur, costs] of byCurrency) expectCents(sumShown(costs), daily.get(cur)!, `regions Σ ${cur}`);
      // EUR stays apart: the EUR subscription's rows (no region) show an EUR amount beside the USD one, never added to it.
      const none = r.values.find((v: any) => v.value === null);
      expect(none.costs.map((c: any) => c.currency).sort()).toEqual(["EUR", "USD"]);
      expectCents(none.costs.find((c: any) => c.currency === "EUR").effective_cost, daily.get("EUR")!, "EUR without region");
    },
  },
  {
    question: "Why did our cloud bill go up from April to May?",
    tools: ["compare_periods"],
    async run(ev) {
      const r = await ev.call("compare_periods", {});
      expect(r.baseline).toEqual(APRIL);
      expect(r.current).toEqual(MAY);
      // The periods' totals are the sums of the cloud bill's rows of each month (per currency).
      const april = perCurrency(await report(ev, "cloud_bill_by_service", 4), "total_cost");
      const may = perCurrency(await report(ev, "cloud_bill_by_service", 5), "total_cost");
      for (const t of r.totals) {
        expectCents(t.baseline, april.get(t.currency) ?? 0, `April ${t.currency}`);
        expectCents(t.current, may.get(t.currency) ?? 0, `May ${t.currency}`);
        expectCents(t.change, sumShown([may.get(t.currency) ?? 0, -(april.get(t.currency) ?? 0)]), `change ${t.currency}`);
      }
      expect(r.totals.find((t: any) => t.currency === "EUR")).toMatchObject({ baseline: 0 });
      // Each dimension's drivers (the top ones and the rest) add up to the change, per currency.
      for (const dim of ["accounts", "services", "resources", "commitments"]) {
        for (const c of r.drivers[dim].by_currency) {
          const change = r.totals.find((t: any) => t.currency === c.currency).change;
          expectCents(c.change, change, `${dim} ${c.currency}`);
          expectCents(sumShown([c.top_change, c.rest_change]), change, `${dim} top + rest`);
          expectCents(sumShown(r.drivers[dim].top.filter((x: any) => x.currency === c.currency).map((x: any) => x.change)), c.top_change, `${dim} top`);
        }
      }
      // The listed commitments that started or expired are the inventory's (commitment_inventory of April and May) within April-May.
      const inventory = [...(await report(ev, "commitment_inventory", 4)), ...(await report(ev, "commitment_inventory", 5))].filter((c, i, all) => all.findIndex((x) => x.commitment_id === c.commitment_id) === i);
      const within = (iso: string | null) => iso !== null && iso >= "2026-04-01" && iso < "2026-06-01";
      expect(r.commitments_started.map((c: any) => c.commitment_id).sort()).toEqual(inventory.filter((c) => within(c.starts_at)).map((c) => c.commitment_id).sort());
      expect(r.commitments_expired.map((c: any) => c.commitment_id).sort()).toEqual(inventory.filter((c) => within(c.ends_at)).map((c) => c.commitment_id).sort());
    },
  },
  {
    question: "What are the values of the env tag, and what did each cost last month?",
    tools: ["list_dimension_values"],
    async run(ev) {
      const keys = await ev.call("list_dimension_values", { dimension: "tag_keys", ...MAY });
      expect(keys.values.map((v: any) => v.value)).toEqual(expect.arrayContaining(["env", "team"]));
      const r = await ev.call("list_dimension_values", { dimension: "tag:env", ...MAY });
      expect(r.values.map((v: any) => v.value).sort()).toEqual(["nonprod", "prod", null].sort());
      // prod + nonprod + untagged = the month's cost per currency (Σ of cloud_bill_by_service's May rows).
      const may = perCurrency(await report(ev, "cloud_bill_by_service", 5), "total_cost");
      expectTotals(r.totals, "effective_cost", may, "env values");
      for (const cur of may.keys()) expectCents(sumShown(r.values.flatMap((v: any) => v.costs.filter((c: any) => c.currency === cur).map((c: any) => c.effective_cost))), may.get(cur)!, `env Σ ${cur}`);
    },
  },
  {
    question: "How much did the EUR subscription cost each month?",
    tools: ["query_costs"],
    async run(ev) {
      const r = await ev.call("query_costs", { group_by: ["month"], filters: { account: EUR_ACCOUNT } });
      // Default window: April to June; the subscription's cost is in EUR only, never added to USD.
      expect(r.totals.map((t: any) => t.currency)).toEqual(["EUR"]);
      expect(r.rows.map((x: any) => x.keys.month).sort()).toEqual(["2026-05", "2026-06"]);
      for (const [month, n] of [["2026-05", 5], ["2026-06", 6]] as const) {
        const rep = (await report(ev, "cloud_bill_by_service", n)).filter((x) => x.billing_currency === "EUR");
        const row = r.rows.find((x: any) => x.keys.month === month);
        // The subscription is its EUR invoice: Σ of the report's EUR rows.
        expectCents(row.effective_cost, sumShown(rep.map((x) => x.total_cost)), `${month} EUR`);
        expectCents(row.billed_cost, sumShown(rep.map((x) => x.billed_cost)), `${month} EUR billed`);
        expect(row.currency).toBe("EUR");
      }
      expectCents(r.totals[0].effective_cost, sumShown(r.rows.map((x: any) => x.effective_cost)), "EUR total");
    },
  },
  {
    question: "Show me our daily spend per cloud provider in May.",
    tools: ["query_costs"],
    async run(ev) {
      const r = await ev.call("query_costs", { ...MAY, group_by: ["day", "provider"], limit: 1000, metric: "billed_cost" });
      expect(r.truncated).toBe(false);
      // cloud_bill_daily's grain (day, provider, currency) over the month: the same cents, row by row.
      const rep = await report(ev, "cloud_bill_daily", 5);
      expect(r.total_rows).toBe(rep.length);
      for (const line of rep) {
        const row = r.rows.find((x: any) => x.keys.day === line.date && x.keys.provider === line.provider && x.currency === line.billing_currency);
        expect(row, `${line.date} ${line.provider}`).toBeDefined();
        expectCents(row.effective_cost, line.total_cost, `${line.date} ${line.provider}`);
        expectCents(row.billed_cost, line.billed_cost, `${line.date} ${line.provider} billed`);
      }
      expectTotals(r.totals, "effective_cost", perCurrency(rep, "total_cost"), "May daily");
    },
  },
  {
    question: "How much of last month's spend was on resources without a team tag?",
    tools: ["query_costs"],
    async run(ev) {
      const r = await ev.call("query_costs", { ...MAY, group_by: ["tag:team"], metric: "split" });
      const untagged = r.rows.filter((x: any) => x.keys["tag:team"] === null);
      expect(untagged.map((x: any) => x.currency).sort()).toEqual(["EUR", "USD"]);
      // Tagged + untagged = the month (Σ of cloud_bill_by_service's May rows), per currency.
      expectTotals(r.totals, "effective_cost", perCurrency(await report(ev, "cloud_bill_by_service", 5), "total_cost"), "team tag");
      // Tax and credits carry no tag: the untagged USD rows hold the month's other charges, the tagged ones none.
      const usdUntagged = untagged.find((x: any) => x.currency === "USD");
      expect(usdUntagged.other_cost).not.toBe(0);
      expect(r.rows.filter((x: any) => x.keys["tag:team"] !== null).every((x: any) => x.other_cost === 0)).toBe(true);
    },
  },
  {
    question: "What did each cloud provider cost us per month over the last three months?",
    tools: ["query_costs"],
    async run(ev) {
      // Default window: April to June (June so far), by month: each month is its own invoice, so
      // each (month, provider, currency) row is Σ of that month's cloud_bill_by_service rows.
      const r = await ev.call("query_costs", { group_by: ["month", "provider"], metric: "billed_cost" });
      expect(r.window).toEqual({ start_date: "2026-04-01", end_date: "2026-07-01" });
      let n = 0;
      for (const [month, m] of [["2026-04", 4], ["2026-05", 5], ["2026-06", 6]] as const) {
        const rep = await report(ev, "cloud_bill_by_service", m);
        const groups = new Map<string, ReportRow[]>();
        for (const x of rep) groups.set(`${x.provider}|${x.billing_currency}`, [...(groups.get(`${x.provider}|${x.billing_currency}`) ?? []), x]);
        for (const [key, rows] of groups) {
          const [provider, currency] = key.split("|");
          const row = r.rows.find((x: any) => x.keys.month === month && x.keys.provider === provider && x.currency === currency);
          expect(row, `${month} ${key}`).toBeDefined();
          expectCents(row.effective_cost, sumShown(rows.map((x) => x.total_cost)), `${month} ${key}`);
          expectCents(row.billed_cost, sumShown(rows.map((x) => x.billed_cost)), `${month} ${key} billed`);
          n++;
        }
      }
      expect(r.total_rows).toBe(n);
    },
  },
];
