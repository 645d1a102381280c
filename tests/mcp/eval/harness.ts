/**
 * The assistant's evaluation set: realistic questions a FinOps analyst asks, each answered
 * through the SDK's own MCP client (Streamable HTTP against the real app) and checked against
 * the REST API or its CSV to the cent. Every area keeps its questions in
 * `tests/mcp/eval/<area>.questions.ts`; `tests/mcp/eval.test.ts` runs them all on one seeded
 * organization per database.
 *
 * The organization holds the demo data (`npm start`): three months of generated aws/azure/gcp
 * billing with commitments and tags, the FinOps FOCUS sample, two child organizations and a
 * closed (and frozen) previous month; plus a small Azure billing account invoiced in EUR, so every money
 * answer has to keep currencies apart.
 */
import { expect } from "bun:test";
import { Readable } from "node:stream";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { billingDemoSeeder } from "../../../lib/billing/demo.ts";
import { importFocus } from "../../../lib/billing/focus.ts";
import { estimatesDemoSeeder } from "../../../lib/estimates/demo.ts";
import { freezeClosedPeriods } from "../../../lib/reports/periods.ts";
import type { TestContext } from "../../helpers/app.ts";
import { focusCsv } from "../../reports/helpers.ts";
import { connectMcp } from "../fixtures.ts";

/** The eval's clock: mid-month, so the current month is partial and the previous one closed. */
export const EVAL_NOW = new Date("2026-06-17T12:00:00Z");

/** The EUR billing account (Azure) beside the demo's USD data. */
export const EUR_BILLING_ACCOUNT = "eur-ea-001";
export const EUR_ACCOUNT = "eur-sub-0001";

export interface EvalContext {
  t: TestContext;
  client: Client;
  /** tools/call through the MCP client; fails on an error result; returns structuredContent. */
  call(name: string, args?: Record<string, unknown>): Promise<any>;
  /** tools/call returning the raw result (errors included). */
  callRaw(name: string, args?: Record<string, unknown>): Promise<any>;
  /** GET JSON under /beta/v1/org/{org_id} (`path` starts with /); asserts 200. */
  rest(path: string): Promise<any>;
  /** GET a CSV under /beta/v1/org/{org_id}; asserts 200; rows keyed by the header. */
  restCsv(path: string): Promise<Record<string, string>[]>;
}

export interface EvalQuestion {
  /** The question in the analyst's words. */
  question: string;
  /** The tool calls that answer it, in order (documentation; the run makes them). */
  tools: string[];
  run(ev: EvalContext): Promise<void>;
}

/** Two amounts equal to the cent (no tolerance beyond float noise of an already-rounded value). */
export function expectCents(actual: number, expected: number | string, what = "") {
  expect(Math.round(Number(actual) * 100), what).toBe(Math.round(Number(expected) * 100));
}

/** Sum of already-rounded money values in integer cents, back to a number. */
export function sumShown(values: (number | string | null | undefined)[]): number {
  return values.reduce<number>((a, v) => a + Math.round(Number(v ?? 0) * 100), 0) / 100;
}

function parseCsv(text: string): Record<string, string>[] {
  const records: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(cell), (cell = "");
    else if (c === "\n") row.push(cell), records.push(row), (row = []), (cell = "");
    else if (c !== "\r") cell += c;
  }
  if (cell !== "" || row.length) row.push(cell), records.push(row);
  const [header, ...rest] = records;
  return rest.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ""])));
}

/** Seeds the eval organization (demo data + the EUR account) and connects the MCP client. */
export async function openEval(t: TestContext): Promise<EvalContext> {
  const s = t.s;
  await billingDemoSeeder.run(s, t.org.id);
  await estimatesDemoSeeder.run(s, t.org.id);
  const eurRows = [];
  for (const [month, days] of [["2026-05", [3, 4, 5]], ["2026-06", [1, 2, 3]]] as const) {
    const next = month === "2026-05" ? "2026-06" : "2026-07";
    for (const d of days) {
      const day = `${month}-${String(d).padStart(2, "0")}`;
      const base = {
        ProviderName: "Microsoft", BillingAccountId: EUR_BILLING_ACCOUNT, BillingAccountName: "EUR enrollment", SubAccountId: EUR_ACCOUNT, SubAccountName: "EUR subscription",
        BillingCurrency: "EUR", BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${day}T23:59:59Z`,
        ServiceName: "Virtual Machines", ServiceCategory: "Compute",
      };
      eurRows.push({ ...base, BilledCost: "41.115", EffectiveCost: "41.115", ListCost: "41.115", ContractedCost: "41.115", ResourceId: `/subscriptions/${EUR_ACCOUNT}/vm/eur-vm-1` });
      eurRows.push({ ...base, ServiceName: "Storage", ServiceCategory: "Storage", BilledCost: "7.005", EffectiveCost: "7.005", ListCost: "7.005", ContractedCost: "7.005", ResourceId: `/subscriptions/${EUR_ACCOUNT}/disk/eur-disk-1` });
    }
  }
  await importFocus(s.db, t.org.id, Readable.from([focusCsv(eurRows)]), { fileName: "eur.csv", now: EVAL_NOW });
  // What the freeze job does minutes after a close: the closed months become finalized reports.
  await freezeClosedPeriods(s.db, EVAL_NOW, { orgId: t.org.id });

  const client = await connectMcp(t, t.org.key, "commitops-eval");

  const callRaw = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args });
  return {
    t,
    client,
    callRaw,
    async call(name, args = {}) {
      const r: any = await callRaw(name, args);
      if (r.isError) throw new Error(`${name}(${JSON.stringify(args)}): ${r.content?.[0]?.text}`);
      return r.structuredContent;
    },
    async rest(path) {
      const r = await t.orgRequest("GET", path);
      const text = await r.text();
      expect(r.status, text.slice(0, 500)).toBe(200);
      return JSON.parse(text);
    },
    async restCsv(path) {
      const r = await t.orgRequest("GET", path);
      const text = await r.text();
      expect(r.status, text.slice(0, 500)).toBe(200);
      return parseCsv(text);
    },
  };
}
