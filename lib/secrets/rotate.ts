/**
 * `secrets rotate`: re-seals every stored secret under the current COMMITOPS_SECRET_KEY (the old
 * key given in COMMITOPS_SECRET_KEY_PREVIOUS until this has run), one row per transaction.
 */
import { ne, or, isNull, and, isNotNull, eq } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { billingConnections } from "../db/schema/index.ts";
import { secretContext } from "../connections/service.ts";
import { SecretKeyMissing, type SecretBox } from "./secretBox.ts";

export async function rotateSecrets(db: Db, box: SecretBox): Promise<{ resealed: number; current_key_id: string }> {
  if (!box.currentKeyId) throw new SecretKeyMissing();
  const current = box.currentKeyId;
  const stale = await db
    .select({ id: billingConnections.id })
    .from(billingConnections)
    .where(and(isNotNull(billingConnections.secretCiphertext), or(isNull(billingConnections.secretKeyId), ne(billingConnections.secretKeyId, current))));
  let resealed = 0;
  for (const { id } of stale) {
    await db.transaction(async (tx) => {
      const [c] = await tx.select().from(billingConnections).where(eq(billingConnections.id, id)).for("update");
      if (!c?.secretCiphertext || c.secretKeyId === current) return;
      const plain = box.open({ ciphertext: c.secretCiphertext, keyId: c.secretKeyId ?? "" }, secretContext(c));
      const sealed = box.seal(plain, secretContext(c));
      await tx.update(billingConnections).set({ secretCiphertext: sealed.ciphertext, secretKeyId: sealed.keyId }).where(eq(billingConnections.id, id));
      resealed++;
    });
  }
  return { resealed, current_key_id: current };
}
