/**
 * FOCUS 1.0–1.2 cost-and-usage ingestion: a streamed CSV (optionally gzip) → billing_line_items,
 * validated and encoded row by row in JS while PostgreSQL runs one COPY of the same stream
 * (the two overlap on separate cores), inside one transaction per file that also replaces the
 * earlier rows of its periods and rebuilds their report summaries. Rows violating the spec are
 * reported with their line numbers; by default one bad row rejects the whole file, with
 * `skipInvalid` the valid rows are kept. Re-importing a (provider, billing account, billing
 * period) replaces the rows imported before for it, so nothing is counted twice.
 */
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import { pipeline, type Readable } from "node:stream";
import type { Db, Tx } from "../db/index.ts";
import { queryRows, type Provider } from "./sql.ts";
import { deriveCommitments } from "./inventory.ts";
import { SummaryAccumulator } from "./summaryAccumulator.ts";
import { rebuildBillingSummaries } from "./summaries.ts";
import { memoryBudget } from "../adapters/gc.ts";
import { openCopyIn } from "../db/copyIn.ts";
import { INSERT_COLUMNS } from "./focusRow.ts";
import { FocusFileError, focusSource, NotFocusError, type FocusRecords } from "./focusSource.ts";

export { parseFocusTimestamp } from "./focusRow.ts";

export interface ImportOptions {
  /** Keep valid rows and report the invalid ones instead of rejecting the whole file. */
  skipInvalid?: boolean;
  /** Values for columns absent from the file (e.g. ProviderName for a provider's own export). */
  defaults?: Record<string, string>;
  fileName?: string;
  /** Called for each rejected row (e.g. to write a rejects file). */
  onReject?: (reject: RejectedRow) => void | Promise<void>;
  /** Called every `progressEvery` rows with the rows read so far. */
  onProgress?: (rowsRead: number) => void;
  progressEvery?: number;
  now?: Date;
  /** Summary groups per table added up in memory before PostgreSQL sums that table instead (default SUMMARY_GROUP_LIMIT). */
  summaryGroupLimit?: number;
  /** Runs in the import's transaction once the rows are in (e.g. a sync records what it imported): it commits or rolls back with them. */
  beforeCommit?: (tx: Tx, result: ImportResult) => Promise<void>;
}

export interface RejectedRow {
  /** 1-based line of the CSV file (the header is line 1). */
  line: number;
  errors: string[];
  record: Record<string, string>;
}

export interface ImportResult {
  import_id: string | null;
  file_name: string;
  rows_read: number;
  rows_imported: number;
  rows_rejected: number;
  /** The first 1000 rejects, with line numbers. */
  rejects: { line: number; errors: string[] }[];
  /** (provider, billing account, month) replaced by this import. */
  periods: { provider: Provider; billing_account_id: string; month: string }[];
  /** (provider, month) the file closes: BillingPeriodStatus "closed", or an InvoiceId on every row. */
  periods_closed: { provider: Provider; month: string }[];
  /** Rows of earlier imports replaced (deleted) for those periods. */
  rows_replaced: number;
  accounts_discovered: number;
  commitments_upserted: number;
  /** Summary tables PostgreSQL added up from the stored rows (amounts too large, or more groups than SUMMARY_GROUP_LIMIT); the others were summed while streaming. */
  summaries_summed_in_sql: ("cost" | "commitment")[];
}

/**
 * Thrown when a file has invalid rows and skipInvalid is off: nothing was written. The message
 * says what happened; what to do is the caller's to add (the CLI's `--skip-invalid`, a sync's
 * export to correct).
 */
export class FocusImportRejected extends Error {
  /** The first rejected rows: "line N: error; error | line M: …". */
  readonly firstRejects: string;
  constructor(readonly rowsRejected: number, readonly rejects: { line: number; errors: string[] }[]) {
    const first = rejects.slice(0, 5).map((r) => `line ${r.line}: ${r.errors.join("; ")}`).join(" | ");
    super(`${rowsRejected} row(s) violate the FOCUS specification; nothing was imported. ${first}`);
    this.firstRejects = first;
  }
}

export { FocusFileError, NotFocusError, type FocusRecords };


/**
 * The columns queries filter, join and group billing rows by: ANALYZE samples only these (the
 * wide text and JSON columns would make it cost as much as a third of the import).
 */
const ANALYZED_COLUMNS = ["org_id", "billing_period", "provider", "billing_account_id", "sub_account_id", "charge_category", "charge_period_start", "commitment_discount_id", "commitment_discount_status", "service_name", "region_id", "resource_id", "instance_type"];


/** Resident memory an import lets garbage grow to before collecting (the process's baseline is ~110 MB). */
const IMPORT_MEMORY_BUDGET = 160 << 20;

/**
 * The decoded bytes of a file path (gzip by extension), opened when the import starts reading.
 * A read or gzip error (a truncated file) rejects that read, whenever it happens: opened earlier,
 * a small file could fail while the import was still starting its transaction, as an 'error'
 * event nobody listened to (which ends the process).
 */
export function openFocusFile(path: string): AsyncIterable<Buffer> {
  return {
    [Symbol.asyncIterator]() {
      const raw = createReadStream(path, { highWaterMark: 1 << 20 });
      // pipeline, not pipe: an error of either stream destroys the other and reaches the reader.
      const decoded: Readable = path.endsWith(".gz") ? pipeline(raw, createGunzip(), () => {}) : raw;
      return decoded[Symbol.asyncIterator]();
    },
  };
}

/**
 * Imports one FOCUS CSV into the org. Memory stays flat whatever the size: rows are parsed,
 * validated and inserted batch by batch inside one transaction.
 */
export async function importFocus(db: Db, orgId: string, input: Readable | AsyncIterable<string | Buffer> | FocusRecords, opts: ImportOptions = {}): Promise<ImportResult> {
  const defaults = opts.defaults ?? {};
  const fileName = opts.fileName ?? "upload.csv";
  const progressEvery = opts.progressEvery ?? 50_000;

  return db.transaction(async (tx) => {
    // The file's one COPY lasts as long as the file (minutes at 10 M rows), and an import may wait
    // for another of the same org: the sessions' statement timeout does not apply to imports.
    await queryRows(tx, `SET LOCAL statement_timeout = 0`);
    // One import per org at a time: the replace-by-period step must see earlier imports committed.
    await queryRows(tx, `SELECT pg_advisory_xact_lock(hashtext('commitops:focus-import:' || $1::text))`, [orgId]);
    const [imp] = await queryRows<{ id: string }>(tx, `INSERT INTO billing_imports (org_id, file_name) VALUES ($1::uuid, $2) RETURNING id`, [orgId, fileName]);
    const importId = imp!.id;

    let rowsRead = 0;
    let imported = 0;
    let rejected = 0;
    const rejects: { line: number; errors: string[] }[] = [];
    const sink = openCopyIn(tx, `COPY billing_line_items (org_id, import_id, ${INSERT_COLUMNS.join(", ")}) FROM STDIN`);
    const withinMemoryBudget = memoryBudget(IMPORT_MEMORY_BUDGET);
    let nextProgress = progressEvery;
    const source = focusSource(input as AsyncIterable<string | Uint8Array> | FocusRecords, { defaults, orgId, importId, skipInvalid: !!opts.skipInvalid, summaryGroupLimit: opts.summaryGroupLimit });
    try {
      for await (const outcome of source.outcomes()) {
        rowsRead += outcome.rowsRead;
        imported += outcome.imported;
        if (opts.onProgress && rowsRead >= nextProgress) {
          opts.onProgress(rowsRead);
          nextProgress = (Math.floor(rowsRead / progressEvery) + 1) * progressEvery;
        }
        for (const r of outcome.rejects) {
          rejected++;
          if (rejects.length < 1000) rejects.push({ line: r.line, errors: r.errors });
          await opts.onReject?.(r);
        }
        // Once a row is rejected without skipInvalid nothing will be kept: stop writing, keep validating.
        if (outcome.lines.length && (rejected === 0 || opts.skipInvalid)) {
          await sink.write(outcome.lines);
          // The heap holds little (one batch, caches, summary groups) but the garbage of 100k
          // rows accumulates between the collector's own runs.
          withinMemoryBudget();
        }
      }
      if (!source.state) throw new FocusFileError("The file is empty (no header row).");
      if (rejected > 0 && !opts.skipInvalid) throw new FocusImportRejected(rejected, rejects);
      await sink.end();
    } catch (e) {
      await sink.abort(e);
      throw e;
    }
    opts.onProgress?.(rowsRead);
    const state = source.state;

    // Replace what earlier imports loaded for the same (provider, billing account, month).
    const periodList = state.periodList();
    let replaced = 0;
    if (periodList.length) {
      const del = await queryRows<{ n: string }>(
        tx,
        `WITH d AS (
           DELETE FROM billing_line_items li USING json_to_recordset($2::json) AS p(provider text, billing_account_id text, month date)
           WHERE li.org_id = $1::uuid AND li.provider = p.provider AND li.billing_account_id = p.billing_account_id
             AND li.billing_period = p.month AND li.import_id IS DISTINCT FROM $3::uuid
           RETURNING 1)
         SELECT count(*) AS n FROM d`,
        [orgId, JSON.stringify(periodList), importId],
      );
      replaced = Number(del[0]?.n ?? 0);
      await queryRows(
        tx,
        `INSERT INTO billing_periods (org_id, provider, month, status)
         SELECT DISTINCT $1::uuid, p.provider, p.month, 'open' FROM json_to_recordset($2::json) AS p(provider text, month date)
         ON CONFLICT (org_id, provider, month) DO NOTHING`,
        [orgId, JSON.stringify(periodList)],
      );
    }
    const closed = state.closedPeriodList();
    if (closed.length) {
      await queryRows(
        tx,
        `UPDATE billing_periods bp SET status = 'closed', closed_at = COALESCE(bp.closed_at, $3::timestamptz)
         FROM json_to_recordset($2::json) AS p(provider text, month date)
         WHERE bp.org_id = $1::uuid AND bp.provider = p.provider AND bp.month = p.month AND bp.status = 'open'`,
        [orgId, JSON.stringify(closed), (opts.now ?? new Date()).toISOString()],
      );
    }
    const accountList = state.accountList();
    if (accountList.length) {
      await queryRows(
        tx,
        `INSERT INTO cloud_accounts (org_id, provider, account_id, name, billing_account_id, billing_account_name)
         SELECT $1::uuid, a.provider, a.account_id, a.name, a.billing_account_id, a.billing_account_name
         FROM json_to_recordset($2::json) AS a(provider text, account_id text, name text, billing_account_id text, billing_account_name text)
         ON CONFLICT (org_id, provider, account_id) DO UPDATE SET
           name = COALESCE(EXCLUDED.name, cloud_accounts.name),
           billing_account_id = COALESCE(EXCLUDED.billing_account_id, cloud_accounts.billing_account_id),
           billing_account_name = COALESCE(EXCLUDED.billing_account_name, cloud_accounts.billing_account_name)`,
        [orgId, JSON.stringify(accountList)],
      );
    }
    const commitmentList = state.commitmentList();
    const commitmentsUpserted = commitmentList.length ? await deriveCommitments(tx, orgId, commitmentList) : 0;
    const summaries = state.summaries;
    const inSql = { cost: !summaries.exact || summaries.costInSql, commitment: !summaries.exact || summaries.commitmentInSql };
    if (summaries.exact) await summaries.write(tx, orgId, periodList);
    // Amounts past 15 integer digits, or more groups than memory allows (commitments × days ×
    // 10,000 accounts): PostgreSQL sums those tables from the rows just written.
    if (inSql.cost || inSql.commitment) await rebuildBillingSummaries(tx, orgId, periodList, inSql);
    await queryRows(tx, `UPDATE billing_imports SET rows_imported = $2, rows_rejected = $3 WHERE id = $1::uuid`, [importId, imported, rejected]);
    // Statistics of what was written, committed with it: a planner that believes the month is
    // empty picks nested loops that re-read it per account (minutes instead of seconds).
    if (imported || replaced) {
      for (const target of [`billing_line_items (${ANALYZED_COLUMNS.join(", ")})`, "billing_cost_summaries", "commitment_usage_summaries"]) await queryRows(tx, `ANALYZE ${target}`);
    }
    const result: ImportResult = {
      import_id: importId,
      file_name: fileName,
      rows_read: rowsRead,
      rows_imported: imported,
      rows_rejected: rejected,
      rejects,
      periods: periodList,
      periods_closed: closed as { provider: Provider; month: string }[],
      rows_replaced: replaced,
      accounts_discovered: accountList.length,
      commitments_upserted: commitmentsUpserted,
      summaries_summed_in_sql: periodList.length ? (["cost", "commitment"] as const).filter((t) => inSql[t]) : [],
    };
    await opts.beforeCommit?.(tx, result);
    return result;
  });
}

/** importFocus on a file path (`.csv` or `.csv.gz`). */
export function importFocusFile(db: Db, orgId: string, path: string, opts: ImportOptions = {}): Promise<ImportResult> {
  return importFocus(db, orgId, openFocusFile(path), { fileName: path.split(/[\\/]/).pop(), ...opts });
}
