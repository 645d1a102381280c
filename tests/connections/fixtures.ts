/** FOCUS billing months for connection tests: generated rows (lib/billing/generator.ts) split by billing period. */
import { expect } from "bun:test";
import { stringify } from "csv-stringify/sync";
import type { TestContext } from "../helpers/app.ts";
import { getReport } from "../reports/helpers.ts";
import { FOCUS_GENERATOR_COLUMNS, generateFocusRows, type GeneratorOptions } from "../../lib/billing/generator.ts";

export interface FocusMonth {
  header: string[];
  rows: string[][];
}

/** `YYYY-MM` → that billing period's rows (nulls as empty cells). */
export function focusMonths(opts: GeneratorOptions): Map<string, FocusMonth> {
  const header = [...FOCUS_GENERATOR_COLUMNS] as string[];
  const at = header.indexOf("BillingPeriodStart");
  const months = new Map<string, FocusMonth>();
  for (const r of generateFocusRows(opts)) {
    const month = r[at]!.slice(0, 7);
    let m = months.get(month);
    if (!m) months.set(month, (m = { header, rows: [] }));
    m.rows.push(r.map((v) => v ?? ""));
  }
  return months;
}

export function toCsv(header: string[], rows: string[][]): string {
  return stringify([header, ...rows]);
}

/** A copy of a month with each row's cost changed (a provider re-stating the month). */
export function restated(m: FocusMonth, factor: number): FocusMonth {
  const cols = ["BilledCost", "EffectiveCost"].map((c) => m.header.indexOf(c));
  return { header: m.header, rows: m.rows.map((r) => r.map((v, i) => (cols.includes(i) && v !== "" ? (Number(v) * factor).toFixed(10) : v))) };
}

/** The allocation reports of two orgs for the given months of 2026 are equal, row for row (and not all empty). */
export async function expectSameReports(t: TestContext, synced: { id: string; key: string }, imported: { id: string; key: string }, reports: string[], months: number[]) {
  let compared = 0;
  for (const report of reports) {
    for (const month of months) {
      const q = `year=2026&month=${month}`;
      const a = await getReport(t, synced, report, q);
      expect(a.rows).toEqual((await getReport(t, imported, report, q)).rows);
      compared += a.rows.length;
    }
  }
  expect(compared).toBeGreaterThan(10);
}
