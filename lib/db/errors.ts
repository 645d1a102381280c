/** Walks an error and its causes (drizzle wraps driver errors) looking for a property. */
function causes(err: unknown): any[] {
  const out: any[] = [];
  let cur: any = err;
  for (let i = 0; cur && i < 6; i++) {
    out.push(cur);
    cur = cur.cause;
  }
  return out;
}

/** SQLSTATE of a PostgreSQL error (e.g. `23505` unique violation), or undefined. */
export function pgErrorCode(err: unknown): string | undefined {
  for (const e of causes(err)) if (typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  return undefined;
}

const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH",
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT",
  "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006",
]);

/** True when the error means the database cannot be reached (answer 503, not 500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (const e of causes(err)) {
    if (typeof e?.code === "string" && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e?.errno === "string" && UNAVAILABLE_CODES.has(e.errno)) return true;
    const msg = typeof e?.message === "string" ? e.message : "";
    if (/PGlite is closed|database is closed|Connection terminated|connect ECONNREFUSED|write CONNECTION_CLOSED/i.test(msg)) return true;
  }
  return false;
}
