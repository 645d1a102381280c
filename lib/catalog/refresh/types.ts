import type { Provider } from "../../pricing/index.ts";
import type { OfferInput, SkuInput } from "../model.ts";

/**
 * The contract between the refresh orchestrator (index.ts) and the provider readers (aws.ts,
 * azure.ts, gcp.ts). A reader lists its feeds; each feed streams its SKUs and offers into a sink
 * and is applied in its own transaction, so a failed feed leaves its previous prices.
 */

/** Where prices are read from: the providers' public APIs, or a directory of files already downloaded. */
export interface PriceSources {
  /** AWS Price List bulk API base, e.g. https://pricing.us-east-1.amazonaws.com */
  awsBaseUrl: string;
  /** Azure Retail Prices API base, e.g. https://prices.azure.com */
  azureBaseUrl: string;
  /** Cloud Billing Catalog API base, e.g. https://cloudbilling.googleapis.com */
  gcpBaseUrl: string;
  /** API key for the Cloud Billing Catalog API (GCP is skipped without one, unless offline). */
  gcpApiKey: string | null;
  /**
   * Offline (`catalog refresh --from DIR`): read DIR instead of the network. Layout:
   * `DIR/aws/…` mirrors the bulk API's paths (offers/v1.0/aws/index.json, …, savingsPlan/…);
   * `DIR/azure/*.json` are Retail Prices API pages; `DIR/gcp/*.json` are Cloud Billing Catalog
   * SKU list pages (`{ "skus": [...] }`).
   */
  offlineDir: string | null;
}

/** What to refresh. Region lists: `"all"` or region codes; services: the provider's names. */
export interface RefreshScope {
  awsRegions: string[] | "all";
  /** Offer codes: AmazonEC2, AmazonRDS, AmazonElastiCache, AmazonES, AmazonRedshift. */
  awsServices: string[];
  /** Savings Plans offer codes: AWSComputeSavingsPlan (compute + EC2 instance), AWSDatabaseSavingsPlans. */
  awsSavingsPlans: string[];
  azureRegions: string[] | "all";
  /** Retail Prices `serviceName`s, e.g. "Virtual Machines". */
  azureServices: string[];
  gcpRegions: string[] | "all";
  /** Service display names, e.g. "Compute Engine". */
  gcpServices: string[];
}

import type { FeedCursor } from "../feeds.ts";
/** What a feed's previous successful refresh saw (null on the first refresh). */
export type { FeedCursor };

/** Receives a feed's rows. Provider offers only: the orchestrator derives the insured offers. */
export interface CatalogSink {
  sku(s: SkuInput): void | Promise<void>;
  offer(o: OfferInput): void | Promise<void>;
}

export interface FeedReadResult extends FeedCursor {
  /** The provider's publication date of what was read (YYYY-MM-DD), when it says. */
  publishedAt?: string | null;
}

/** One unit of refresh, applied in one transaction. */
export interface FeedUnit {
  provider: Provider;
  /** Stable, unique across providers (e.g. `aws:AmazonEC2:us-east-1`); the `feed` of the rows it writes. */
  feed: string;
  /**
   * Streams the feed into the sink, SKUs before the offers that price them. Returns "unchanged"
   * without reading further when the provider says nothing changed since `previous` (same
   * version, 304 to If-None-Match). Throws (RefreshSourceError) on any failure: the
   * orchestrator then discards what was read.
   */
  read(sink: CatalogSink, previous: FeedCursor | null, signal: AbortSignal): Promise<FeedReadResult | "unchanged">;
  /**
   * Feeds whose rows this one prices (listed before it): when one of them changed in the same
   * refresh, this feed is read again whatever its version says (a rate for a SKU that did not
   * exist yet was skipped when the file was first applied).
   */
  pricesRowsOf?: string[];
}

export interface RefreshContext {
  sources: PriceSources;
  scope: RefreshScope;
  signal: AbortSignal;
}

/** A provider reader: lists its feeds (fetching its indexes). */
export type ListFeeds = (ctx: RefreshContext) => Promise<FeedUnit[]>;

/** A source could not be read: the cause in words (never a body or a secret), and whether a later try may succeed. */
export class RefreshSourceError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "RefreshSourceError";
  }
}
