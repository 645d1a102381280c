import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";

/** URL-safe random secret with a recognisable prefix (so leaked keys can be spotted by scanners). */
export function newSecret(prefix: string, bytes = 32): string {
  return `${prefix}_${Buffer.from(randomBytes(bytes)).toString("base64url")}`;
}

/** Secrets are stored only as this hash. */
export function hashSecret(secret: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(secret)));
}

/** Constant-time string comparison for secrets that must be compared directly. */
export function timingSafeEqualStr(a: string, b: string): boolean {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  let diff = ea.length ^ eb.length;
  for (let i = 0; i < Math.max(ea.length, eb.length); i++) diff |= (ea[i % ea.length] ?? 0) ^ (eb[i % eb.length] ?? 0);
  return diff === 0;
}
