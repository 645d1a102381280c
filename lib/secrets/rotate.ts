/**
 * `secrets rotate`: re-seals every stored secret (billing and purchasing connections, webhook endpoints) under the
 * current COMMITOPS_SECRET_KEY (the old key given in COMMITOPS_SECRET_KEY_PREVIOUS until this
 * has run), one row per transaction.
 */
import { ne, or, isNull, and, isNotNull, eq } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { billingConnections, purchasingConnections } from "../db/schema/index.ts";
import { secretContext } from "../connections/service.ts";
import { purchasingSecretContext } from "../purchasing/connections.ts";
import { resealWebhookEndpointSecrets } from "../webhooks/secrets.ts";
import { SecretKeyMissing, type SecretBox } from "./secretBox.ts";

/** A table holding sealed secrets, and what each row's secret is bound to. */
const SEALED_TABLES = [
  { table: billingConnections, context: secretContext },
  { table: purchasingConnections, context: purchasingSecretContext },
] as const;

export async function rotateSecrets(db: Db, box: SecretBox): Promise<{ resealed: number; current_key_id: string }> {
  if (!box.currentKeyId) throw new SecretKeyMissing();
  const current = box.currentKeyId;
  let resealed = 0;
  for (const { table, context } of SEALED_TABLES) {
    const stale = await db
      .select({ id: table.id })
      .from(table)
      .where(and(isNotNull(table.secretCiphertext), or(isNull(table.secretKeyId), ne(table.secretKeyId, current))));
    for (const { id } of stale) {
      await db.transaction(async (tx) => {
        const [c] = await tx.select({ id: table.id, orgId: table.orgId, secretCiphertext: table.secretCiphertext, secretKeyId: table.secretKeyId }).from(table).where(eq(table.id, id)).for("update");
        if (!c?.secretCiphertext || c.secretKeyId === current) return;
        const plain = box.open({ ciphertext: c.secretCiphertext, keyId: c.secretKeyId ?? "" }, context(c));
        const sealed = box.seal(plain, context(c));
        await tx.update(table).set({ secretCiphertext: sealed.ciphertext, secretKeyId: sealed.keyId }).where(eq(table.id, id));
        resealed++;
      });
    }
  }
  // Webhook endpoints hold two sealed values per row (current and previous signing secret).
  resealed += await resealWebhookEndpointSecrets(db, box);
  return { resealed, current_key_id: current };
}
