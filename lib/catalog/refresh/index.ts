import { sql } from "drizzle-orm";
import type { Db } from "../../db/index.ts";
import { errorForLog, type Logger } from "../../log.ts";
import type { Provider } from "../../pricing/index.ts";
import { insuredOffers } from "../insured.ts";
import { PUBLIC_CATALOG, type CatalogBatch, type OfferInput } from "../model.ts";
import { applyCatalogStream, WithdrawalRefusedError, type ApplyResult } from "../store.ts";
import { listAwsFeeds } from "./aws.ts";
import { listAzureFeeds } from "./azure.ts";
import { listGcpFeeds } from "./gcp.ts";
import { dailyRefreshDone, markDailyRefresh, releaseRefreshLease, renewRefreshLease, takeRefreshLease, refreshLeaseHolder } from "./lease.ts";
import { FeedSpool } from "./spool.ts";
import { feedCursor, recordFeedChecked, recordFeedFailure } from "../feeds.ts";
import { RefreshSourceError, type FeedCursor, type FeedUnit, type ListFeeds, type PriceSources, type RefreshScope } from "./types.ts";
import { rowsOf } from "../../billing/sql.ts";

export const REFRESH_PROVIDERS: Provider[] = ["aws", "azure", "gcp"];
const LISTERS: Record<Provider, ListFeeds> = { aws: listAwsFeeds, azure: listAzureFeeds, gcp: listGcpFeeds };
/** The refresh lease is renewed every minute while a refresh runs; a dead holder's lapses after this. */
const LEASE_SECONDS = 300;
/** A feed may withdraw at most this share of its rows in one refresh unless forced (see WithdrawalRefusedError). */
const MAX_WITHDRAWN_SHARE = 0.5;

/** This refresher no longer holds the lease (it lapsed and another took it): it applies nothing more. */
export class LeaseLostError extends Error {
  constructor() {
    super("the refresh lease was lost to another refresher; nothing applied");
    this.name = "LeaseLostError";
  }
}

export interface RefreshOptions {
  sources: PriceSources;
  scope: RefreshScope;
  /** Providers to refresh (default: all three). */
  providers?: Provider[];
  /** Who refreshes (replica or CLI run), for the lease. */
  holder: string;
  log: Logger;
  /** Re-read every feed even when its version or ETag says unchanged (rows are still only written where they differ). */
  force?: boolean;
  signal?: AbortSignal;
  /** Where feeds are spooled while read (default: the OS temp dir). */
  spoolDir?: string;
  /**
   * The daily job: the UTC day (YYYY-MM-DD) whose refresh this is. Under the lease, a day already
   * refreshed is skipped (`done_today`); the day is marked done only when the refresh ran, so a
   * busy lease, a crash or a failed start is retried at the next wake.
   */
  daily?: string;
}

export interface FeedOutcome {
  provider: Provider;
  feed: string;
  status: "updated" | "unchanged" | "failed";
  version: string | null;
  /** Rows read from the provider and what applying them changed (updated feeds). */
  applied?: ApplyResult;
  error?: string;
  seconds: number;
}

export interface RefreshReport {
  status: "completed" | "partial" | "failed" | "busy" | "done_today";
  /** When busy: who holds the refresh lease. */
  busy_with?: { holder: string; started_at: string };
  feeds: FeedOutcome[];
  /** Providers whose feeds could not even be listed (index unreachable, no API key, …). */
  providers: { provider: Provider; feeds: number; error?: string; skipped?: string }[];
  seconds: number;
}

/** The cause in words for the feed row and the log: a source error's own message, never a stack or a body. */
function causeOf(e: unknown): string {
  if (e instanceof RefreshSourceError || e instanceof WithdrawalRefusedError || e instanceof LeaseLostError) return e.message;
  if (e instanceof Error && e.name === "AbortError") return "refresh aborted";
  return `could not be applied (${e instanceof Error ? e.name : "error"})`;
}


/** The feed's offers followed by the insured offers derived from each (the service's own product). */
async function* withInsured(offers: AsyncIterable<OfferInput>, provider: Provider): AsyncGenerator<OfferInput> {
  for await (const o of offers) {
    yield o;
    yield* insuredOffers({ provider, orgId: PUBLIC_CATALOG, source: "", skus: [], offers: [o] } as CatalogBatch);
  }
}

/**
 * Reads one feed to a spool, then applies it in one transaction together with its feed row: a
 * feed that fails anywhere (download, parse, database) leaves its previous prices and cursor.
 */
async function refreshFeed(db: Db, unit: FeedUnit, opts: RefreshOptions, signal: AbortSignal, reread = false): Promise<FeedOutcome> {
  const t0 = performance.now();
  const seconds = () => Math.round(performance.now() - t0) / 1000;
  const previous = opts.force || reread ? null : await feedCursor(db, unit.feed);
  const spool = await FeedSpool.open(opts.spoolDir);
  try {
    const read = await unit.read(spool, previous, signal);
    await spool.close();
    if (read === "unchanged") {
      await recordFeedChecked(db, { feed: unit.feed, provider: unit.provider, changed: false });
      return { provider: unit.provider, feed: unit.feed, status: "unchanged", version: previous?.version ?? null, seconds: seconds() };
    }
    const applied = await db.transaction(async (tx) => {
      // Two refreshers never apply the same feed at once, and one that lost the lease (a stalled
      // process whose lease lapsed) applies nothing: it could put an older version back.
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${"catalog_feed:" + unit.feed}))`);
      const held = rowsOf(await tx.execute(sql`SELECT 1 FROM catalog_refresh_lease WHERE name = 'refresh' AND holder = ${opts.holder} AND lease_until > now()`));
      if (!held.length) throw new LeaseLostError();
      const r = await applyCatalogStream(
        tx,
        { provider: unit.provider, orgId: PUBLIC_CATALOG, source: unit.feed, skus: spool.skus(), offers: withInsured(spool.offers(), unit.provider) },
        { maxWithdrawnShare: opts.force ? undefined : MAX_WITHDRAWN_SHARE },
      );
      await recordFeedChecked(tx, { feed: unit.feed, provider: unit.provider, changed: r.changed > 0, cursor: { version: read.version, etag: read.etag } });
      return r;
    });
    return { provider: unit.provider, feed: unit.feed, status: applied.changed ? "updated" : "unchanged", version: read.version, applied, seconds: seconds() };
  } catch (e) {
    const error = causeOf(e);
    // A refresher that lost the lease must not mark over what the new holder refreshed.
    if (!(e instanceof LeaseLostError) && !signal.aborted) await recordFeedFailure(db, { feed: unit.feed, provider: unit.provider, error }).catch(() => {});
    opts.log.warn("catalog feed refresh failed", { feed: unit.feed, provider: unit.provider, error, ...(e instanceof RefreshSourceError || e instanceof WithdrawalRefusedError ? {} : { detail: errorForLog(e) }) });
    return { provider: unit.provider, feed: unit.feed, status: "failed", version: null, error, seconds: seconds() };
  } finally {
    await spool.discard();
  }
}

/**
 * Refreshes the public catalog from the providers' price APIs (or an offline directory), one
 * feed at a time, each in its own transaction. One refresh runs at a time across replicas and
 * CLI runs (a lease in the database); another caller gets `status: "busy"`.
 */
export async function refreshCatalog(db: Db, opts: RefreshOptions): Promise<RefreshReport> {
  const t0 = performance.now();
  const seconds = () => Math.round(performance.now() - t0) / 1000;
  if (!(await takeRefreshLease(db, opts.holder, LEASE_SECONDS))) {
    const holder = await refreshLeaseHolder(db);
    return { status: "busy", ...(holder ? { busy_with: holder } : {}), feeds: [], providers: [], seconds: seconds() };
  }
  if (opts.daily && (await dailyRefreshDone(db, opts.daily))) {
    await releaseRefreshLease(db, opts.holder);
    return { status: "done_today", feeds: [], providers: [], seconds: seconds() };
  }
  // Spools of a refresher killed mid-feed (its lease has lapsed, or it is this one).
  await FeedSpool.sweep(2 * LEASE_SECONDS * 1000, opts.spoolDir);
  const abort = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, abort.signal]) : abort.signal;
  let lost = false;
  const heartbeat = setInterval(() => {
    renewRefreshLease(db, opts.holder, LEASE_SECONDS)
      .then((held) => {
        if (!held) {
          lost = true;
          abort.abort();
        }
      })
      .catch(() => {});
  }, 60_000);
  (heartbeat as { unref?: () => void }).unref?.();
  const report: RefreshReport = { status: "completed", feeds: [], providers: [], seconds: 0 };
  try {
    for (const provider of opts.providers ?? REFRESH_PROVIDERS) {
      if (provider === "gcp" && !opts.sources.gcpApiKey && !opts.sources.offlineDir) {
        report.providers.push({ provider, feeds: 0, skipped: "no API key for the Cloud Billing Catalog API (GCP_PRICING_API_KEY)" });
        continue;
      }
      let units: FeedUnit[];
      try {
        units = await LISTERS[provider]({ sources: opts.sources, scope: opts.scope, signal });
      } catch (e) {
        const error = causeOf(e);
        report.providers.push({ provider, feeds: 0, error });
        opts.log.warn("catalog refresh: price index unavailable", { provider, error });
        continue;
      }
      report.providers.push({ provider, feeds: units.length });
      const changed = new Set<string>();
      for (const unit of units) {
        if (signal.aborted) break;
        const reread = unit.pricesRowsOf?.some((f) => changed.has(f)) ?? false;
        const outcome = await refreshFeed(db, unit, opts, signal, reread);
        if (outcome.status === "updated") changed.add(unit.feed);
        report.feeds.push(outcome);
      }
    }
    const failed = report.feeds.filter((f) => f.status === "failed").length + report.providers.filter((p) => p.error).length + (signal.aborted ? 1 : 0);
    const ok = report.feeds.filter((f) => f.status !== "failed").length;
    report.status = failed === 0 ? "completed" : ok > 0 ? "partial" : "failed";
    if (signal.aborted) opts.log.warn("catalog refresh stopped before its end", { reason: lost ? "lease lost" : "aborted" });
    // Marked before the lease is released: a replica taking the lease next finds the day done.
    // Not when stopped (lease lost, or its process stopping): the feeds not refreshed are the next refresher's.
    if (opts.daily && !signal.aborted && report.status !== "failed") await markDailyRefresh(db, opts.daily, opts.holder).catch(() => {});
  } finally {
    clearInterval(heartbeat);
    if (!lost) await releaseRefreshLease(db, opts.holder).catch(() => {});
  }
  report.seconds = seconds();
  const count = (s: FeedOutcome["status"]) => report.feeds.filter((f) => f.status === s).length;
  opts.log.info("catalog refresh finished", { status: report.status, updated: count("updated"), unchanged: count("unchanged"), failed: count("failed"), seconds: report.seconds });
  return report;
}
