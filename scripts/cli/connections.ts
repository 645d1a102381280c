import { createConnection, listConnections, type ConnectionView } from "../../lib/connections/service.ts";
import { testConnection, type ConnectionTestResult } from "../../lib/connections/probe.ts";
import { requestSync, runDueSyncs } from "../../lib/connections/sync.ts";
import { CONNECTION_KINDS, type ConnectionKind } from "../../lib/connections/source.ts";
import { secretBoxOf } from "../../lib/secrets/index.ts";
import { rotateSecrets } from "../../lib/secrets/rotate.ts";
import type { RunView } from "../../lib/connections/service.ts";
import { CliError, type CliCommand } from "./types.ts";
import { oneIdArgument, pairs, secretsFile, uuidOption } from "./args.ts";

const org = (v: Record<string, any>) => uuidOption(v, "org");
const connectionId = (positionals: string[]) => oneIdArgument(positionals, "connection");

function runText(r: RunView): string {
  const what = r.status === "failed" ? `failed (${r.error_cause}): ${r.error}` : `${r.periods_imported} period(s) imported, ${r.periods_unchanged} unchanged, ${r.rows_imported} rows, ${r.bytes_read} bytes`;
  return `run ${r.id} ${r.status}: ${what}${r.duration_ms !== null ? ` in ${(r.duration_ms / 1000).toFixed(1)} s` : ""}`;
}

export const connectionCommands: CliCommand[] = [
  {
    group: "connections",
    name: "add",
    summary: "Connect a provider's FOCUS export (secrets from a JSON file, never on the command line)",
    usage: "connections add --org ORG_ID --name NAME --kind aws_data_exports|azure_cost_exports|gcp_bigquery_focus --config key=value… [--secrets-file secrets.json] [--json]",
    options: { org: { type: "string" }, name: { type: "string" }, kind: { type: "string" }, config: { type: "string", multiple: true }, "secrets-file": { type: "string" } },
    async run(s, v) {
      const kind = String(v.kind ?? "");
      if (!(CONNECTION_KINDS as readonly string[]).includes(kind)) throw new CliError(`--kind must be one of ${CONNECTION_KINDS.join(", ")}`);
      if (!v.name) throw new CliError("--name is required");
      const secrets = secretsFile(v["secrets-file"]);
      return createConnection(s.db, secretBoxOf(s.config), org(v), { name: String(v.name), kind: kind as ConnectionKind, config: pairs(v.config, "--config"), secrets }, { now: s.now(), allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints });
    },
    human: (c: ConnectionView) => `created connection ${c.id} (${c.kind} "${c.name}"); secrets set: ${c.secrets_set.join(", ") || "none"}`,
  },
  {
    group: "connections",
    name: "list",
    summary: "List an organization's billing connections and their freshness",
    usage: "connections list --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    run: (s, v) => listConnections(s.db, org(v), s.now()),
    human: (rows: ConnectionView[]) =>
      rows.length
        ? rows.map((c) => `${c.id}  ${c.kind.padEnd(19)} ${c.status.padEnd(8)} last sync ${c.last_synced_at ?? "never"}  ${c.name}${c.last_error ? `\n    last error (${c.last_error_cause}): ${c.last_error}` : ""}`).join("\n")
        : "No billing connections.",
  },
  {
    group: "connections",
    name: "test",
    summary: "Check a connection's access and format (nothing is imported)",
    usage: "connections test CONNECTION_ID --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    run: (s, v, p) => testConnection(s, org(v), connectionId(p)),
    human: (r: ConnectionTestResult) => (r.ok ? `ok: ${r.message}` : `failed (${r.cause}): ${r.message}`),
  },
  {
    group: "connections",
    name: "sync",
    summary: "Sync one connection now, in this process (imports only the periods that changed)",
    usage: "connections sync CONNECTION_ID --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    async run(s, v, p) {
      const id = connectionId(p);
      const queued = await requestSync(s, org(v), id);
      const [run] = await runDueSyncs(s, { connectionId: id, limit: 1 });
      if (!run) throw new CliError(`another replica is syncing this connection now; run ${queued.id} is queued and runs after it`);
      return run;
    },
    human: runText,
  },
  {
    group: "secrets",
    name: "rotate",
    summary: "Re-encrypt every stored secret under COMMITOPS_SECRET_KEY (old key in COMMITOPS_SECRET_KEY_PREVIOUS)",
    usage: "secrets rotate [--json]",
    options: {},
    run: (s) => rotateSecrets(s.db, secretBoxOf(s.config)),
    human: (r: { resealed: number; current_key_id: string }) => `re-encrypted ${r.resealed} secret(s) under key ${r.current_key_id}`,
  },
];
