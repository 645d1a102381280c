import { readFileSync, statSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { refreshCatalog, REFRESH_PROVIDERS, type RefreshReport } from "../../lib/catalog/refresh/index.ts";
import { priceSourcesOf, refreshScopeOf } from "../../lib/catalog/refresh/scope.ts";
import type { Provider } from "../../lib/pricing/index.ts";
import { ensurePublicCatalog } from "../../lib/catalog/seed.ts";
import { importCatalogDocuments, IMPORT_FORMATS, type ImportFormat } from "../../lib/catalog/import.ts";
import { CliError, type CliCommand } from "./types.ts";

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new CliError(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${path} is not valid JSON`);
  }
}

export const catalogCommands: CliCommand[] = [
  {
    group: "catalog",
    name: "seed",
    summary: "Load the bundled public price snapshot into the catalog (idempotent)",
    usage: "catalog seed [--json]",
    options: {},
    async run(s) {
      return ensurePublicCatalog(s.db);
    },
    human: (r) => (r.applied ? `Public catalog ${r.version} loaded` : `Public catalog ${r.version} already loaded`),
  },
  {
    group: "catalog",
    name: "import",
    summary: "Import provider price files (AWS offer / Savings Plans files, Azure Retail Prices pages, GCP Billing Catalog SKUs)",
    usage: `catalog import --format ${IMPORT_FORMATS.join("|")} --file PATH [--file PATH…] [--org ORG_ID] [--feed NAME] [--json]`,
    options: { format: { type: "string" }, file: { type: "string", multiple: true }, org: { type: "string" }, feed: { type: "string" } },
    async run(s, v) {
      const format = v.format as ImportFormat;
      if (!IMPORT_FORMATS.includes(format)) throw new CliError(`--format must be one of ${IMPORT_FORMATS.join(", ")}`);
      const files: string[] = v.file ?? [];
      if (!files.length) throw new CliError("--file is required (repeat it for several pages)");
      const docs = files.map(readJson);
      const result = await importCatalogDocuments(s.db, format, docs, { orgId: v.org, feed: v.feed });
      return { format, files: files.length, catalog: v.org ?? "public", ...result };
    },
    human: (r) =>
      `Imported ${r.files} file(s) as ${r.format} into the ${r.catalog} catalog: ${r.skus} SKUs, ${r.offers} offers, ${r.leaseMenuItems} prices; withdrawn: ${r.withdrawnSkus} SKUs, ${r.withdrawnOffers} offers, ${r.withdrawnLeaseMenuItems} prices`,
  },
  {
    group: "catalog",
    name: "refresh",
    summary: "Refresh the public catalog from the providers' price APIs (or --from a directory of downloaded price files)",
    usage: "catalog refresh [--provider aws|azure|gcp …] [--from DIR] [--force] [--json]",
    options: { provider: { type: "string", multiple: true }, from: { type: "string" }, force: { type: "boolean" } },
    async run(s, v) {
      const providers = (v.provider ?? []) as string[];
      for (const p of providers) if (!REFRESH_PROVIDERS.includes(p as Provider)) throw new CliError(`--provider must be one of ${REFRESH_PROVIDERS.join(", ")}`);
      let offlineDir: string | null = null;
      if (v.from !== undefined) {
        offlineDir = resolve(String(v.from));
        let isDir = false;
        try {
          isDir = statSync(offlineDir).isDirectory();
        } catch {}
        if (!isDir) throw new CliError(`--from ${v.from}: not a directory`);
      }
      return refreshCatalog(s.db, {
        sources: priceSourcesOf(s.config, offlineDir),
        scope: refreshScopeOf(s.config),
        providers: providers.length ? (providers as Provider[]) : undefined,
        holder: `cli:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
        log: s.log,
        force: v.force === true,
      });
    },
    human: (r: RefreshReport) => {
      if (r.status === "busy") return `Another catalog refresh is running${r.busy_with ? ` (${r.busy_with.holder}, since ${r.busy_with.started_at})` : ""}; nothing done`;
      const lines = [`Catalog refresh ${r.status} in ${r.seconds} s`];
      for (const p of r.providers) if (p.error || p.skipped) lines.push(`  ${p.provider}: ${p.error ? `failed: ${p.error}` : `skipped: ${p.skipped}`}`);
      for (const f of r.feeds) {
        const a = f.applied;
        const what = f.status === "failed" ? `failed: ${f.error}` : a ? `${f.status}: ${a.skus} SKUs, ${a.offers} offers, ${a.leaseMenuItems} prices read; ${a.changed} rows changed; withdrawn ${a.withdrawnSkus} SKUs, ${a.withdrawnOffers} offers, ${a.withdrawnLeaseMenuItems} prices` : f.status;
        lines.push(`  ${f.feed}: ${what}`);
      }
      return lines.join("\n");
    },
    exitCode: (r: RefreshReport) => (r.status === "completed" ? 0 : r.status === "busy" ? 4 : 1),
  },
];
