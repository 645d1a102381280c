/**
 * Inventory from the providers (DESIGN §14): each purchasing connection's commitments as the
 * provider lists them (reserved instances, savings plans, reservations, CUDs) reconcile the
 * org's inventory, so renewals and planning see what really exists: new ones are added, the
 * ones listed again are updated (state, term dates, amount), and the ones the provider no longer
 * lists in a region it was asked about are retired. Billing data stays the source of cost; the
 * listing never touches billing rows.
 *
 * A provider id may be spelled as an ARN in billing data (`arn:aws:ec2:…:reserved-instances/<id>`)
 * and as a bare id in the listing: both spellings are one commitment.
 */
import { and, asc, eq, inArray, isNull, lt, lte, or } from "drizzle-orm";
import { commitments, purchasingConnections } from "../db/schema/index.ts";
import { queryRows } from "../billing/sql.ts";
import type { Services } from "../services.ts";
import { errorForLog } from "../log.ts";
import { purchaserOfConnection } from "./executor.ts";
import { PurchaseFailure, type ProviderCommitment } from "./providers/types.ts";

type ConnectionRow = typeof purchasingConnections.$inferSelect;
type CommitmentRow = typeof commitments.$inferSelect;

export interface InventoryReport {
  listed: number;
  added: number;
  updated: number;
  retired: number;
}

const LEASE_MS = 10 * 60_000;

/** The provider's bare id of a commitment id as billing data or a listing spells it. */
export function bareCommitmentId(id: string): string {
  const slash = id.lastIndexOf("/");
  return id.startsWith("arn:") && slash >= 0 ? id.slice(slash + 1) : id;
}

/** Regions to list: where the org has commitments or buys, and the connection's own. */
async function regionsOf(s: Services, c: ConnectionRow): Promise<string[]> {
  const rows = await queryRows<{ region: string }>(
    s.db,
    `SELECT DISTINCT region FROM commitments WHERE org_id = $1 AND provider = $2 AND region IS NOT NULL
     UNION SELECT DISTINCT region FROM purchase_items WHERE org_id = $1 AND provider = $2 AND region IS NOT NULL`,
    [c.orgId, c.provider],
  );
  const regions = new Set(rows.map((r) => r.region));
  const own = (c.config as Record<string, string>).region;
  if (own) regions.add(own);
  return [...regions].sort();
}

/** Applies one listing to the inventory in one transaction. */
export async function reconcileInventory(s: Services, c: ConnectionRow, listed: ProviderCommitment[], regions: string[]): Promise<InventoryReport> {
  const now = s.now();
  return s.db.transaction(async (tx) => {
    const existing = await tx.select().from(commitments).where(and(eq(commitments.orgId, c.orgId), eq(commitments.provider, c.provider)));
    const byBareId = new Map<string, CommitmentRow>();
    for (const row of existing) byBareId.set(bareCommitmentId(row.providerCommitmentId), row);
    const report: InventoryReport = { listed: listed.length, added: 0, updated: 0, retired: 0 };
    const seen = new Set<string>();
    // Most of a listing is what was listed last time: those rows only get their reconciled time, in one statement.
    const unchanged: string[] = [];
    for (const p of listed) {
      const bare = bareCommitmentId(p.providerCommitmentId);
      seen.add(bare);
      const fields = {
        providerState: p.state,
        startsAt: p.startsAt,
        endsAt: p.state === "retired" && (!p.endsAt || p.endsAt > now) ? now : p.endsAt,
        amount: String(p.amount),
        reconciledAt: now,
      };
      const row = byBareId.get(bare);
      if (row) {
        const changed = row.providerState !== p.state || row.amount === null || Number(row.amount) !== p.amount || row.endsAt?.getTime() !== fields.endsAt?.getTime() || row.startsAt?.getTime() !== p.startsAt?.getTime();
        if (!changed) {
          unchanged.push(row.id);
          continue;
        }
        await tx.update(commitments).set(fields).where(eq(commitments.id, row.id));
        report.updated++;
        continue;
      }
      await tx.insert(commitments).values({
        orgId: c.orgId,
        provider: c.provider,
        providerCommitmentId: p.providerCommitmentId,
        name: p.name,
        commitmentType: p.commitmentType,
        category: p.category,
        contractTerm: p.contractTerm,
        paymentOption: p.paymentOption,
        region: p.region,
        instanceType: p.instanceType,
        instanceFamily: p.instanceFamily,
        upfrontCost: String(p.upfrontCost),
        recurringHourlyCost: String(p.recurringHourlyCost),
        source: "provider",
        ...fields,
      });
      report.added++;
    }
    if (unchanged.length) await tx.update(commitments).set({ reconciledAt: now }).where(inArray(commitments.id, unchanged));
    // Listed before and gone now, in a region this listing covered: expired or exchanged at the provider.
    const covered = new Set(regions);
    for (const row of existing) {
      if (row.providerState === null || row.providerState === "retired" || seen.has(bareCommitmentId(row.providerCommitmentId))) continue;
      if (row.region && !covered.has(row.region)) continue;
      await tx.update(commitments).set({ providerState: "retired", endsAt: row.endsAt && row.endsAt < now ? row.endsAt : now, reconciledAt: now }).where(eq(commitments.id, row.id));
      report.retired++;
    }
    await tx
      .update(purchasingConnections)
      .set({ status: "ok", lastError: null, lastErrorCause: null, lastInventoryAt: now, nextInventoryAt: new Date(now.getTime() + s.config.purchasingInventoryIntervalHours * 3_600_000), claimedUntil: null })
      .where(eq(purchasingConnections.id, c.id));
    return report;
  });
}

/** Lists one connection's commitments at its provider and reconciles them. A failure is recorded on the connection and rethrown. */
export async function syncInventory(s: Services, c: ConnectionRow): Promise<InventoryReport> {
  const purchaser = await purchaserOfConnection(s, c);
  try {
    const regions = await regionsOf(s, c);
    const listed = await purchaser.listCommitments(regions);
    return await reconcileInventory(s, c, listed, regions);
  } catch (e) {
    const now = s.now();
    const cause = e instanceof PurchaseFailure ? e.cause : "internal";
    const message = e instanceof PurchaseFailure ? e.message : "The inventory could not be listed (see the server log).";
    if (!(e instanceof PurchaseFailure)) s.log.error("purchasing inventory failed", { connection_id: c.id, error: errorForLog(e) });
    await s.db
      .update(purchasingConnections)
      .set({ status: "error", lastError: message.slice(0, 1000), lastErrorCause: cause, nextInventoryAt: new Date(now.getTime() + s.config.purchasingInventoryIntervalHours * 3_600_000), claimedUntil: null })
      .where(eq(purchasingConnections.id, c.id));
    throw e;
  } finally {
    await Promise.resolve(purchaser.close?.()).catch(() => {});
  }
}

/** The inventory job: every due, enabled connection, each claimed by one replica. */
export async function syncDueInventories(s: Services): Promise<{ connection_id: string; report?: InventoryReport; error?: string }[]> {
  const out: { connection_id: string; report?: InventoryReport; error?: string }[] = [];
  // A stopping process claims no more connections (lib/shutdown).
  while (!s.shutdown.stopRequested()) {
    const now = s.now();
    const claimed = await s.db.transaction(async (tx) => {
      const [c] = await tx
        .select()
        .from(purchasingConnections)
        .where(and(eq(purchasingConnections.enabled, true), lte(purchasingConnections.nextInventoryAt, now), or(isNull(purchasingConnections.claimedUntil), lt(purchasingConnections.claimedUntil, now))))
        .orderBy(asc(purchasingConnections.nextInventoryAt))
        .limit(1)
        .for("update", { skipLocked: true });
      if (!c) return null;
      const [u] = await tx.update(purchasingConnections).set({ claimedUntil: new Date(now.getTime() + LEASE_MS) }).where(eq(purchasingConnections.id, c.id)).returning();
      return u!;
    });
    if (!claimed) return out;
    try {
      out.push({ connection_id: claimed.id, report: await syncInventory(s, claimed) });
    } catch (e) {
      out.push({ connection_id: claimed.id, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}
