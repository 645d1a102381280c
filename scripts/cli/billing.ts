import { createWriteStream, existsSync } from "node:fs";
import { createGzip } from "node:zlib";
import { stringify } from "csv-stringify/sync";
import { FocusFileError, FocusImportRejected, importFocusFile, type RejectedRow } from "../../lib/billing/focus.ts";
import { writeFocusCsv } from "../../lib/billing/generator.ts";
import { isProvider, PROVIDERS, type Provider } from "../../lib/billing/sql.ts";
import { closeBillingPeriod, freezeClosedPeriods, listBillingPeriods } from "../../lib/reports/periods.ts";
import { csvSafeText, setReportHidden } from "../../lib/reports/service.ts";
import { isDatabaseUnavailable } from "../../lib/db/errors.ts";
import { CliError, type CliCommand } from "./types.ts";
import { uuidOption } from "./args.ts";
import { evaluateBudgetsAfterImport } from "../../lib/budgets/evaluate.ts";
import { notifyAnomaliesAfterImport } from "../../lib/events/anomalies.ts";

const orgOf = (v: Record<string, any>) => uuidOption(v, "org");
function providerOf(v: Record<string, any>): Provider {
  if (!isProvider(v.provider)) throw new CliError(`--provider must be one of ${PROVIDERS.join(", ")}`);
  return v.provider;
}
function monthOf(v: Record<string, any>): string {
  if (typeof v.month !== "string" || !/^\d{4}-(0[1-9]|1[0-2])$/.test(v.month)) throw new CliError("--month must be YYYY-MM");
  return v.month;
}
const int = (v: unknown, name: string, dflt: number) => {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new CliError(`--${name} must be a non-negative integer`);
  return n;
};

/**
 * Why an import stopped part-way, in one line: the file could not be read to its end, or the
 * database went away; the import is one transaction, so nothing of it was kept either way.
 */
function importFailure(e: unknown): string {
  const reason = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").trim();
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "string" && /^Z_/.test(code)) return `the file is not valid gzip (truncated or corrupt: ${reason}); nothing was imported`;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code) && (e as { syscall?: unknown })?.syscall === "read") return `the file could not be read (${reason}); nothing was imported`;
  if (isDatabaseUnavailable(e)) return `the database connection was lost during the import (${reason}); nothing was imported`;
  return `the import failed (${reason}); nothing was imported`;
}

export const billingCommands: CliCommand[] = [
  {
    group: "import",
    name: "focus",
    summary: "Import a FOCUS 1.0–1.2 cost-and-usage CSV (.csv or .csv.gz); replaces earlier imports of the same billing periods",
    usage: "import focus --org ORG_ID [--skip-invalid] [--rejects REJECTS.csv] [--provider aws|azure|gcp] FILE.csv[.gz] [--json]",
    options: { org: { type: "string" }, "skip-invalid": { type: "boolean" }, rejects: { type: "string" }, provider: { type: "string" } },
    async run(s, v, positionals) {
      const org = orgOf(v);
      const file = positionals[0];
      if (!file) throw new CliError("the FOCUS file to import is required");
      if (!existsSync(file)) throw new CliError(`no such file: ${file}`);
      const defaults: Record<string, string> = {};
      if (v.provider !== undefined) defaults.ProviderName = providerOf(v);
      let rejectsOut: ReturnType<typeof createWriteStream> | null = null;
      let rejectsHeader: string[] | null = null;
      const onReject = (r: RejectedRow) => {
        if (!v.rejects) return;
        if (!rejectsOut) {
          rejectsOut = createWriteStream(String(v.rejects));
          rejectsHeader = Object.keys(r.record);
          rejectsOut.write(stringify([["line", "errors", ...rejectsHeader]]));
        }
        rejectsOut.write(stringify([[String(r.line), r.errors.join("; "), ...rejectsHeader!.map((k) => csvSafeText(r.record[k] ?? ""))]]));
      };
      const tty = process.stderr.isTTY && !v.json;
      let result;
      try {
        result = await importFocusFile(s.db, org, file, {
          skipInvalid: Boolean(v["skip-invalid"]),
          defaults,
          onReject,
          now: s.now(),
          progressEvery: 10_000,
          onProgress: tty ? (n) => process.stderr.write(`\r  ${n.toLocaleString("en-US")} rows read…`) : undefined,
        });
        if (tty) process.stderr.write("\n");
      } catch (e) {
        if (tty) process.stderr.write("\n");
        if (e instanceof FocusImportRejected) {
          throw new CliError(`${e.rowsRejected} row(s) violate the FOCUS specification; nothing was imported (--skip-invalid keeps the valid rows, --rejects FILE lists the others). ${e.firstRejects}`);
        }
        if (e instanceof FocusFileError) throw new CliError(e.message);
        throw new CliError(importFailure(e));
      } finally {
        await new Promise<void>((r) => (rejectsOut ? (rejectsOut as any).end(r) : r()));
      }
      // Already imported byte for byte and still current: nothing changed, nothing to tell.
      if (result.unchanged) return { ...result, rejects_file: null };
      // Periods a FOCUS 1.4 BillingPeriodStatus=Closed marked closed are frozen right away.
      await freezeClosedPeriods(s.db, s.now(), { orgId: org });
      // The budgets and the anomaly scan see the new data now (a failure is logged; the import stands).
      await evaluateBudgetsAfterImport(s, org);
      await notifyAnomaliesAfterImport(s, org);
      return { ...result, rejects: result.rejects.slice(0, 50), rejects_file: v.rejects && result.rows_rejected ? v.rejects : null };
    },
    human: (r) =>
      r.unchanged
        ? `Unchanged: ${r.file_name} has the content of import ${r.import_id} (${r.rows_unchanged} rows), whose rows are all still current; nothing was written.`
        : [
        `Imported ${r.rows_imported} of ${r.rows_read} rows from ${r.file_name} (${r.rows_replaced} earlier rows of the same periods replaced; parsed by ${r.parsed_by === "postgresql" ? "PostgreSQL" : "the row-by-row reader"}).`,
        `Periods: ${r.periods.map((p: any) => `${p.provider} ${p.billing_account_id} ${p.month.slice(0, 7)}`).join(", ") || "none"}`,
        `Accounts: ${r.accounts_discovered}, commitments: ${r.commitments_upserted}.`,
        ...(r.rows_rejected ? [`${r.rows_rejected} row(s) rejected${r.rejects_file ? ` (written to ${r.rejects_file})` : ""}:`, ...r.rejects.slice(0, 20).map((x: any) => `  line ${x.line}: ${x.errors.join("; ")}`)] : []),
      ].join("\n"),
  },
  {
    group: "periods",
    name: "close",
    summary: "Mark a billing period's invoice closed and freeze its reports now",
    usage: "periods close --org ORG_ID --provider aws|azure|gcp --month YYYY-MM [--json]",
    options: { org: { type: "string" }, provider: { type: "string" }, month: { type: "string" } },
    async run(s, v) {
      const org = orgOf(v);
      const provider = providerOf(v);
      const month = monthOf(v);
      const period = await closeBillingPeriod(s.db, org, provider, month, s.now());
      const frozen = await freezeClosedPeriods(s.db, s.now(), { orgId: org, provider, month });
      const [after] = (await listBillingPeriods(s.db, org, provider)).filter((p) => p.month === period.month);
      return { ...after, snapshot_rows: frozen[0]?.snapshot_rows ?? 0 };
    },
    human: (r) => `${r.provider} ${r.month.slice(0, 7)} closed at ${r.closed_at}; frozen at ${r.frozen_at} (${r.snapshot_rows} report rows).`,
  },
  {
    group: "periods",
    name: "list",
    summary: "Billing periods of an organization (open/closed, frozen)",
    usage: "periods list --org ORG_ID [--provider aws|azure|gcp] [--json]",
    options: { org: { type: "string" }, provider: { type: "string" } },
    async run(s, v) {
      return listBillingPeriods(s.db, orgOf(v), v.provider === undefined ? undefined : providerOf(v));
    },
    human: (rows) => rows.map((p: any) => `${p.provider.padEnd(6)} ${p.month.slice(0, 7)} ${p.status.padEnd(7)} ${p.frozen_at ? `frozen ${p.frozen_at}` : ""}`).join("\n") || "no billing periods",
  },
  {
    group: "periods",
    name: "freeze",
    summary: "Freeze every closed billing period not frozen yet (what the freeze-periods job does)",
    usage: "periods freeze [--json]",
    options: {},
    async run(s) {
      return freezeClosedPeriods(s.db, s.now());
    },
    human: (rows) => rows.map((p: any) => `${p.org_id} ${p.provider} ${p.month.slice(0, 7)}: ${p.snapshot_rows} rows`).join("\n") || "nothing to freeze",
  },
  {
    group: "reports",
    name: "hide",
    summary: "Hide an allocation report from an organization (or show it again with --show)",
    usage: "reports hide --org ORG_ID --type REPORT_TYPE [--show] [--json]",
    options: { org: { type: "string" }, type: { type: "string" }, show: { type: "boolean" } },
    async run(s, v) {
      const org = orgOf(v);
      if (typeof v.type !== "string") throw new CliError("--type is required");
      await setReportHidden(s.db, org, v.type, !v.show);
      return { org_id: org, report_type: v.type, hidden: !v.show };
    },
    human: (r) => `${r.report_type} is now ${r.hidden ? "hidden" : "visible"} for ${r.org_id}`,
  },
  {
    group: "generate",
    name: "focus",
    summary: "Write realistic FOCUS 1.2 demo/benchmark data (providers, accounts, commitments) as CSV",
    usage: "generate focus --out FILE.csv[.gz] [--months 3] [--accounts 3] [--resources 3] [--grain hourly|daily|monthly] [--providers aws,azure,gcp] [--max-rows N] [--seed 42] [--json]",
    options: {
      out: { type: "string" },
      months: { type: "string" },
      accounts: { type: "string" },
      resources: { type: "string" },
      grain: { type: "string" },
      providers: { type: "string" },
      "max-rows": { type: "string" },
      seed: { type: "string" },
    },
    noDb: true,
    async run(s, v) {
      if (typeof v.out !== "string") throw new CliError("--out is required");
      const grain = v.grain ?? "hourly";
      if (!["hourly", "daily", "monthly"].includes(grain)) throw new CliError("--grain must be hourly, daily or monthly");
      const providers = (v.providers ? String(v.providers).split(",") : [...PROVIDERS]).map((p) => p.trim());
      for (const p of providers) if (!isProvider(p)) throw new CliError(`unknown provider ${p}`);
      const file = createWriteStream(v.out);
      const out = v.out.endsWith(".gz") ? createGzip() : file;
      if (out !== file) out.pipe(file);
      const rows = await writeFocusCsv(
        {
          now: s.now(),
          months: int(v.months, "months", 3) || 1,
          accountsPerProvider: int(v.accounts, "accounts", 3) || 1,
          resourcesPerAccount: int(v.resources, "resources", 3) || 1,
          grain,
          providers: providers as Provider[],
          seed: int(v.seed, "seed", 42),
          maxRows: v["max-rows"] ? int(v["max-rows"], "max-rows", 0) : undefined,
        },
        out,
      );
      await new Promise<void>((r) => {
        file.once("close", () => r());
        out.end();
      });
      return { file: v.out, rows };
    },
    human: (r) => `Wrote ${r.rows} FOCUS rows to ${r.file}`,
  },
];
