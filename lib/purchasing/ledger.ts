/**
 * The ledger "buys" an order without a purchasing connection: each item's commitment is added to
 * the inventory at its planned price and the order is confirmed, all in the caller's transaction
 * (at once when the order is placed, or when a person approves an order its template made wait).
 * Nothing is bought anywhere (demos, and orgs that buy by hand from the plans).
 */
import { asc, eq } from "drizzle-orm";
import type { Tx } from "../db/index.ts";
import { commitments, purchaseItems, purchases } from "../db/schema/index.ts";
import { boughtCommitment } from "./boughtCommitment.ts";
import { recordEvent } from "./events.ts";

export async function confirmInLedger(tx: Tx, p: { id: string; orgId: string; provider: string }, now: Date, opts: { notify?: boolean } = {}): Promise<void> {
  const items = await tx.select().from(purchaseItems).where(eq(purchaseItems.purchaseId, p.id)).orderBy(asc(purchaseItems.position));
  for (const item of items) {
    const providerCommitmentId = `commitops-purchase:${p.id}:${item.position}`;
    const row = boughtCommitment(item, { providerCommitmentId, startsAt: now, endsAt: null, upfront: Number(item.plannedUpfront), hourly: Number(item.plannedHourly), providerState: null, at: now });
    const [c] = await tx.insert(commitments).values(row).returning({ id: commitments.id });
    await tx
      .update(purchaseItems)
      .set({
        status: "confirmed",
        providerPurchaseId: providerCommitmentId,
        providerState: "ledger",
        actualUpfront: item.plannedUpfront,
        actualHourly: item.plannedHourly,
        currency: "USD",
        startsAt: now,
        endsAt: row.endsAt,
        commitmentId: c!.id,
        finishedAt: now,
        updatedAt: now,
      })
      .where(eq(purchaseItems.id, item.id));
  }
  await tx.update(purchases).set({ status: "confirmed", updatedAt: now }).where(eq(purchases.id, p.id));
  await recordEvent(tx, {
    orgId: p.orgId,
    purchaseId: p.id,
    event: "confirmed",
    message: `Recorded in the ledger (no purchasing connection for ${p.provider}): ${items.length} commitment(s) added to the inventory.`,
    at: now,
    notify: opts.notify ?? false,
  });
}
