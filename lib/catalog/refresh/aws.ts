import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { streamAwsOfferFile } from "./awsOfferStream.ts";
import { streamAwsSavingsPlans } from "./awsSavingsPlans.ts";
import { fetchPriceDocument, safeUrl } from "./fetch.ts";
import { RefreshSourceError, type CatalogSink, type FeedCursor, type FeedReadResult, type FeedUnit, type ListFeeds, type PriceSources, type RefreshScope } from "./types.ts";

/**
 * The AWS Price List bulk API as feeds: the offer index (offers/v1.0/aws/index.json) names each
 * service's region index, whose regions name their current offer file; the Savings Plans offer
 * codes have region indexes of their own (savingsPlan/v1.0/aws/<code>/current/region_index.json)
 * naming one rate file per region. One feed per (service, region) and per (plan, region); a
 * file's URL carries its version, so an unchanged version is not downloaded again.
 */

export const AWS_OFFER_INDEX_PATH = "/offers/v1.0/aws/index.json";
/**
 * The revision of the mapping from AWS files to catalog rows (lib/catalog/importers.ts): bump it
 * when a change of the mapping changes what a file gives, so that every AWS feed is read again
 * at the next refresh instead of waiting for AWS to publish a new version.
 */
export const AWS_MAPPING_REVISION = 1;
/** Offer files are hundreds of MB: their download may take far longer than an index's. */
const OFFER_FILE_TIMEOUT_MS = 30 * 60_000;

/** The bulk API's root: the configured base URL, or `DIR/aws` of an offline refresh. */
export function awsPriceListBase(sources: PriceSources): string {
  return sources.offlineDir ? pathToFileURL(join(sources.offlineDir, "aws")).href : sources.awsBaseUrl;
}

/**
 * The index documents give paths (`/offers/v1.0/…`): they are under the base, whatever its own
 * path. An absolute reference is followed only within the base (same origin; under the directory
 * offline): an index from a mirror or proxy must not send the refresh to another host or a file.
 */
export function resolveAwsUrl(base: string, ref: string): string {
  const root = base.replace(/\/+$/, "");
  if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) {
    const b = new URL(root);
    const r = new URL(ref);
    const inside = b.protocol === "file:" ? r.protocol === "file:" && r.pathname.startsWith(b.pathname + "/") : r.origin === b.origin;
    if (!inside) throw new RefreshSourceError(`the price index points outside ${safeUrl(root)}`, false);
    return ref;
  }
  return root + (ref.startsWith("/") ? ref : `/${ref}`);
}

/** AWS's version id in a version URL (`…/AmazonEC2/20240605214326/us-east-1/index.json` → `20240605214326`); null when it has none. */
export function awsVersionOf(url: string): string | null {
  return new URL(url, "http://x").pathname.split("/").find((p) => /^\d{14}$/.test(p)) ?? null;
}

/** A feed's version: AWS's version of the file read and the mapping that read it (null when the URL names no version). */
export function awsFeedVersion(url: string): string | null {
  const aws = awsVersionOf(url);
  return aws === null ? null : `${aws}+m${AWS_MAPPING_REVISION}`;
}

const mappingRevisionOf = (version: string | null | undefined) => /\+m(\d+)$/.exec(version ?? "")?.[1] ?? null;

async function readIndex(url: string, what: string, signal: AbortSignal): Promise<any> {
  const doc = await fetchPriceDocument(url, { signal });
  let json: unknown;
  try {
    json = await doc.json();
  } catch (e) {
    if (e instanceof RefreshSourceError) throw e;
    throw new RefreshSourceError(`${safeUrl(url)}: download broke off`, true);
  }
  if (!json || typeof json !== "object") throw new RefreshSourceError(`${safeUrl(url)}: not an AWS ${what}`, false);
  return json;
}

/** The index is not there: an HTTP 404, or no such file offline. */
const isNotFound = (e: unknown) => e instanceof RefreshSourceError && /: (HTTP 404|cannot read \(ENOENT\))$/.test(e.message);

const inScope = (regions: RefreshScope["awsRegions"], region: string) => regions === "all" || regions.includes(region);

/**
 * A version file of a feed: skipped when the previous refresh read the same version with the
 * same mapping, else a GET, conditional (If-None-Match) unless the previous read was by another
 * mapping: the same bytes then give other rows. A URL without a version leaves it to the ETag.
 */
function versionFeed(feed: string, url: string, read: (body: ReadableStream<Uint8Array>, sink: CatalogSink, signal: AbortSignal) => Promise<string | null>, indexPublishedAt: string | null): FeedUnit {
  const version = awsFeedVersion(url);
  return {
    provider: "aws",
    feed,
    async read(sink: CatalogSink, previous: FeedCursor | null, signal: AbortSignal): Promise<FeedReadResult | "unchanged"> {
      if (version !== null && previous?.version === version) return "unchanged";
      const sameMapping = version === null ? previous?.version === null : mappingRevisionOf(previous?.version) === String(AWS_MAPPING_REVISION);
      const doc = await fetchPriceDocument(url, { etag: sameMapping ? (previous?.etag ?? null) : null, signal, timeoutMs: OFFER_FILE_TIMEOUT_MS });
      if (doc.status === 304) return "unchanged";
      if (!doc.body) throw new RefreshSourceError(`${safeUrl(url)}: empty answer`, true);
      const publishedAt = await read(doc.body, sink, signal);
      return { version, etag: doc.etag, publishedAt: publishedAt ?? indexPublishedAt };
    },
  };
}

const dateOnly = (v: unknown) => (typeof v === "string" && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null);

/**
 * Where a Savings Plans offer code's region index is: the services it discounts name it
 * (AmazonEC2's `currentSavingsPlanIndexUrl` → AWSComputeSavingsPlan), else its usual path.
 */
function savingsPlanIndexPath(index: any, code: string): { path: string; named: boolean } {
  for (const o of Object.values<any>(index.offers ?? {})) {
    const u = o?.currentSavingsPlanIndexUrl;
    if (typeof u === "string" && u.split("/").includes(code)) return { path: u, named: true };
  }
  return { path: `/savingsPlan/v1.0/aws/${code}/current/region_index.json`, named: false };
}

/**
 * The feeds of an offer code whose region index could not be read: one feed that fails with the
 * cause, so the refresh reports it and goes on with the other codes, whose feeds are unaffected.
 */
function failedFeed(feed: string, error: RefreshSourceError): FeedUnit {
  return {
    provider: "aws",
    feed,
    read: async () => {
      throw error;
    },
  };
}

/** The feeds of one offer code, or one failed feed when its region index cannot be read. */
async function feedsOf(feed: string, list: () => Promise<FeedUnit[]>): Promise<FeedUnit[]> {
  try {
    return await list();
  } catch (e) {
    if (!(e instanceof RefreshSourceError)) throw e;
    return [failedFeed(feed, e)];
  }
}

export const listAwsFeeds: ListFeeds = async ({ sources, scope, signal }) => {
  const base = awsPriceListBase(sources);
  const index = await readIndex(resolveAwsUrl(base, AWS_OFFER_INDEX_PATH), "offer index", signal);
  if (typeof index.offers !== "object" || !index.offers) throw new RefreshSourceError("AWS offer index has no offers", false);
  const units: FeedUnit[] = [];

  for (const offerCode of scope.awsServices) {
    units.push(
      ...(await feedsOf(`aws:${offerCode}:*`, async () => {
        const entry = index.offers[offerCode];
        // The index says what is published: a service it does not list (a partial mirror) has no feeds.
        if (entry === undefined) return [];
        if (typeof entry?.currentRegionIndexUrl !== "string") throw new RefreshSourceError(`AWS offer index lists no region index for ${offerCode}`, false);
        const regionIndex = await readIndex(resolveAwsUrl(base, entry.currentRegionIndexUrl), `region index (${offerCode})`, signal);
        if (typeof regionIndex.regions !== "object" || !regionIndex.regions) throw new RefreshSourceError(`AWS region index of ${offerCode} has no regions`, false);
        const publishedAt = dateOnly(regionIndex.publicationDate);
        const feeds: FeedUnit[] = [];
        for (const [region, r] of Object.entries<any>(regionIndex.regions)) {
          const regionCode = String(r?.regionCode ?? region);
          if (!inScope(scope.awsRegions, regionCode) || typeof r?.currentVersionUrl !== "string") continue;
          const url = resolveAwsUrl(base, r.currentVersionUrl);
          feeds.push(
            versionFeed(`aws:${offerCode}:${regionCode}`, url, async (body, sink, sig) => (await streamAwsOfferFile(body, sink, { offerCode, version: awsVersionOf(url), signal: sig })).publishedAt, publishedAt),
          );
        }
        return feeds;
      })),
    );
  }

  for (const code of scope.awsSavingsPlans) {
    units.push(
      ...(await feedsOf(`aws_sp:${code}:*`, async () => {
        const { path, named } = savingsPlanIndexPath(index, code);
        let regionIndex: any;
        try {
          regionIndex = await readIndex(resolveAwsUrl(base, path), `Savings Plans region index (${code})`, signal);
        } catch (e) {
          // A plan no service names and AWS does not publish (yet, or here): nothing to read.
          if (!named && isNotFound(e)) return [];
          throw e;
        }
        if (!Array.isArray(regionIndex.regions)) throw new RefreshSourceError(`AWS Savings Plans region index of ${code} has no regions`, false);
        const publishedAt = dateOnly(regionIndex.publicationDate);
        const feeds: FeedUnit[] = [];
        for (const r of regionIndex.regions) {
          const regionCode = r?.regionCode;
          if (typeof regionCode !== "string" || !inScope(scope.awsRegions, regionCode) || typeof r.versionUrl !== "string") continue;
          const url = resolveAwsUrl(base, r.versionUrl);
          feeds.push({
            ...versionFeed(
              `aws_sp:${code}:${regionCode}`,
              url,
              async (body, sink, sig) => (await streamAwsSavingsPlans(body, sink, { offerCode: code, regionCode, version: awsVersionOf(url), signal: sig })).publishedAt,
              publishedAt,
            ),
            // A plan's rates name the SKUs of the region's offer files.
            pricesRowsOf: scope.awsServices.map((service) => `aws:${service}:${regionCode}`),
          });
        }
        return feeds;
      })),
    );
  }
  return units;
};
