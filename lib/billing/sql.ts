import { sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";

/**
 * Text SQL with positional parameters ($1…) as a drizzle SQL object, so hand-written analytic
 * queries run on a Db or inside a transaction (Tx) with either driver.
 */
export function textSql(text: string, params: unknown[] = []): SQL {
  const parts = text.split(/\$(\d+)/);
  const chunks: SQL[] = [];
  for (let i = 0; i < parts.length; i++) {
    if (i % 2 === 0) {
      if (parts[i]) chunks.push(sql.raw(parts[i]!));
    } else {
      const idx = Number(parts[i]) - 1;
      if (idx < 0 || idx >= params.length) throw new Error(`textSql: no parameter $${idx + 1}`);
      chunks.push(sql`${params[idx]}`);
    }
  }
  return sql.join(chunks, sql.raw(""));
}

/** Rows of a drizzle `execute` result: postgres.js returns an array, PGlite `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] })?.rows ?? []) as T[];
}

export async function queryRows<T = Record<string, unknown>>(db: DbOrTx, text: string, params: unknown[] = []): Promise<T[]> {
  return rowsOf<T>(await db.execute(textSql(text, params)));
}

/** numeric columns come back as strings; null stays null. */
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

export { PROVIDERS, isProvider, type Provider } from "../providers.ts";

/** 'YYYY-MM' or a Date → 'YYYY-MM-01'. */
export function monthStart(m: string | Date): string {
  if (m instanceof Date) return `${m.getUTCFullYear()}-${String(m.getUTCMonth() + 1).padStart(2, "0")}-01`;
  const x = /^(\d{4})-(\d{2})/.exec(m);
  if (!x) throw new Error(`not a month: ${m}`);
  return `${x[1]}-${x[2]}-01`;
}
