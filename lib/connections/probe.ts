/**
 * `POST …/billing-connections/{id}/test`: can the export be reached and read as FOCUS? Lists the
 * periods and reads the header of the newest period's first file, importing nothing.
 */
import type { Services } from "../services.ts";
import { headerOf } from "../billing/focusSource.ts";
import { secretBoxOf } from "../secrets/index.ts";
import { getConnectionRow, settingsOf } from "./service.ts";
import { readerFor } from "./readers/index.ts";
import { describeFailure } from "./sync.ts";
import { errorForLog } from "../log.ts";
import { ConnectionFailure, type ExportReader } from "./source.ts";

export interface ConnectionTestResult {
  ok: boolean;
  /** Why it failed: credentials, not_found, permission, no_export, not_focus, format, unreachable (null when ok). */
  cause: string | null;
  message: string;
  periods: { month: string; files: number; bytes: number }[];
  /** Columns of the newest period's first file. */
  columns: string[];
}

export async function testConnection(s: Services, orgId: string, id: string): Promise<ConnectionTestResult> {
  const c = await getConnectionRow(s.db, orgId, id);
  const settings = settingsOf(secretBoxOf(s.config), c);
  let reader: ExportReader | null = null;
  const periods: ConnectionTestResult["periods"] = [];
  try {
    reader = await readerFor(settings, { allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints });
    const found = await reader.periods();
    periods.push(...found.map((p) => ({ month: p.month, files: p.files.length, bytes: p.bytes })));
    const newest = found.at(-1);
    if (!newest) throw new ConnectionFailure("no_export", "The export holds no billing period yet.");
    const columns = await firstHeader(newest.tables());
    if (!columns) throw new ConnectionFailure("no_export", `The files of ${newest.month} are empty.`);
    headerOf(columns, {});
    return { ok: true, cause: null, message: `Connected: ${found.length} billing period(s), the newest (${newest.month}) in FOCUS format.`, periods, columns };
  } catch (e) {
    const f = describeFailure(reader?.explain?.(e) ?? e);
    if (f.cause === "internal") s.log.error("billing connection test failed", { connection_id: c.id, error: errorForLog(e) });
    return { ok: false, cause: f.cause, message: f.message, periods, columns: [] };
  } finally {
    await Promise.resolve(reader?.close?.()).catch(() => {});
  }
}

/** The header of the first table, reading only its first batch (the rest is never downloaded). */
async function firstHeader(tables: AsyncIterable<AsyncIterable<{ records: string[][] }>>): Promise<string[] | null> {
  for await (const table of tables) {
    for await (const batch of table) return batch.records[0] ?? null;
    return null;
  }
  return null;
}
