import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";

/**
 * What the database keeps of an `Idempotency-Key` and of the answer it replays. A stored answer
 * may carry a secret shown once (a new API key) and a request body may carry credentials (a
 * connection's secrets), so neither is kept in clear: the row is found by a digest of the key,
 * the request is fingerprinted with an HMAC under the key, and the answer is sealed with
 * AES-256-GCM under a key derived from the client's key (HKDF-SHA256, org and owner as salt, the
 * org as additional data). Reading the table alone opens nothing for a key with entropy (a UUID,
 * as clients are told to send); the client's retry, which carries the key, does.
 */
const INFO = "commitops idempotency replay v1";
const PREFIX = "v1.";

/**
 * A key belongs to the caller that sent it (`owner`: the user, else the credential), inside its
 * organization: another member or key of the org that happens to send the same key runs its own
 * request and never receives this caller's answer (a new API key's secret, say).
 */
export interface KeyScope {
  orgId: string;
  owner: string;
  key: string;
}

/** The row's key column: the client's key is never stored. */
export const storedKeyOf = (k: KeyScope): string => createHash("sha256").update(`${k.owner}\n${k.key}`, "utf8").digest("hex");

/** A fingerprint of method, path and body that only a holder of the key can recompute. */
export const requestFingerprint = (k: KeyScope, request: string): string => createHmac("sha256", k.key).update(`${k.owner}\n${request}`, "utf8").digest("hex");

function bodyKey(k: KeyScope): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(k.key, "utf8"), Buffer.from(`${k.orgId}\n${k.owner}`, "utf8"), INFO, 32));
}

export function sealResponseBody(k: KeyScope, body: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", bodyKey(k), iv);
  cipher.setAAD(Buffer.from(k.orgId, "utf8"));
  const sealed = Buffer.concat([cipher.update(body, "utf8"), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64");
}

/** The stored answer in clear; throws when it was not sealed under this org, owner and key. */
export function openResponseBody(k: KeyScope, stored: string): string {
  if (!stored.startsWith(PREFIX)) throw new Error("an idempotency answer that is not sealed");
  const raw = Buffer.from(stored.slice(PREFIX.length), "base64");
  const decipher = createDecipheriv("aes-256-gcm", bodyKey(k), raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(k.orgId, "utf8"));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}
