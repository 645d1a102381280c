/** FOCUS files for the budget suites: daily charges of a few accounts, services and tags, written as a CLI import reads them. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commands } from "../../scripts/cli/index.ts";
import type { Services } from "../../lib/services.ts";

type Row = Record<string, string | number | null>;

export function focusCsv(rows: Row[]): string {
  const base: Row = {
    ProviderName: "AWS", BillingAccountId: "payer-1", BillingAccountName: "Payer", SubAccountId: "111", SubAccountName: "Prod", BillingCurrency: "USD",
    ChargeCategory: "Usage", ChargeFrequency: "Usage-Based", PricingCategory: "Standard", ServiceName: "EC2", ServiceCategory: "Compute",
    BilledCost: 0, EffectiveCost: 0, ListCost: null, ContractedCost: null, RegionId: "us-east-1", ResourceId: null, Tags: null,
    CommitmentDiscountId: null, CommitmentDiscountStatus: null, CommitmentDiscountCategory: null, CommitmentDiscountType: null,
  };
  const full = rows.map((r) => ({ ...base, ...r }));
  const cols = [...new Set(full.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | null | undefined) => (v === null || v === undefined ? "" : /[",\r\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return [cols.join(","), ...full.map((r) => cols.map((c) => cell(r[c])).join(","))].join("\n") + "\n";
}

export interface DailyCharge {
  /** Billing account (one invoice per billing account and month). */
  payer?: string;
  account: string;
  service: string;
  perDay: number;
  team?: string;
  currency?: "USD" | "EUR";
  provider?: "AWS" | "Microsoft";
}

const DAY = 86_400_000;
const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** One row per charge and day in [from, to) (YYYY-MM-DD), each charged for the whole UTC day and billed in its month. */
export function dailyRows(charges: DailyCharge[], from: string, to: string): Row[] {
  const rows: Row[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t < Date.parse(`${to}T00:00:00Z`); t += DAY) {
    const day = ymd(t);
    const month = day.slice(0, 7);
    const next = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 1)).toISOString().slice(0, 10);
    for (const c of charges) {
      rows.push({
        ProviderName: c.provider ?? "AWS",
        BillingAccountId: c.payer ?? "payer-1",
        BillingCurrency: c.currency ?? "USD",
        BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}T00:00:00Z`,
        ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${ymd(t + DAY)}T00:00:00Z`,
        SubAccountId: c.account, ServiceName: c.service,
        BilledCost: c.perDay, EffectiveCost: c.perDay, ListCost: c.perDay, ContractedCost: c.perDay,
        Tags: c.team ? JSON.stringify({ team: c.team }) : null,
      });
    }
  }
  return rows;
}

const dir = mkdtempSync(join(tmpdir(), "commitops-budgets-"));
let files = 0;

/** Imports rows through the CLI's `import focus` command (what an operator runs), in this process. */
export async function importThroughCli(s: Services, orgId: string, rows: Row[]): Promise<any> {
  const file = join(dir, `focus-${++files}.csv`);
  writeFileSync(file, focusCsv(rows));
  const cmd = commands.find((c) => c.group === "import" && c.name === "focus")!;
  return cmd.run(s, { org: orgId }, [file]);
}
