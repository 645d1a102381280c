import { isUuid } from "../../lib/orgs/service.ts";
import { getSupportTicket, listSupportTickets, parseTicketKey, type SupportTicketView, type TicketListItem } from "../../lib/support/tickets.ts";
import { CliError, type CliCommand } from "./types.ts";

function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : flat;
}

function listText(rows: TicketListItem[]): string {
  if (rows.length === 0) return "No support tickets.";
  const lines = rows.map((r) =>
    [
      r.ticket_key.padEnd(9),
      r.kind.padEnd(8),
      r.created_at.slice(0, 19).replace("T", " ").padEnd(20),
      r.org_id.padEnd(37),
      (r.delivery === "pending" ? `pending(${r.delivery_attempts})` : r.delivery).padEnd(12),
      oneLine(r.summary, 60),
    ].join(" "),
  );
  return [["KEY".padEnd(9), "KIND".padEnd(8), "CREATED (UTC)".padEnd(20), "ORG".padEnd(37), "WEBHOOK".padEnd(12), "SUMMARY"].join(" "), ...lines].join("\n");
}

const LABELS: [keyof SupportTicketView, string][] = [
  ["summary", "Summary"],
  ["user_verbatim", "User's words"],
  ["what_happened", "What happened"],
  ["steps_to_reproduce", "Steps to reproduce"],
  ["expected_behavior", "Expected behavior"],
  ["app_url", "App URL"],
  ["provider", "Provider"],
  ["problem", "Problem"],
  ["desired_behavior", "Desired behavior"],
  ["business_value", "Business value"],
];

function showText(t: SupportTicketView): string {
  const out = [
    `${t.ticket_key} (${t.kind === "bug" ? "bug report" : "feature request"})`,
    `Organization: ${t.org_id}`,
    `Filed: ${t.created_at} by ${t.filed_by.credential_kind} ${t.filed_by.credential_id}${t.filed_by.user_id ? ` (user ${t.filed_by.user_id})` : ""}`,
  ];
  for (const [k, label] of LABELS) {
    if (!(k in t)) continue;
    const v = t[k];
    out.push("", `${label}:`, v === null || v === undefined ? "  (none)" : String(v).replace(/^/gm, "  "));
  }
  return out.join("\n");
}

export const supportCommands: CliCommand[] = [
  {
    group: "tickets",
    name: "list",
    summary: "List support tickets, newest first (all orgs, or one with --org)",
    usage: "tickets list [--org ORG_ID] [--limit N] [--json]",
    options: { org: { type: "string" }, limit: { type: "string" } },
    async run(s, v) {
      if (v.org !== undefined && !isUuid(String(v.org))) throw new CliError("--org must be an organization id (UUID)");
      const limit = v.limit === undefined ? 100 : Number(v.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new CliError("--limit must be an integer from 1 to 10000");
      return listSupportTickets(s.db, { orgId: v.org, limit });
    },
    human: listText,
  },
  {
    group: "tickets",
    name: "show",
    summary: "Show one support ticket with every field (SUP-n)",
    usage: "tickets show SUP-N [--json]",
    options: {},
    async run(s, _v, positionals) {
      const key = positionals[0];
      if (!key || positionals.length > 1) throw new CliError("give exactly one ticket key, e.g. tickets show SUP-12");
      if (parseTicketKey(key) === null) throw new CliError(`not a ticket key: ${key} (expected SUP-<number>)`);
      const t = await getSupportTicket(s.db, key, null);
      if (!t) throw new CliError(`no ticket ${key.toUpperCase()}`);
      return t;
    },
    human: showText,
  },
];
