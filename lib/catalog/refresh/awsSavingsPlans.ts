import { JSONParser } from "@streamparser/json";
import { AwsSavingsPlansMapping, type AwsSavingsPlanTerm } from "../importers.ts";
import { priceFileChunks, write } from "./awsOfferStream.ts";
import { RefreshSourceError, type CatalogSink } from "./types.ts";

export interface AwsSavingsPlansSummary {
  offerCode: string | null;
  regionCode: string;
  version: string | null;
  publishedAt: string | null;
  offers: number;
  leases: number;
}

export interface AwsSavingsPlansStreamOptions {
  /** AWSComputeSavingsPlan / AWSDatabaseSavingsPlans, as the index names the file. */
  offerCode?: string;
  /** The region and version the region index announced (used when the file does not say). */
  regionCode?: string;
  version?: string | null;
  signal?: AbortSignal;
}

interface TermState extends AwsSavingsPlanTerm {
  index: number;
  lengthSeen: boolean;
  /** Rates that arrived before the term said its plan and length (not the real files' order). */
  early: unknown[];
}

/**
 * Reads one Savings Plans region rate file (tens of MB) from a byte stream into the sink: plan
 * products first, then each term's rates one by one (a term holds the rates of every usage type
 * of the region, so terms are not built whole). Offers group many rates, so they are given to
 * the sink at the end, each with its leases. Same mapping as `awsSavingsPlansBatch`.
 */
export async function streamAwsSavingsPlans(body: ReadableStream<Uint8Array>, sink: CatalogSink, opts: AwsSavingsPlansStreamOptions = {}): Promise<AwsSavingsPlansSummary> {
  const header: { version?: string; publicationDate?: string; regionCode?: string } = {};
  let mapping: AwsSavingsPlansMapping | null = null;
  let term: TermState | null = null;
  let products = 0;

  const mappingFor = (): AwsSavingsPlansMapping => {
    if (mapping) return mapping;
    const regionCode = header.regionCode ?? opts.regionCode;
    if (!regionCode) throw new RefreshSourceError("Savings Plans file names no regionCode before its products", false);
    if (opts.regionCode && header.regionCode && header.regionCode !== opts.regionCode) throw new RefreshSourceError(`Savings Plans file is for ${header.regionCode}, expected ${opts.regionCode}`, false);
    mapping = new AwsSavingsPlansMapping({ regionCode, version: header.version ?? opts.version ?? null, publicationDate: header.publicationDate ?? null, offerCode: opts.offerCode ?? null });
    return mapping;
  };
  const closeTerm = () => {
    if (term && mapping) for (const r of term.early) mapping.addRate(term, r);
    term = null;
  };

  const parser = new JSONParser({
    paths: ["$.version", "$.publicationDate", "$.regionCode", "$.products.*", "$.terms.savingsPlan.*.sku", "$.terms.savingsPlan.*.effectiveDate", "$.terms.savingsPlan.*.leaseContractLength", "$.terms.savingsPlan.*.rates.*"],
    keepStack: false,
  });
  parser.onValue = ({ value, key, stack }) => {
    if (stack.length === 1) {
      if (typeof value === "string" && (key === "version" || key === "publicationDate" || key === "regionCode")) header[key] = value;
      return;
    }
    if (stack[1]?.key === "products") {
      if (term) throw new RefreshSourceError("Savings Plans file lists products after terms: it cannot be read as a stream", false);
      products++;
      mappingFor().addProduct(value);
      return;
    }
    const m = mapping as AwsSavingsPlansMapping | null;
    if (!m || !products) throw new RefreshSourceError("Savings Plans file lists terms before products: it cannot be read as a stream", false);
    const index = Number(stack[3]?.key);
    if (!term || term.index !== index) {
      closeTerm();
      term = { index, sku: "", lengthSeen: false, early: [] };
    }
    const t: TermState = term;
    if (stack.length === 4) {
      if (key === "sku") t.sku = String(value);
      else if (key === "effectiveDate") t.effectiveDate = value as string;
      else if (key === "leaseContractLength") {
        t.leaseContractLength = value as AwsSavingsPlanTerm["leaseContractLength"];
        t.lengthSeen = true;
      }
      if (t.sku && t.lengthSeen && t.early.length) {
        for (const r of t.early) m.addRate(t, r);
        t.early = [];
      }
      return;
    }
    if (t.sku && t.lengthSeen) m.addRate(t, value);
    else t.early.push(value);
  };

  try {
    let offset = 0;
    for await (const chunk of priceFileChunks(body, "Savings Plans file", opts.signal)) {
      write(parser, chunk, "Savings Plans file", offset);
      offset += chunk.length;
    }
    if (!parser.isEnded) throw new RefreshSourceError("Savings Plans file ends before its JSON does (truncated download?)", true);
    closeTerm();
    const m = mappingFor();
    let offers = 0;
    let leases = 0;
    for (const o of m.offers()) {
      offers++;
      leases += o.leases.length;
      const r = sink.offer(o);
      if (r) await r;
    }
    return { offerCode: m.offerCode, regionCode: m.region, version: header.version ?? opts.version ?? null, publishedAt: header.publicationDate ? m.asOf : null, offers, leases };
  } finally {
    body.cancel().catch(() => {});
  }
}
