import { argon2id } from "@noble/hashes/argon2.js";
import { randomBytes } from "@noble/hashes/utils.js";
import { timingSafeEqualStr } from "../auth/tokens.ts";

/**
 * argon2id password hashing. On Bun this uses Bun.password (native, PHC string); elsewhere
 * (Deno) a pure-JS argon2id with the same PHC format, so hashes verify across runtimes.
 */
const bun = (globalThis as any).Bun as undefined | { password: { hash(p: string, o: any): Promise<string>; verify(p: string, h: string): Promise<boolean> } };

const PARAMS = { m: 19456, t: 2, p: 1 }; // OWASP's argon2id minimum

export async function hashPassword(password: string): Promise<string> {
  if (bun) return bun.password.hash(password, { algorithm: "argon2id", memoryCost: PARAMS.m, timeCost: PARAMS.t });
  const salt = randomBytes(16);
  const hash = argon2id(password, salt, { ...PARAMS, dkLen: 32 });
  const b64 = (u: Uint8Array) => Buffer.from(u).toString("base64").replace(/=+$/, "");
  return `$argon2id$v=19$m=${PARAMS.m},t=${PARAMS.t},p=${PARAMS.p}$${b64(salt)}$${b64(hash)}`;
}

export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  if (bun) return bun.password.verify(password, phc);
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([^$]+)\$([^$]+)$/.exec(phc);
  if (!m) return false;
  const salt = Buffer.from(m[4]!, "base64");
  const expected = Buffer.from(m[5]!, "base64");
  const got = argon2id(password, salt, { m: +m[1]!, t: +m[2]!, p: +m[3]!, dkLen: expected.length });
  return timingSafeEqualStr(Buffer.from(got).toString("hex"), expected.toString("hex"));
}
