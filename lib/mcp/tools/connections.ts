/** Billing data freshness: how current each billing connection's data is (read-only, no settings or secrets). */
import * as z from "zod";
import { connectionFreshness } from "../../connections/freshness.ts";
import { defineTool } from "./common.ts";

export const billingFreshnessTool = defineTool({
  name: "get_billing_data_freshness",
  title: "Billing data freshness",
  description:
    "How current the organization's billing data is: each billing connection to a provider export (AWS Data Exports, Azure cost exports, GCP BigQuery FOCUS) with its status, last successful sync, newest imported billing month, closed months, and the last failure's cause (credentials, not_found, permission, no_export, not_focus, format, unreachable; an admin sees the full message in the API). Use it before answering about recent spend, or when numbers look stale.",
  scopes: [],
  input: {},
  output: {
    count: z.number().int(),
    connections: z.array(
      z.looseObject({
        id: z.string(),
        name: z.string(),
        provider: z.string(),
        kind: z.string(),
        status: z.string(),
        enabled: z.boolean(),
        last_synced_at: z.string().nullable(),
        next_sync_at: z.string().nullable(),
        newest_month: z.string().nullable(),
        newest_month_imported_at: z.string().nullable(),
        closed_months: z.array(z.string()),
        last_error_cause: z.string().nullable(),
      }),
    ),
  },
  async run(ctx) {
    const connections = await connectionFreshness(ctx.s.db, ctx.orgId);
    const summary = connections.length
      ? connections
          .map((c) => `${c.name} (${c.kind}): ${c.status}, last synced ${c.last_synced_at ?? "never"}, newest month ${c.newest_month ?? "none"}${c.last_error_cause ? `; last sync failed (${c.last_error_cause})` : ""}`)
          .join("\n")
      : "No billing connections: billing data arrives by file import only.";
    return { structured: { count: connections.length, connections: connections.map((c) => ({ ...c })) }, summary };
  },
});

export const connectionTools = [billingFreshnessTool];
