import { createHash, timingSafeEqual } from "node:crypto";
import { pgErrorCode } from "../db/index.ts";
import { QueryTimeoutError } from "../db/errors.ts";
import { ReportTimeoutError } from "../reports/downloads.ts";

const digest = (v: string) => createHash("sha256").update(v).digest();

/** Whether an Authorization header carries `token` as its bearer (compared in constant time). */
export function bearerMatches(header: string | null, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return !!m && timingSafeEqual(digest(m[1]!), digest(token));
}

/** A statement cancelled for running past its time limit: PostgreSQL's statement_timeout (57014) or ours. */
export function isStatementTimeout(e: unknown): boolean {
  return e instanceof QueryTimeoutError || e instanceof ReportTimeoutError || pgErrorCode(e) === "57014";
}
