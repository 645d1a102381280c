import { createHash } from "node:crypto";

/**
 * SHA-256 of a string's UTF-8 bytes as lowercase hex, natively. Bun's one-shot hasher skips the
 * Hash object node:crypto builds per call (it runs on every authenticated request); elsewhere
 * (Deno) node:crypto. Both give the same digest.
 */
const bun = (globalThis as any).Bun as undefined | { CryptoHasher?: { hash(algorithm: string, input: string, encoding: "hex"): string } };
const oneShot = typeof bun?.CryptoHasher?.hash === "function" ? bun.CryptoHasher : undefined;

export function sha256Hex(input: string): string {
  if (oneShot) return oneShot.hash("sha256", input, "hex");
  return createHash("sha256").update(input, "utf8").digest("hex");
}
