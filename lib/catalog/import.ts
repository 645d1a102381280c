import type { Db } from "../db/index.ts";
import { PUBLIC_CATALOG } from "./model.ts";
import { recordFeedChecked } from "./feeds.ts";
import { ValidationError } from "../errors.ts";
import { isUuid } from "../orgs/service.ts";
import { awsOfferFileBatch, awsSavingsPlansBatch, azureRetailBatch, gcpCatalogBatch, ImportFormatError, type ImportOptions } from "./importers.ts";
import { applyCatalogBatch, type ApplyResult } from "./store.ts";

export const IMPORT_FORMATS = ["aws-offer", "aws-savings-plans", "azure-retail", "gcp-catalog"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/**
 * Imports provider price documents (already parsed JSON; several pages for the paginated
 * Azure/GCP APIs, several files for AWS) in one transaction per document set.
 */
export async function importCatalogDocuments(db: Db, format: ImportFormat, docs: unknown[], opts: ImportOptions = {}): Promise<ApplyResult> {
  if (opts.orgId !== undefined && opts.orgId !== "public" && !isUuid(opts.orgId)) throw new ValidationError("--org must be an organization id (UUID)");
  let batches;
  try {
    switch (format) {
      case "aws-offer":
        batches = docs.map((d) => awsOfferFileBatch(d, opts));
        break;
      case "aws-savings-plans":
        batches = docs.map((d) => awsSavingsPlansBatch(d, opts));
        break;
      case "azure-retail":
        batches = [azureRetailBatch(docs, opts)];
        break;
      case "gcp-catalog":
        batches = [gcpCatalogBatch(docs, opts)];
        break;
      default:
        throw new ValidationError(`unknown format ${String(format)}; one of ${IMPORT_FORMATS.join(", ")}`);
    }
  } catch (e) {
    if (e instanceof ImportFormatError) throw new ValidationError(e.message);
    throw e;
  }
  return db.transaction(async (tx) => {
    const total: ApplyResult = { skus: 0, offers: 0, leaseMenuItems: 0, withdrawnSkus: 0, withdrawnOffers: 0, withdrawnLeaseMenuItems: 0, changed: 0 };
    for (const b of batches) {
      const r = await applyCatalogBatch(tx, b);
      for (const k of Object.keys(total) as (keyof ApplyResult)[]) total[k] += r[k];
      // Public prices imported by hand are confirmed current as of today, as a refresh's are
      // (the rows' own as_of is the provider's effective date, often years old).
      if (b.orgId === PUBLIC_CATALOG) {
        await recordFeedChecked(tx, { feed: b.source, provider: b.provider, changed: r.changed > 0 });
      }
    }
    return total;
  });
}
