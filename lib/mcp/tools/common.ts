/**
 * What every assistant tool shares: its definition shape (scopes, zod input/output schemas,
 * annotations), the per-request context (services + the caller's principal), and small
 * formatting helpers (money to cents at the edge, reporting windows).
 */
import * as z from "zod";
import type { Principal } from "../../auth/principal.ts";
import type { Scope } from "../../auth/scopes.ts";
import { classifyError } from "../../http/classifyError.ts";
import { errorForLog } from "../../log.ts";
import { fromCents, rate6, toCents } from "../../pricing/display.ts";
import type { Services } from "../../services.ts";

export interface ToolContext {
  s: Services;
  principal: Principal;
  /** Always the principal's organization: tools never take an org id. */
  orgId: string;
  now: Date;
}

export interface ToolResult<O> {
  structured: O;
  /** One-line human summary, sent as the first text block (the JSON follows). */
  summary: string;
}

export interface ToolDef<I extends z.ZodRawShape = z.ZodRawShape, O extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  /** Scopes needed besides assistant:read; the tool is not even listed without them. */
  scopes: Scope[];
  input: I;
  output: O;
  run(ctx: ToolContext, args: z.infer<z.ZodObject<I>>): Promise<ToolResult<z.infer<z.ZodObject<O>>>>;
}

export function defineTool<I extends z.ZodRawShape, O extends z.ZodRawShape>(def: ToolDef<I, O>): ToolDef<I, O> {
  return def;
}

/** Money in the billing currency, rounded to cents only here, at the edge. */
export { cents, centsOrNull } from "../../pricing/index.ts";
/** Ratios (coverage, utilization, error rates) to 6 decimals, as rates everywhere at the edge (DESIGN §12). */
export const ratio = (v: number | null | undefined): number | null => (v === null || v === undefined || !Number.isFinite(v) ? null : rate6(v));

export const providerEnum = z.enum(["aws", "azure", "gcp"]);
export const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date YYYY-MM-DD");

export const windowInput = {
  start_date: isoDate.optional().describe("First day of the window (YYYY-MM-DD, UTC, inclusive). Default: the first day of the month two months ago."),
  end_date: isoDate.optional().describe("Day after the window (YYYY-MM-DD, UTC, exclusive). Default: the first day of next month."),
};

export const windowOutput = z.object({ start_date: z.string(), end_date: z.string() });

/** The reporting window ([start, end) days, default: this month and the two before) lives with the cost explorer. */
export { resolveWindow, ymd } from "../../billing/costExplorer.ts";

/** Runs a tool; domain errors become their message, anything else a generic one (logged). */
export async function runTool<I extends z.ZodRawShape, O extends z.ZodRawShape>(def: ToolDef<I, O>, ctx: ToolContext, args: any) {
  try {
    const r = await def.run(ctx, args);
    return {
      structuredContent: r.structured as Record<string, unknown>,
      content: [
        { type: "text" as const, text: r.summary },
        { type: "text" as const, text: JSON.stringify(r.structured) },
      ],
    };
  } catch (e) {
    return { isError: true, content: [{ type: "text" as const, text: failureMessage(ctx.s, "mcp tool failed", { tool: def.name, org_id: ctx.orgId }, e) }] };
  }
}

export const FAILED_ON_OUR_SIDE = "The request failed on our side; the error has been logged. Try again shortly.";

/**
 * What a failed assistant call tells the client (tools, resources): a domain error's own
 * message; anything else is logged (never the driver's text to the client) and answered with
 * FAILED_ON_OUR_SIDE. The one error mapping of the MCP server, on the HTTP app's classifyError.
 */
export function failureMessage(s: Pick<Services, "log">, event: string, fields: Record<string, unknown>, e: unknown): string {
  const { error, internal } = classifyError(e);
  if (!internal) return error.message;
  s.log.error(event, { ...fields, error: errorForLog(e) });
  return FAILED_ON_OUR_SIDE;
}

/**
 * Totals per currency: amounts in different currencies are never added together. Each
 * money field is summed, in integer cents, over the rows (already rounded to cents) of one
 * currency; the result is sorted by currency code. Rows without a currency count as USD (the
 * FOCUS default of BillingCurrency in our data model).
 */
export function totalsByCurrency<K extends string>(rows: readonly ({ currency?: string | null } & Record<K, number | null | undefined>)[], fields: readonly K[]): ({ currency: string } & Record<K, number>)[] {
  const by = new Map<string, Record<string, number>>();
  for (const r of rows) {
    const c = r.currency ?? "USD";
    let acc = by.get(c);
    if (!acc) by.set(c, (acc = Object.fromEntries(fields.map((f) => [f, 0]))));
    for (const f of fields) acc[f]! += toCents(Number(r[f] ?? 0));
  }
  return [...by.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, acc]) => ({ currency, ...(Object.fromEntries(fields.map((f) => [f, fromCents(acc[f]!)])) as Record<K, number>) }));
}

/** "USD 1234.56, EUR 98.1" for summaries: one figure per currency, never a mixed sum. */
export function moneyText(totals: readonly ({ currency: string } & Record<string, unknown>)[], field: string): string {
  return totals.length ? totals.map((t) => `${t.currency} ${t[field]}`).join(", ") : "0";
}
