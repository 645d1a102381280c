/**
 * Evaluation questions on allocation reports and commitment coverage/utilization: each answered
 * through the MCP tools and checked against the REST reports (JSON or CSV) to the cent.
 *
 * May (the previous month) is closed and frozen in the eval org (openEval), so the
 * on_period_close reports have it as a finalized month.
 */
import { expect } from "bun:test";
import { EUR_ACCOUNT, expectCents, sumShown, type EvalContext, type EvalQuestion } from "./harness.ts";

const MAY = { year: 2026, month: 5, text: "2026-05" };
const cents = (v: unknown) => Math.round(Number(v ?? 0) * 100);

/** REST rows of a report month (JSON). */
async function restRows(ev: EvalContext, type: string, query = "") {
  return (await ev.rest(`/allocation-reports/${type}?year=${MAY.year}&month=${MAY.month}${query}`)).rows as Record<string, any>[];
}

/** Sums of a money column per currency of REST rows. */
function perCurrency(rows: Record<string, any>[], col: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const cur of new Set(rows.map((r) => r.billing_currency))) out[cur] = sumShown(rows.filter((r) => r.billing_currency === cur).map((r) => r[col]));
  return out;
}

export const questions: EvalQuestion[] = [
  {
    question: "What did each linked account pay for commitments last month, unused share included?",
    tools: ["get_allocation_report"],
    async run(ev) {
      const doc = await ev.call("get_allocation_report", { report_type: "commitment_cost_by_account", month: MAY.text, limit: 1000 });
      const rest = await restRows(ev, "commitment_cost_by_account");
      expect(doc.total_rows).toBe(rest.length);
      expect(rest.length).toBeGreaterThan(3);
      for (const r of rest) {
        const mine = doc.rows.find((x: any) => x.provider === r.provider && x.account_id === r.account_id && x.billing_currency === r.billing_currency);
        expectCents(mine.commitment_cost, r.commitment_cost, `${r.account_id} commitment_cost`);
        expectCents(mine.commitment_unused_allocated_cost, r.commitment_unused_allocated_cost, `${r.account_id} unused share`);
        // Used + the share of unused commitments = what the account pays.
        expect(cents(mine.commitment_cost)).toBe(cents(mine.commitment_used_cost) + cents(mine.commitment_unused_allocated_cost));
      }
      // The unused share is really in it, and the totals per currency are the REST rows' sums.
      expect(cents(sumShown(doc.rows.map((r: any) => r.commitment_unused_allocated_cost)))).toBeGreaterThan(0);
      const expected = perCurrency(rest, "commitment_cost");
      expect(doc.totals.map((x: any) => x.currency)).toEqual(Object.keys(expected).sort());
      for (const tot of doc.totals) expectCents(tot.commitment_cost, expected[tot.currency]!, `total ${tot.currency}`);
    },
  },
  {
    question: "Which child organization should be charged for the insured commitment premiums in May?",
    tools: ["list_allocation_reports", "get_allocation_report"],
    async run(ev) {
      const catalog = await ev.call("list_allocation_reports");
      const report = catalog.reports.find((r: any) => r.report_type === "premiums_and_rebates_by_child_org");
      expect(report.filters.map((f: any) => f.name)).toContain("child_org_id");
      const doc = await ev.call("get_allocation_report", { report_type: "premiums_and_rebates_by_child_org", month: MAY.text });
      expect(doc.period_status).toBe("finalized");
      const rest = await restRows(ev, "premiums_and_rebates_by_child_org");
      expect(doc.rows.length).toBe(rest.length);
      const children = (await ev.call("get_organization")).child_organizations.map((c: any) => c.id);
      // Someone pays premiums, and it is a child organization of ours.
      const charged = doc.rows.filter((r: any) => cents(r.premiums) > 0);
      expect(charged.length).toBeGreaterThan(0);
      const toChildren = charged.filter((x: any) => x.child_org_id !== null);
      expect(toChildren.length).toBeGreaterThan(0);
      for (const r of toChildren) expect(children).toContain(r.child_org_id);
      for (const r of rest) {
        const mine = doc.rows.find((x: any) => x.provider === r.provider && x.child_org_id === r.child_org_id && x.billing_currency === r.billing_currency);
        expectCents(mine.premiums, r.premiums, `${r.child_org_name} premiums`);
        expectCents(mine.rebates, r.rebates, `${r.child_org_name} rebates`);
        expectCents(mine.net_savings, r.net_savings, `${r.child_org_name} net savings`);
      }
      for (const tot of doc.totals) expectCents(tot.premiums, perCurrency(rest, "premiums")[tot.currency]!, `premiums ${tot.currency}`);
    },
  },
  {
    question: "What is our coverage by account for May?",
    tools: ["get_coverage_and_utilization"],
    async run(ev) {
      const doc = await ev.call("get_coverage_and_utilization", { group_by: "account", start_month: MAY.text, end_month: MAY.text, limit: 1000 });
      expect(doc.months).toEqual([{ month: MAY.text, status: "finalized" }]);
      const commit = await restRows(ev, "commitment_cost_by_account");
      const bill = await restRows(ev, "cloud_bill_by_account");
      const key = (r: any) => `${r.provider}|${r.billing_currency ?? r.currency}|${r.account_id ?? r.key}`;
      const mine = new Map(doc.rows.map((r: any) => [key(r), r]));
      let checked = 0;
      for (const r of commit) {
        const m: any = mine.get(key(r));
        if (!m) {
          for (const k of ["commitment_used_cost", "commitment_unused_allocated_cost", "covered_ondemand_cost"]) expect(cents(r[k])).toBe(0);
          continue;
        }
        for (const k of ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "savings"]) expectCents(m[k], r[k], `${r.account_id} ${k}`);
        checked++;
      }
      expect(checked).toBeGreaterThan(3);
      for (const b of bill.filter((x) => cents(x.ondemand_cost) !== 0)) {
        const m: any = mine.get(key(b));
        expectCents(m.ondemand_cost, b.ondemand_cost, `${b.account_id} on demand`);
        const covered = cents(m.covered_ondemand_cost);
        expect(m.coverage).toBe(Math.round((covered / (covered + cents(m.ondemand_cost))) * 1e6) / 1e6);
      }
    },
  },
  {
    question: "Give me the CSV link for the May AWS cloud bill by service",
    tools: ["get_allocation_report"],
    async run(ev) {
      const doc = await ev.call("get_allocation_report", { report_type: "cloud_bill_by_service", month: MAY.text, provider: "aws" });
      const path = new URL(doc.csv_url);
      expect(path.searchParams.get("format")).toBe("csv");
      expect(path.searchParams.get("provider")).toBe("aws");
      const prefix = `/beta/v1/org/${ev.t.org.id}`;
      expect(path.pathname.startsWith(`${prefix}/allocation-reports/cloud_bill_by_service`)).toBe(true);
      const csv = await ev.restCsv(path.pathname.slice(prefix.length) + path.search);
      expect(csv.length).toBe(doc.total_rows);
      for (const [i, line] of csv.entries()) {
        expect(line.provider).toBe("aws");
        expect(line.service_name).toBe(doc.rows[i].service_name ?? "");
        for (const m of ["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"]) expectCents(doc.rows[i][m], line[m]!, `${line.service_name} ${m}`);
      }
      const [usd] = doc.totals;
      expect(doc.totals.map((x: any) => x.currency)).toEqual(["USD"]);
      expectCents(usd.total_cost, sumShown(csv.map((l) => l.total_cost)), "AWS total");
    },
  },
  {
    question: "Which months are finalized for commitment_cost_by_account?",
    tools: ["list_report_periods"],
    async run(ev) {
      const doc = await ev.call("list_report_periods", { report_type: "commitment_cost_by_account" });
      const rest = await ev.rest("/allocation-reports/commitment_cost_by_account/periods?page_size=100");
      expect(doc.periods).toEqual(rest.map((p: any) => ({ month: `${p.year}-${String(p.month).padStart(2, "0")}`, status: p.status })));
      const finalized = doc.periods.filter((p: any) => p.status === "finalized").map((p: any) => p.month);
      expect(finalized).toContain(MAY.text);
      // The current month is never final.
      expect(doc.periods.find((p: any) => p.month === "2026-06").status).toBe("in_progress");
    },
  },
  {
    question: "How well did we use our commitments per service in May?",
    tools: ["get_coverage_and_utilization"],
    async run(ev) {
      const doc = await ev.call("get_coverage_and_utilization", { group_by: "service", start_month: MAY.text, end_month: MAY.text, limit: 1000 });
      const rest = await restRows(ev, "commitment_cost_by_service");
      let checked = 0;
      for (const r of rest.filter((x) => cents(x.commitment_cost) !== 0)) {
        const m = doc.rows.find((x: any) => x.provider === r.provider && x.currency === r.billing_currency && x.key === r.service_name);
        expectCents(m.commitment_used_cost, r.commitment_used_cost, `${r.service_name} used`);
        expectCents(m.commitment_unused_allocated_cost, r.commitment_unused_allocated_cost, `${r.service_name} unused`);
        const used = cents(r.commitment_used_cost);
        const unused = cents(r.commitment_unused_allocated_cost);
        expect(m.utilization).toBe(Math.round((used / (used + unused)) * 1e6) / 1e6);
        checked++;
      }
      expect(checked).toBeGreaterThan(2);
      // Some service left part of its commitments unused.
      expect(doc.rows.some((r: any) => r.utilization !== null && r.utilization < 1)).toBe(true);
    },
  },
  {
    question: "Is AWS really fully covered in May, or is something running on demand without any commitment?",
    tools: ["get_coverage_and_utilization", "get_allocation_report"],
    async run(ev) {
      const doc = await ev.call("get_coverage_and_utilization", { group_by: "service", provider: "aws", start_month: MAY.text, end_month: MAY.text });
      const bill = await restRows(ev, "cloud_bill_by_service", "&provider=aws");
      // Services on demand that no commitment touches count too: their on-demand cost is the bill's.
      const uncovered = doc.rows.filter((r: any) => cents(r.covered_ondemand_cost) === 0 && cents(r.ondemand_cost) > 0);
      expect(uncovered.length).toBeGreaterThan(0);
      for (const r of uncovered) {
        expect(r.coverage).toBe(0);
        expectCents(r.ondemand_cost, sumShown(bill.filter((b) => b.service_name === r.key).map((b) => b.ondemand_cost)), `${r.key} on demand`);
      }
      const [usd] = doc.totals;
      expect(usd.currency).toBe("USD");
      expectCents(usd.ondemand_cost, sumShown(bill.map((b) => b.ondemand_cost)), "AWS on demand");
      expect(usd.coverage).toBeLessThan(1);
      const covered = cents(usd.covered_ondemand_cost);
      expect(usd.coverage).toBe(Math.round((covered / (covered + cents(usd.ondemand_cost))) * 1e6) / 1e6);
    },
  },
  {
    question: "What does the EUR subscription cost on demand in May, and is any of it covered?",
    tools: ["get_coverage_and_utilization", "get_allocation_report"],
    async run(ev) {
      const doc = await ev.call("get_coverage_and_utilization", { group_by: "account", provider: "azure", start_month: MAY.text, end_month: MAY.text });
      const eurRow = doc.rows.find((r: any) => r.key === EUR_ACCOUNT);
      expect(eurRow.currency).toBe("EUR");
      expect(eurRow.coverage).toBe(0);
      const [bill] = await restRows(ev, "cloud_bill_by_account", `&provider=azure&account_id=${EUR_ACCOUNT}`);
      expect(bill!.billing_currency).toBe("EUR");
      expectCents(eurRow.ondemand_cost, bill!.ondemand_cost, "EUR on demand");
      // EUR and USD stay apart: each total is its own currency's rows.
      expect(doc.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
      expectCents(doc.totals[0].ondemand_cost, sumShown(doc.rows.filter((r: any) => r.currency === "EUR").map((r: any) => r.ondemand_cost)), "EUR total");
      expectCents(doc.totals[1].ondemand_cost, sumShown(doc.rows.filter((r: any) => r.currency === "USD").map((r: any) => r.ondemand_cost)), "USD total");
      const report = await ev.call("get_allocation_report", { report_type: "cloud_bill_by_account", month: MAY.text, provider: "azure" });
      expect(report.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
      expectCents(report.totals[0].total_cost, bill!.total_cost, "EUR bill");
    },
  },
];
