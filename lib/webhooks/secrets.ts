/**
 * An endpoint's secrets at rest, sealed by lib/secrets under the row's identity: a webhook's
 * signing secret (and, during a rotation's overlap, the previous one), or a Slack endpoint's
 * incoming-webhook URL, which is itself the credential (the `url` column keeps a redacted form).
 * Opened only to deliver; never in a response after create/rotate, never in a log.
 */
import { and, eq, isNotNull, isNull, ne, or } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { webhookEndpoints } from "../db/schema/events.ts";
import type { SecretBox, SealedSecret } from "../secrets/index.ts";

export type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** What each sealed value of an endpoint is bound to (additional authenticated data). */
export function endpointSecretContext(endpointId: string): string {
  return `webhook-endpoint:${endpointId}`;
}

export function sealEndpointSecret(box: SecretBox, endpointId: string, plaintext: string): SealedSecret {
  return box.seal(plaintext, endpointSecretContext(endpointId));
}

function openSealed(box: SecretBox, endpointId: string, ciphertext: string | null, keyId: string | null): string | null {
  return ciphertext && keyId ? box.open({ ciphertext, keyId }, endpointSecretContext(endpointId)) : null;
}

/** The sealed value of the row: a webhook's current signing secret, a Slack endpoint's URL. */
export function openEndpointSecret(box: SecretBox, row: Pick<EndpointRow, "id" | "secretCiphertext" | "secretKeyId">): string | null {
  return openSealed(box, row.id, row.secretCiphertext, row.secretKeyId);
}

/** The secrets that sign a message sent at `now`: the current one, then the previous one until its overlap ends. */
export function signingSecretsOf(box: SecretBox, row: EndpointRow, now: Date): string[] {
  if (row.kind !== "webhook") return [];
  const out: string[] = [];
  const current = openEndpointSecret(box, row);
  if (current) out.push(current);
  if (row.previousSecretExpiresAt && row.previousSecretExpiresAt > now) {
    const previous = openSealed(box, row.id, row.previousSecretCiphertext, row.previousSecretKeyId);
    if (previous) out.push(previous);
  }
  return out;
}

/**
 * `secrets rotate` for webhook endpoints: every sealed value under an older key (current and
 * previous secret) is opened and sealed again under the current key, one row per transaction.
 */
export async function resealWebhookEndpointSecrets(db: Db, box: SecretBox): Promise<number> {
  const current = box.currentKeyId!;
  const stale = await db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(
      or(
        and(isNotNull(webhookEndpoints.secretCiphertext), or(isNull(webhookEndpoints.secretKeyId), ne(webhookEndpoints.secretKeyId, current))),
        and(isNotNull(webhookEndpoints.previousSecretCiphertext), or(isNull(webhookEndpoints.previousSecretKeyId), ne(webhookEndpoints.previousSecretKeyId, current))),
      ),
    );
  let resealed = 0;
  for (const { id } of stale) {
    await db.transaction(async (tx) => {
      const [row] = await tx.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)).for("no key update");
      if (!row) return;
      const set: Partial<EndpointRow> = {};
      if (row.secretCiphertext && row.secretKeyId !== current) {
        const sealed = sealEndpointSecret(box, id, openSealed(box, id, row.secretCiphertext, row.secretKeyId ?? "")!);
        set.secretCiphertext = sealed.ciphertext;
        set.secretKeyId = sealed.keyId;
      }
      if (row.previousSecretCiphertext && row.previousSecretKeyId !== current) {
        const sealed = sealEndpointSecret(box, id, openSealed(box, id, row.previousSecretCiphertext, row.previousSecretKeyId ?? "")!);
        set.previousSecretCiphertext = sealed.ciphertext;
        set.previousSecretKeyId = sealed.keyId;
      }
      if (!Object.keys(set).length) return;
      await tx.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, id));
      resealed++;
    });
  }
  return resealed;
}
