/**
 * The purchase state machine (DESIGN §14), item by item:
 *
 *   pending_approval → approved → submitting → confirmed | failed      (dry-run items → dry_run)
 *
 * A purchase spans our database and a provider that is not transactional, so:
 * 1. Claim (one short transaction): an `approved` item becomes `submitting` with its
 *    submission time and a lease; its token was committed with the order. Nothing reaches the
 *    provider before this commits: never a purchase without a recorded intent.
 * 2. Call the provider outside any transaction, with the item's token.
 * 3. Record the outcome (one transaction): confirmed with the provider's id and actual price,
 *    and the commitment in the inventory; or failed with its cause.
 * A worker that dies anywhere leaves the item `submitting`; once its lease lapses any replica
 * takes it and first asks the provider whether the token already bought something
 * (`findExisting`), buying only when it did not. Where the API takes the token (savings plans,
 * RDS, Azure, GCP) a repeated purchase is the same purchase anyway; for EC2 reserved instances,
 * which take none, that lookup is what keeps it to one. A confirmed provider id is unique per
 * connection, so no two items can adopt one purchase.
 */
import { hostname } from "node:os";
import { and, asc, eq, inArray, isNotNull, isNull, lt, lte, ne, or } from "drizzle-orm";
import { commitments, purchaseItems, purchasingConnections } from "../db/schema/index.ts";
import type { Services } from "../services.ts";
import { boughtCommitment, commitmentName } from "./boughtCommitment.ts";
import { errorForLog } from "../log.ts";
import { pgErrorCode } from "../db/errors.ts";
import { secretBoxOf } from "../secrets/index.ts";
import { purchasingSettingsOf } from "./connections.ts";
import { recordEvent } from "./events.ts";
import { lockOrderForItems, settlePurchase } from "./orders.ts";
import { outsideRequestScope } from "../db/requestScope.ts";
import { providerPurchaserFor } from "./providers/index.ts";
import { PurchaseFailure, refuseAbovePlan, type OfferQuote, type ProviderPurchaser, type PurchaseItemSpec, type PurchaseOutcome } from "./providers/types.ts";

type ItemRow = typeof purchaseItems.$inferSelect;
type ConnectionRow = typeof purchasingConnections.$inferSelect;

/** A retryable failure is tried again this many times (with backoff) before the item fails. */
export const MAX_ITEM_ATTEMPTS = 8;
const RETRY_BASE_MS = 60_000;
const RETRY_MAX_MS = 3_600_000;

/**
 * Points a test (multi-process crash tests) may stop a worker at: set on `s.extras.purchaseHooks`
 * by the process entry (jobs/auto-purchase.ts), never by lib/.
 */
export interface PurchaseHooks {
  /** After the intent is committed, before the provider is called. */
  beforeProviderCall?(item: ItemRow): void | Promise<void>;
  /** After the provider answered, before the outcome is committed. */
  afterProviderCall?(item: ItemRow): void | Promise<void>;
}

export interface ItemReport {
  item_id: string;
  purchase_id: string;
  status: string;
  provider_purchase_id?: string | null;
  failure_cause?: string | null;
}

const WORKER = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;

const describeSpec = (i: PurchaseItemSpec) => commitmentName(i);

export function itemSpec(i: ItemRow): PurchaseItemSpec {
  return {
    token: i.token,
    commitmentType: i.commitmentType,
    contractTerm: i.contractTerm,
    paymentOption: i.paymentOption,
    region: i.region,
    instanceType: i.instanceType,
    instanceFamily: i.instanceFamily,
    amount: Number(i.amount),
    maxUpfront: Number(i.plannedUpfront),
    plannedHourly: Number(i.plannedHourly),
    submittedAt: i.submittedAt ?? new Date(),
  };
}

type Result =
  | { kind: "confirmed"; outcome: PurchaseOutcome; quote: OfferQuote | null; recovered: boolean }
  | { kind: "dry_run"; summary: string; quote: OfferQuote }
  | { kind: "failed"; failure: PurchaseFailure }
  | { kind: "retry"; message: string; cause: string };

/** Claims the next workable item: approved, or submitting with a lapsed lease (its worker died or gave it back). */
async function claimItem(s: Services, opts: { purchaseId?: string }): Promise<{ item: ItemRow; recovering: boolean } | null> {
  const now = s.now();
  return s.db.transaction(async (tx) => {
    const [item] = await tx
      .select()
      .from(purchaseItems)
      .where(
        and(
          inArray(purchaseItems.status, ["approved", "submitting"]),
          lte(purchaseItems.nextAttemptAt, now),
          or(isNull(purchaseItems.claimedUntil), lt(purchaseItems.claimedUntil, now)),
          opts.purchaseId ? eq(purchaseItems.purchaseId, opts.purchaseId) : undefined,
        ),
      )
      .orderBy(asc(purchaseItems.nextAttemptAt), asc(purchaseItems.createdAt), asc(purchaseItems.position))
      .limit(1)
      .for("update", { skipLocked: true });
    if (!item) return null;
    const recovering = item.status === "submitting";
    const lease = new Date(now.getTime() + s.config.purchaseLeaseSeconds * 1000);
    const [claimed] = await tx
      .update(purchaseItems)
      .set({ status: "submitting", submittedAt: item.submittedAt ?? now, attempts: item.attempts + 1, claimedBy: WORKER, claimedUntil: lease, updatedAt: now })
      .where(eq(purchaseItems.id, item.id))
      .returning();
    if (!recovering) {
      await recordEvent(tx, {
        orgId: item.orgId,
        purchaseId: item.purchaseId,
        itemId: item.id,
        event: "submitting",
        message: `Item ${item.position}: intent recorded with token ${item.token}${item.dryRun ? " (dry run)" : ""}; calling the provider.`,
        at: now,
      });
    }
    return { item: claimed!, recovering };
  });
}

async function callProvider(p: ProviderPurchaser, item: ItemRow, recovering: boolean, claimedIds: () => Promise<ReadonlySet<string>>): Promise<Result> {
  const spec = itemSpec(item);
  try {
    if (item.dryRun) {
      const quote = await p.quote(spec);
      refuseAbovePlan(spec, quote.upfront, describeSpec(spec));
      const { summary } = await p.dryRun(spec, quote);
      return { kind: "dry_run", summary, quote };
    }
    if (recovering) {
      const existing = await p.findExisting(spec, await claimedIds());
      if (existing) return { kind: "confirmed", outcome: existing, quote: null, recovered: true };
    }
    const quote = await p.quote(spec);
    refuseAbovePlan(spec, quote.upfront, describeSpec(spec));
    const outcome = await p.buy(spec, quote);
    return { kind: "confirmed", outcome, quote, recovered: false };
  } catch (e) {
    if (e instanceof PurchaseFailure) return e.retryable ? { kind: "retry", message: e.message, cause: e.cause } : { kind: "failed", failure: e };
    return { kind: "retry", message: e instanceof Error ? e.message : String(e), cause: "internal" };
  }
}

const money = (n: number | null | undefined) => (n === null || n === undefined || !Number.isFinite(n) ? null : String(n));

/** A deadlock (the lock order below prevents it; a backstop): the transaction was rolled back whole and may simply run again. */
const TRANSIENT = new Set(["40P01"]);
const RECORD_TRIES = 5;

/**
 * Records a provider's answer. The bought commitment must be recorded within seconds, not after
 * a lease: recording takes its locks in one order (the order row, then the item, then the event
 * and the order's status), so workers recording items of one order at once never deadlock, and a
 * transaction PostgreSQL still rolls back as a deadlock runs again.
 */
async function record(s: Services, item: ItemRow, result: Result): Promise<ItemReport> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await recordOnce(s, item, result);
    } catch (e) {
      const code = pgErrorCode(e);
      if (!code || !TRANSIENT.has(code) || attempt >= RECORD_TRIES) throw e;
      s.log.warn("purchase item record retried", { item_id: item.id, purchase_id: item.purchaseId, sqlstate: code, attempt });
    }
  }
}

async function recordOnce(s: Services, item: ItemRow, result: Result): Promise<ItemReport> {
  const now = s.now();
  return s.db.transaction(async (tx) => {
    // The order row first: every writer of an item's outcome takes it before the item (and the
    // event, whose foreign key share-locks it), then settles the order under the same lock.
    // NO KEY UPDATE leaves the key-share locks of event inserts elsewhere (a claim's) unblocked.
    const order = await lockOrderForItems(tx, item.purchaseId);
    const [current] = await tx.select().from(purchaseItems).where(eq(purchaseItems.id, item.id)).for("update");
    // Another worker took the item over after our lease lapsed and has already recorded it.
    if (!current || current.status !== "submitting") return { item_id: item.id, purchase_id: item.purchaseId, status: current?.status ?? "gone" };
    const base = { item_id: item.id, purchase_id: item.purchaseId };
    const event = (name: string, message: string, notify = false, detail: Record<string, unknown> | null = null) =>
      recordEvent(tx, { orgId: item.orgId, purchaseId: item.purchaseId, itemId: item.id, event: name, message, at: now, notify, detail });
    switch (result.kind) {
      case "confirmed": {
        const o = result.outcome;
        const q = result.quote;
        const [c] = await tx
          .insert(commitments)
          .values(boughtCommitment(item, { providerCommitmentId: o.providerPurchaseId, startsAt: o.startsAt ?? now, endsAt: o.endsAt, upfront: o.upfront, hourly: o.hourly, providerState: "pending", at: now }))
          .onConflictDoUpdate({ target: [commitments.orgId, commitments.provider, commitments.providerCommitmentId], set: { purchaseId: item.purchaseId, source: "purchase" } })
          .returning({ id: commitments.id });
        await tx
          .update(purchaseItems)
          .set({
            status: "confirmed",
            offeringId: current.offeringId ?? q?.offeringId ?? null,
            quotedUpfront: money(q?.upfront) ?? current.quotedUpfront,
            quotedHourly: money(q?.hourly) ?? current.quotedHourly,
            providerPurchaseId: o.providerPurchaseId,
            providerState: o.providerState,
            actualUpfront: String(o.upfront),
            actualHourly: String(o.hourly),
            currency: o.currency,
            startsAt: o.startsAt,
            endsAt: o.endsAt,
            commitmentId: c!.id,
            failureCause: null,
            failureMessage: null,
            claimedBy: null,
            claimedUntil: null,
            finishedAt: now,
            updatedAt: now,
          })
          .where(eq(purchaseItems.id, item.id));
        await event(
          "item_confirmed",
          `Item ${item.position}: ${result.recovered ? "found at the provider under its token after an interrupted attempt" : "bought"}: ${o.providerPurchaseId} (${o.providerState}), upfront ${o.upfront.toFixed(2)} ${o.currency}, ${o.hourly} ${o.currency}/h.`,
          false,
          { provider_purchase_id: o.providerPurchaseId, recovered: result.recovered },
        );
        await settlePurchase(tx, item.purchaseId, now, order);
        return { ...base, status: "confirmed", provider_purchase_id: o.providerPurchaseId };
      }
      case "dry_run": {
        await tx
          .update(purchaseItems)
          .set({ status: "dry_run", offeringId: result.quote.offeringId, quotedUpfront: String(result.quote.upfront), quotedHourly: String(result.quote.hourly), currency: result.quote.currency, dryRunSummary: result.summary.slice(0, 2000), claimedBy: null, claimedUntil: null, finishedAt: now, updatedAt: now })
          .where(eq(purchaseItems.id, item.id));
        await event("item_dry_run", `Item ${item.position}: dry run, nothing bought. ${result.summary}`);
        await settlePurchase(tx, item.purchaseId, now, order);
        return { ...base, status: "dry_run" };
      }
      case "failed": {
        const f = result.failure;
        await tx
          .update(purchaseItems)
          .set({ status: "failed", failureCause: f.cause, failureMessage: f.message.slice(0, 2000), claimedBy: null, claimedUntil: null, finishedAt: now, updatedAt: now })
          .where(eq(purchaseItems.id, item.id));
        await event("item_failed", `Item ${item.position}: not bought (${f.cause}): ${f.message}`, false, { cause: f.cause });
        await settlePurchase(tx, item.purchaseId, now, order);
        return { ...base, status: "failed", failure_cause: f.cause };
      }
      case "retry": {
        if (current.attempts >= MAX_ITEM_ATTEMPTS) {
          // Given up: a purchase the provider made under the token after all is found by the inventory listing, not bought again.
          await tx
            .update(purchaseItems)
            .set({ status: "failed", failureCause: result.cause === "internal" ? "internal" : "unreachable", failureMessage: `Gave up after ${current.attempts} attempts: ${result.message}`.slice(0, 2000), claimedBy: null, claimedUntil: null, finishedAt: now, updatedAt: now })
            .where(eq(purchaseItems.id, item.id));
          await event("item_failed", `Item ${item.position}: gave up after ${current.attempts} attempts (${result.cause}): ${result.message}`, false, { cause: result.cause });
          await settlePurchase(tx, item.purchaseId, now, order);
          return { ...base, status: "failed", failure_cause: result.cause };
        }
        const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (current.attempts - 1));
        // Stays `submitting`: the call may have reached the provider, so the next attempt looks before it buys.
        await tx
          .update(purchaseItems)
          .set({ failureCause: result.cause, failureMessage: result.message.slice(0, 2000), claimedBy: null, claimedUntil: null, nextAttemptAt: new Date(now.getTime() + delay), updatedAt: now })
          .where(eq(purchaseItems.id, item.id));
        await event("item_retry", `Item ${item.position}: attempt ${current.attempts} did not finish (${result.cause}): ${result.message}; next attempt in ${Math.round(delay / 60_000)} min, looking for the purchase first.`, false, { cause: result.cause });
        return { ...base, status: "submitting", failure_cause: result.cause };
      }
    }
  });
}

/**
 * Gives back an item this worker claimed and has NOT called the provider for (a stopping
 * process), so another replica buys it at once instead of after PURCHASE_LEASE_SECONDS. Only
 * ever called before `callProvider` starts: from then on the request may have reached the
 * provider (a buy whose answer is lost still buys), and an item released then could be claimed
 * by another replica while the provider is still processing ours, whose recovery lookup
 * (`findExisting`) might not see that purchase yet and buy it a second time. Such an item stays
 * `submitting` under its lease and is recovered (looked for at the provider first) once it lapses.
 *
 * A fresh item goes back to `approved` (this claim never happened: its attempt is not counted);
 * one this worker took over for recovery stays `submitting` with its earlier submission time,
 * so whoever takes it next still looks at the provider before buying.
 */
async function giveBackUncalled(s: Services, item: ItemRow, recovering: boolean): Promise<void> {
  await s.db
    .update(purchaseItems)
    .set({
      ...(recovering ? {} : { status: "approved" as const, submittedAt: null }),
      attempts: Math.max(0, item.attempts - 1),
      claimedBy: null,
      claimedUntil: null,
      updatedAt: s.now(),
    })
    .where(and(eq(purchaseItems.id, item.id), eq(purchaseItems.claimedBy, WORKER), eq(purchaseItems.status, "submitting")));
}

/** Provider ids already adopted by items of this connection: a recovery lookup must not take them. */
async function claimedProviderIds(s: Services, connectionId: string, exceptItem: string): Promise<Set<string>> {
  const rows = await s.db
    .select({ id: purchaseItems.providerPurchaseId })
    .from(purchaseItems)
    .where(and(eq(purchaseItems.connectionId, connectionId), isNotNull(purchaseItems.providerPurchaseId), ne(purchaseItems.id, exceptItem)));
  return new Set(rows.map((r) => r.id!));
}

/**
 * Works off every item this process can claim (optionally of one purchase). Safe on any number
 * of replicas at once; returns what happened to each item it touched.
 */
export async function processPurchaseItems(s: Services, opts: { purchaseId?: string; hooks?: PurchaseHooks } = {}): Promise<ItemReport[]> {
  const hooks = opts.hooks ?? (s.extras.purchaseHooks as PurchaseHooks | undefined) ?? {};
  const reports: ItemReport[] = [];
  const purchasers = new Map<string, ProviderPurchaser>();
  try {
    // A stopping process claims no more items (lib/shutdown).
    while (!s.shutdown.stopRequested()) {
      const claim = await claimItem(s, { purchaseId: opts.purchaseId });
      if (!claim) break;
      const { item, recovering } = claim;
      // Until the provider is called, a shutdown may give the item back (giveBackUncalled says why only until then).
      const held = s.shutdown.holdUntilReleased(`purchase item ${item.id}`, () => giveBackUncalled(s, item, recovering));
      let result: Result;
      try {
        const [connection] = item.connectionId ? await s.db.select().from(purchasingConnections).where(eq(purchasingConnections.id, item.connectionId)) : [];
        if (!connection || (!connection.enabled && !recovering)) {
          result = { kind: "failed", failure: new PurchaseFailure("refused", connection ? "The purchasing connection is disabled: enable it, and the next plan buys anew." : "The purchasing connection of this item was deleted before it was bought.") };
        } else {
          try {
            const purchaser = purchasers.get(connection.id) ?? (await purchaserOfConnection(s, connection));
            purchasers.set(connection.id, purchaser);
            await hooks.beforeProviderCall?.(item);
            if (s.shutdown.stopRequested()) {
              // The last point where nothing has reached the provider: give the item back and stop.
              held();
              await giveBackUncalled(s, item, recovering);
              s.log.info("purchase item given back: the process is stopping", { item_id: item.id, purchase_id: item.purchaseId });
              break;
            }
            // From here the provider may be reached: a shutdown must leave the item to recovery.
            held();
            result = await callProvider(purchaser, item, recovering, () => claimedProviderIds(s, connection.id, item.id));
            await hooks.afterProviderCall?.(item);
          } catch (e) {
            result = { kind: "retry", message: e instanceof Error ? e.message : String(e), cause: "internal" };
          }
        }
      } finally {
        held();
      }
      const report = await record(s, item, result);
      if (result.kind === "retry") s.log.warn("purchase item attempt failed", { item_id: item.id, purchase_id: item.purchaseId, cause: result.cause, error: errorForLog(result.message) });
      else s.log.info("purchase item", { ...report });
      reports.push(report);
    }
  } finally {
    for (const p of purchasers.values()) await Promise.resolve(p.close?.()).catch(() => {});
  }
  return reports;
}

/** Purchases this process is buying in the background (after an approval), per Services. */
const background = new WeakMap<Services, Set<Promise<void>>>();

/**
 * Starts buying a purchase's approved items in this process without waiting for it (the answer
 * to an approval); any replica's job finishes what this leaves. Failures are logged.
 */
export function buyInBackground(s: Services, purchaseId: string): void {
  const running = background.get(s) ?? new Set<Promise<void>>();
  background.set(s, running);
  // Not the request's work: its transactions carry no commit marker of the approval's key.
  const work: Promise<void> = s.shutdown.trackWork(outsideRequestScope(() => processPurchaseItems(s, { purchaseId })))
    .then(() => undefined)
    .catch((e) => s.log.error("purchase after approval failed", { purchase_id: purchaseId, error: errorForLog(e) }))
    .finally(() => running.delete(work));
  running.add(work);
}

/** Resolves once every purchase these Services started buying in the background has finished (tests; a stopping server waits through `s.shutdown`). */
export async function backgroundPurchasesSettled(s: Services): Promise<void> {
  const running = background.get(s);
  while (running?.size) await Promise.all([...running]);
}

export async function purchaserOfConnection(s: Services, c: ConnectionRow): Promise<ProviderPurchaser> {
  return providerPurchaserFor(purchasingSettingsOf(secretBoxOf(s.config), c), { now: () => s.now() });
}
