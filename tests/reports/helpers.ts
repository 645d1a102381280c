import { join } from "node:path";
import { Readable } from "node:stream";
import { expect } from "bun:test";
import { importFocus, importFocusFile, type ImportOptions } from "../../lib/billing/focus.ts";
import type { TestContext } from "../helpers/app.ts";

export const FOCUS_DIR = join(import.meta.dir, "../../data/focus");
export const SPEC = `${FOCUS_DIR}/spec_examples`;

/** Columns the FOCUS spec examples leave out (they show only the columns of the scenario). */
export const EXAMPLE_DEFAULTS = { ProviderName: "AWS", BillingAccountId: "ba-1", SubAccountId: "acct-1", SubAccountName: "Account One", BillingCurrency: "USD" };

export async function importCsvText(t: TestContext, orgId: string, csv: string, opts: ImportOptions = {}) {
  return importFocus(t.s.db, orgId, Readable.from([csv]), opts);
}

export async function importExample(t: TestContext, orgId: string, file: string, opts: ImportOptions = {}) {
  return importFocusFile(t.s.db, orgId, `${SPEC}/${file}`, { defaults: EXAMPLE_DEFAULTS, ...opts });
}

/** GET a report as JSON through the real app with the org's key; asserts 200. */
export async function getReport(t: TestContext, org: { id: string; key: string }, type: string, query: string) {
  const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}?${query}`, { key: org.key });
  const body = await r.json();
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body as { report_type: string; year: number; month: number; period_status: string; rows: Record<string, any>[] };
}

/** Minimal FOCUS CSV from rows of a few columns; the rest defaults per row. */
export function focusCsv(rows: Record<string, string | number | null>[]): string {
  const base = {
    ProviderName: "AWS", BillingAccountId: "ba-1", BillingAccountName: "Payer", SubAccountId: "acct-1", SubAccountName: "Account One", BillingCurrency: "USD",
    BillingPeriodStart: "2023-01-01T00:00:00Z", BillingPeriodEnd: "2023-02-01T00:00:00Z", ChargePeriodStart: "2023-01-01T00:00:00Z", ChargePeriodEnd: "2023-01-01T01:00:00Z",
    ChargeCategory: "Usage", ChargeFrequency: "Usage-Based", PricingCategory: "Standard", ServiceName: "Compute Service", ServiceCategory: "Compute",
    BilledCost: 0, EffectiveCost: 0, ListCost: null, ContractedCost: null, CommitmentDiscountId: null, CommitmentDiscountStatus: null,
    CommitmentDiscountCategory: null, CommitmentDiscountType: null, ResourceId: null, x_ContractTerm: null, x_FeeRate: null, x_CommitmentStart: null,
  } as Record<string, string | number | null>;
  const cols = Object.keys(base);
  const cell = (v: string | number | null | undefined) => {
    if (v === null || v === undefined) return "";
    const s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(","), ...rows.map((r) => cols.map((c) => cell(c in r ? r[c] : base[c])).join(","))].join("\n") + "\n";
}
