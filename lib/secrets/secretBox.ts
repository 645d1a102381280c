/**
 * Secrets at rest (connection credentials): AES-256-GCM under COMMITOPS_SECRET_KEY, with the key's
 * id kept beside each ciphertext so a rotated key can still open what it sealed until
 * `secrets rotate` re-seals everything under the new one. The row's identity is the additional
 * authenticated data: a ciphertext copied onto another row does not open.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { AppError } from "../errors.ts";

export interface SealedSecret {
  /** base64(iv ‖ ciphertext ‖ tag). */
  ciphertext: string;
  keyId: string;
}

export class SecretKeyMissing extends AppError {
  constructor() {
    super(503, "secret_key_missing", "Storing or reading connection credentials needs COMMITOPS_SECRET_KEY (32 random bytes, base64 or hex) in the server's environment.", "service_unavailable");
  }
}

export class SecretKeyInvalid extends AppError {
  constructor(message: string) {
    super(503, "secret_key_invalid", message, "service_unavailable");
  }
}

function keyBytes(text: string): Buffer {
  const t = text.trim();
  const bytes = /^[0-9a-f]{64}$/i.test(t) ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
  if (bytes.length !== 32) throw new SecretKeyInvalid("COMMITOPS_SECRET_KEY must be 32 bytes, given as base64 or 64 hex digits.");
  return bytes;
}

/** The public name of a key: not the key, and the same on every replica. */
function keyIdOf(key: Buffer): string {
  return "k" + createHash("sha256").update("commitops-secret-key-id\0").update(key).digest("hex").slice(0, 12);
}

export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  readonly currentKeyId: string | null;

  constructor(current: string | undefined, previous: string[] = []) {
    let currentId: string | null = null;
    if (current) {
      const k = keyBytes(current);
      currentId = keyIdOf(k);
      this.keys.set(currentId, k);
    }
    for (const p of previous) {
      const k = keyBytes(p);
      this.keys.set(keyIdOf(k), k);
    }
    this.currentKeyId = currentId;
  }

  /** Whether this box holds the key a secret was sealed under (the current one or a previous one). */
  hasKey(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  get canSeal(): boolean {
    return this.currentKeyId !== null;
  }

  seal(plaintext: string, context: string): SealedSecret {
    if (!this.currentKeyId) throw new SecretKeyMissing();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.keys.get(this.currentKeyId)!, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return { ciphertext: Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64"), keyId: this.currentKeyId };
  }

  open(sealed: SealedSecret, context: string): string {
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new SecretKeyMissing();
    const raw = Buffer.from(sealed.ciphertext, "base64");
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString("utf8");
  }

  /** Whether a sealed secret is under an older key than the current one. */
  isStale(sealed: SealedSecret): boolean {
    return sealed.keyId !== this.currentKeyId;
  }
}
