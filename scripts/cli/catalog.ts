import { readFileSync } from "node:fs";
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
];
