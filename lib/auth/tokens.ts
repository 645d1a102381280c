import { randomBytes } from "@noble/hashes/utils.js";
import { sha256Hex } from "../adapters/sha256.ts";

/** URL-safe random secret with a recognisable prefix (so leaked keys can be spotted by scanners). */
export function newSecret(prefix: string, bytes = 32): string {
  return `${prefix}_${Buffer.from(randomBytes(bytes)).toString("base64url")}`;
}

/**
 * Secrets are stored only as this hash: SHA-256 of the secret's UTF-8 bytes, lowercase hex. It
 * is native (lib/adapters/sha256.ts: it runs on every authenticated request, where the pure-JS
 * SHA-256 it replaces cost ~5 % of the CPU) and the same digest, so stored keys still verify.
 */
export function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

/** Constant-time string comparison for secrets that must be compared directly. */
export function timingSafeEqualStr(a: string, b: string): boolean {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  let diff = ea.length ^ eb.length;
  for (let i = 0; i < Math.max(ea.length, eb.length); i++) diff |= (ea[i % ea.length] ?? 0) ^ (eb[i % eb.length] ?? 0);
  return diff === 0;
}
