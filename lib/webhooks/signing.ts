/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret `whsec_<base64 key>`, and
 * for each message `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`.
 * This is the `standardwebhooks` package's exact algorithm on node:crypto's native HMAC (the
 * package hashes in JavaScript); tests check both agree and verify with the package.
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";
/** Key bytes of a new secret: the specification asks for 24 to 64. */
const SECRET_BYTES = 32;

/** A new signing secret in the Standard Webhooks form. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

/** One `v1,<signature>` of a message. */
export function signMessage(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  return "v1," + createHmac("sha256", keyOf(secret)).update(`${msgId}.${timestampSeconds}.${body}`, "utf8").digest("base64");
}

/**
 * The `webhook-signature` header: one signature per secret still signing (the current one, and
 * during a rotation's overlap the previous one), space-separated as the specification allows, so
 * a receiver holding either secret verifies.
 */
export function signatureHeader(secrets: readonly string[], msgId: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signMessage(secret, msgId, timestampSeconds, body)).join(" ");
}
