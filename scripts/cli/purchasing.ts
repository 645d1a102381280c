import { createPurchasingConnection, listPurchasingConnections, updatePurchasingConnection, type PurchasingConnectionView } from "../../lib/purchasing/connections.ts";
import { approvePurchase, getPurchase, listPurchases, PURCHASE_STATUSES, rejectPurchase, type PurchaseStatus, type PurchaseView } from "../../lib/purchasing/orders.ts";
import { processPurchaseItems } from "../../lib/purchasing/executor.ts";
import { PURCHASING_KINDS, type PurchasingKind } from "../../lib/purchasing/providers/types.ts";
import { secretBoxOf } from "../../lib/secrets/index.ts";
import { oneIdArgument, pairs, secretsFile, uuidOption } from "./args.ts";
import { CliError, type CliCommand } from "./types.ts";

const connectionLine = (c: PurchasingConnectionView) => `${c.id}  ${c.kind.padEnd(16)} ${c.dry_run ? "dry run " : "BUYS    "} inventory ${c.status.padEnd(7)} ${c.name}${c.last_error ? `\n    last error (${c.last_error_cause}): ${c.last_error}` : ""}`;

function purchaseText(p: PurchaseView): string {
  return [
    `purchase ${p.id}: ${p.status}${p.dry_run ? " (dry run)" : ""}, ${p.item_count} item(s), upfront $${p.total_upfront_cost.toFixed(2)}, monthly net savings $${p.monthly_net_savings.toFixed(2)}`,
    ...p.items.map((i) => `  ${i.position}. ${i.status.padEnd(16)} ${i.commitment_type} ${i.contract_term} ${i.payment_option} ×${i.amount}${i.instance_type ? ` ${i.instance_type}` : ""}${i.region ? ` ${i.region}` : ""}${i.provider_purchase_id ? ` → ${i.provider_purchase_id}` : ""}${i.failure_cause ? ` (${i.failure_cause}: ${i.failure_message})` : ""}`),
    ...p.events.map((e) => `  ${e.at} ${e.event}: ${e.message}`),
  ].join("\n");
}

/** Who decides from the command line: the operator, named for the purchase's story. */
const operator = () => `cli:${process.env.USER ?? "operator"}`;

export const purchasingCommands: CliCommand[] = [
  {
    group: "purchasing",
    name: "add",
    summary: "Connect the credentials commitops buys with at a provider (dry run until --live)",
    usage: "purchasing add --org ORG_ID --name NAME --kind aws_purchasing|azure_purchasing|gcp_purchasing --config key=value… [--secrets-file secrets.json] [--live] [--json]",
    options: { org: { type: "string" }, name: { type: "string" }, kind: { type: "string" }, config: { type: "string", multiple: true }, "secrets-file": { type: "string" }, live: { type: "boolean" } },
    async run(s, v) {
      const kind = String(v.kind ?? "");
      if (!(PURCHASING_KINDS as readonly string[]).includes(kind)) throw new CliError(`--kind must be one of ${PURCHASING_KINDS.join(", ")}`);
      if (!v.name) throw new CliError("--name is required");
      return createPurchasingConnection(
        s.db,
        secretBoxOf(s.config),
        uuidOption(v, "org"),
        { name: String(v.name), kind: kind as PurchasingKind, config: pairs(v.config, "--config"), secrets: secretsFile(v["secrets-file"]), dry_run: !v.live },
        { now: s.now(), allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints },
      );
    },
    human: (c: PurchasingConnectionView) => `created purchasing connection ${c.id} (${c.kind} "${c.name}")${c.dry_run ? ", dry run: nothing will be bought until `purchasing live`" : ", LIVE: approved purchases are bought"}`,
  },
  {
    group: "purchasing",
    name: "list",
    summary: "List an organization's purchasing connections",
    usage: "purchasing list --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    run: (s, v) => listPurchasingConnections(s.db, uuidOption(v, "org")),
    human: (rows: PurchasingConnectionView[]) => (rows.length ? rows.map(connectionLine).join("\n") : "No purchasing connections."),
  },
  {
    group: "purchasing",
    name: "live",
    summary: "Turn a purchasing connection's dry run off (--off turns it back on): approved purchases are then really bought",
    usage: "purchasing live CONNECTION_ID --org ORG_ID [--off] [--json]",
    options: { org: { type: "string" }, off: { type: "boolean" } },
    run: (s, v, positionals) =>
      updatePurchasingConnection(s.db, secretBoxOf(s.config), uuidOption(v, "org"), oneIdArgument(positionals, "connection"), { dry_run: !!v.off }, { now: s.now(), allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints }),
    human: connectionLine,
  },
  {
    group: "purchases",
    name: "list",
    summary: "List an organization's commitment purchases, newest first",
    usage: `purchases list --org ORG_ID [--status ${PURCHASE_STATUSES.join("|")}] [--json]`,
    options: { org: { type: "string" }, status: { type: "string" } },
    run(s, v) {
      if (v.status !== undefined && !(PURCHASE_STATUSES as readonly string[]).includes(String(v.status))) throw new CliError(`--status must be one of ${PURCHASE_STATUSES.join(", ")}`);
      return listPurchases(s.db, uuidOption(v, "org"), { status: v.status as PurchaseStatus | undefined });
    },
    human: (rows: Awaited<ReturnType<typeof listPurchases>>) =>
      rows.length ? rows.map((p) => `${p.id}  ${p.status.padEnd(16)} ${p.provider} ${p.item_count} item(s) upfront $${p.total_upfront_cost.toFixed(2)}  ${p.created_at}${p.approval_expires_at && p.status === "pending_approval" ? `  (approve by ${p.approval_expires_at})` : ""}`).join("\n") : "No purchases.",
  },
  {
    group: "purchases",
    name: "show",
    summary: "One purchase: its items and its story",
    usage: "purchases show PURCHASE_ID --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    run: (s, v, positionals) => getPurchase(s.db, uuidOption(v, "org"), oneIdArgument(positionals, "purchase")),
    human: purchaseText,
  },
  {
    group: "purchases",
    name: "approve",
    summary: "Approve a purchase pending approval and buy its items now",
    usage: "purchases approve PURCHASE_ID --org ORG_ID [--note TEXT] [--json]",
    options: { org: { type: "string" }, note: { type: "string" } },
    async run(s, v, positionals) {
      const orgId = uuidOption(v, "org");
      const p = await approvePurchase(s, orgId, oneIdArgument(positionals, "purchase"), { by: operator(), note: v.note ? String(v.note).slice(0, 1000) : null });
      await processPurchaseItems(s, { purchaseId: p.id });
      return getPurchase(s.db, orgId, p.id);
    },
    human: purchaseText,
  },
  {
    group: "purchases",
    name: "reject",
    summary: "Reject a purchase pending approval: nothing is bought",
    usage: "purchases reject PURCHASE_ID --org ORG_ID [--note TEXT] [--json]",
    options: { org: { type: "string" }, note: { type: "string" } },
    run: (s, v, positionals) => rejectPurchase(s, uuidOption(v, "org"), oneIdArgument(positionals, "purchase"), { by: operator(), note: v.note ? String(v.note).slice(0, 1000) : null }),
    human: purchaseText,
  },
];
