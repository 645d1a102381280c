import type { Config } from "../config.ts";
import { SecretBox } from "./secretBox.ts";

export { SecretBox, SecretKeyMissing, type SealedSecret } from "./secretBox.ts";

const boxes = new WeakMap<Config, SecretBox>();

/** The process's secret box for a config (its keys parsed once). */
export function secretBoxOf(config: Config): SecretBox {
  let box = boxes.get(config);
  if (!box) boxes.set(config, (box = new SecretBox(config.secretKey, config.previousSecretKeys)));
  return box;
}

/** The columns holding a row's secret fields: one ciphertext bound to `context`, its key id, and which fields are set. */
export function sealedSecretColumns(box: SecretBox, context: string, secrets: Record<string, string>) {
  if (!Object.keys(secrets).length) return { secretCiphertext: null, secretKeyId: null, secretFields: [] as string[] };
  const sealed = box.seal(JSON.stringify(secrets), context);
  return { secretCiphertext: sealed.ciphertext, secretKeyId: sealed.keyId, secretFields: Object.keys(secrets).sort() };
}

/** A row's secret fields, opened (never returned to a client). */
export function openSecretColumns(box: SecretBox, row: { secretCiphertext: string | null; secretKeyId: string | null }, context: string): Record<string, string> {
  return row.secretCiphertext && row.secretKeyId ? JSON.parse(box.open({ ciphertext: row.secretCiphertext, keyId: row.secretKeyId }, context)) : {};
}
