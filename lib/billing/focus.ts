/**
 * FOCUS 1.0–1.2 cost-and-usage ingestion: a streamed CSV (optionally gzip) → billing_line_items,
 * inside one transaction per file that also replaces the earlier rows of its periods and
 * rebuilds their report summaries. A file on disk is parsed, validated and cast by PostgreSQL
 * (focusStaged.ts); records, streams and files it cannot take whole are validated and encoded
 * row by row in JS while PostgreSQL runs one COPY of them (focusRow.ts). A file whose content
 * digest matches a still-current earlier import is not imported again. Rows violating the spec are
 * reported with their line numbers; by default one bad row rejects the whole file, with
 * `skipInvalid` the valid rows are kept. Re-importing a (provider, billing account, billing
 * period) replaces the rows imported before for it, so nothing is counted twice.
 */
import { importBytes, importDuration, importRows } from "../metrics/process.ts";
import { inSpan } from "../tracing/index.ts";
import { createReadStream, statSync } from "node:fs";
import { createHash } from "node:crypto";
import { createGunzip } from "node:zlib";
import { pipeline, type Readable } from "node:stream";
import type { Db, Tx } from "../db/index.ts";
import { queryRows, type Provider } from "./sql.ts";
import { deriveCommitments } from "./inventory.ts";
import { rebuildBillingSummaries } from "./summaries.ts";
import { memoryBudget } from "../adapters/gc.ts";
import { copyInStreams, openCopyIn, poolSessions } from "../db/copyIn.ts";
import { pgErrorCode } from "../db/errors.ts";
import { readCsvBatches } from "./csvReader.ts";
import { dropStagingTables, dropStaleStagingTables, importStaged, stagedImportApplies } from "./focusStaged.ts";
import { headerOf } from "./focusSource.ts";
import type { DiscoveredAccount, ImportPeriod } from "./importState.ts";
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
  /** Row by row in JS even when PostgreSQL could parse the file (tests of both paths). */
  rowByRow?: boolean;
  /** Bytes per staged chunk when PostgreSQL parses the file (tests cut small files into many). */
  stagingChunkBytes?: number;
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
  /** This import's id; when `unchanged`, the earlier import holding the same content. */
  import_id: string | null;
  file_name: string;
  /** The file is byte for byte one already imported, whose rows are all still current: nothing was written. */
  unchanged: boolean;
  /** When `unchanged`: the rows that earlier import wrote. */
  rows_unchanged: number;
  /** Who parsed and validated the rows: PostgreSQL (a file it could take whole) or the row-by-row path; null when unchanged. */
  parsed_by: "postgresql" | "row_by_row" | null;
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

/** The rows of a file as written to billing_line_items, and what the rest of the import needs of them. */
interface LoadedRows {
  parsedBy: "postgresql" | "row_by_row";
  rowsRead: number;
  imported: number;
  rejected: number;
  rejects: { line: number; errors: string[] }[];
  periods: ImportPeriod[];
  closed: { provider: string; month: string }[];
  accounts: DiscoveredAccount[];
  commitments: { provider: Provider; id: string }[];
}

/**
 * Imports one FOCUS CSV (or records) into the org, row by row in JS (focusRow.ts). Memory stays
 * flat whatever the size: rows are parsed, validated and copied batch by batch inside one
 * transaction. Files on disk go through importFocusFile, which lets PostgreSQL parse them.
 */
export async function importFocus(db: Db, orgId: string, input: Readable | AsyncIterable<string | Buffer> | FocusRecords, opts: ImportOptions = {}): Promise<ImportResult> {
  return importInTransaction(db, orgId, opts, null, (tx, importId) => loadRowByRow(tx, orgId, importId, input, opts));
}

/** The row-by-row load: parse, validate and encode in JS, one COPY of the valid rows. */
async function loadRowByRow(tx: Tx, orgId: string, importId: string, input: Readable | AsyncIterable<string | Buffer> | FocusRecords, opts: ImportOptions): Promise<LoadedRows> {
  const progressEvery = opts.progressEvery ?? 50_000;
  let rowsRead = 0;
  let imported = 0;
  let rejected = 0;
  const rejects: { line: number; errors: string[] }[] = [];
  const sink = openCopyIn(tx, `COPY billing_line_items (org_id, import_id, ${INSERT_COLUMNS.join(", ")}) FROM STDIN`);
  const withinMemoryBudget = memoryBudget(IMPORT_MEMORY_BUDGET);
  let nextProgress = progressEvery;
  const source = focusSource(input as AsyncIterable<string | Uint8Array> | FocusRecords, { defaults: opts.defaults ?? {}, orgId, importId, skipInvalid: !!opts.skipInvalid });
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
        // The heap holds little (one batch, caches) but the garbage of 100k rows accumulates
        // between the collector's own runs.
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
  return { parsedBy: "row_by_row", rowsRead, imported, rejected, rejects, periods: state.periodList(), closed: state.closedPeriodList(), accounts: state.accountList(), commitments: state.commitmentList() };
}

/**
 * One import in one transaction: the org's import lock, its billing_imports row, the rows
 * (`load`), then the replace of earlier imports' periods, the periods' states, the accounts and
 * commitments found, the summaries and the planner statistics. With a content digest, a file
 * whose earlier import with the same digest is still current is not imported again.
 */
async function importInTransaction(db: Db, orgId: string, opts: ImportOptions, digest: string | null, load: (tx: Tx, importId: string) => Promise<LoadedRows>): Promise<ImportResult> {
  const end = importDuration.startTimer();
  try {
    const result = await inSpan("import focus", {}, async (span) => {
      const r = await importRowsInTransaction(db, orgId, opts, digest, load);
      span?.setAttributes({ "commitops.import.rows": r.rows_imported, "commitops.import.unchanged": r.unchanged, "commitops.import.parsed_by": r.parsed_by ?? "none" });
      return r;
    });
    end({ outcome: result.unchanged ? "unchanged" : "imported" });
    if (result.rows_imported) importRows.inc({ parsed_by: result.parsed_by ?? "row_by_row" }, result.rows_imported);
    return result;
  } catch (e) {
    end({ outcome: "failed" });
    throw e;
  }
}

async function importRowsInTransaction(db: Db, orgId: string, opts: ImportOptions, digest: string | null, load: (tx: Tx, importId: string) => Promise<LoadedRows>): Promise<ImportResult> {
  const fileName = opts.fileName ?? "upload.csv";
  return db.transaction(async (tx) => {
    // The file's one COPY lasts as long as the file (minutes at 10 M rows), and an import may wait
    // for another of the same org: the sessions' statement timeout does not apply to imports.
    await queryRows(tx, `SET LOCAL statement_timeout = 0`);
    // The summaries' grouping sets and the tracking's distinct values hash in memory instead of spilling to disk.
    await queryRows(tx, `SET LOCAL work_mem = '64MB'`);
    // One process per import: parallel workers sorted what one process hashes (three processes'
    // CPU for one's work), and an import should leave the server's other cores to other requests.
    await queryRows(tx, `SET LOCAL max_parallel_workers_per_gather = 0`);
    // The summaries and the commitments group a month's rows by a few columns into a few thousand
    // groups; the planner multiplies the columns' distinct counts into hundreds of thousands, then
    // sorts the million rows (7.2 s) instead of hashing them (3.4 s). Hashing spills to disk when
    // the groups really are that many (up to 8 × work_mem in memory first).
    await queryRows(tx, `SET LOCAL enable_sort = off`);
    await queryRows(tx, `SET LOCAL hash_mem_multiplier = 8`);
    // One import per org at a time: the replace-by-period step must see earlier imports committed.
    await queryRows(tx, `SELECT pg_advisory_xact_lock(hashtext('commitops:focus-import:' || $1::text))`, [orgId]);
    if (digest) {
      const same = await currentImportOf(tx, orgId, digest);
      if (same) return unchangedResult(fileName, same);
    }
    const [imp] = await queryRows<{ id: string }>(tx, `INSERT INTO billing_imports (org_id, file_name, content_digest) VALUES ($1::uuid, $2, $3) RETURNING id`, [orgId, fileName, digest]);
    const importId = imp!.id;
    const rows = await load(tx, importId);
    const { imported, rejected } = rows;

    // Replace what earlier imports loaded for the same (provider, billing account, month); an
    // import that lost rows so is no longer current (its digest no longer stands for the data).
    const periodList = rows.periods;
    let replaced = 0;
    if (periodList.length) {
      const del = await queryRows<{ n: string }>(
        tx,
        `WITH d AS (
           DELETE FROM billing_line_items li USING json_to_recordset($2::json) AS p(provider text, billing_account_id text, month date)
           WHERE li.org_id = $1::uuid AND li.provider = p.provider AND li.billing_account_id = p.billing_account_id
             AND li.billing_period = p.month AND li.import_id IS DISTINCT FROM $3::uuid
           RETURNING li.import_id),
         per_import AS (SELECT import_id, count(*) AS n FROM d GROUP BY import_id),
         superseded AS (UPDATE billing_imports SET superseded_at = now() WHERE id IN (SELECT import_id FROM per_import) AND superseded_at IS NULL RETURNING 1)
         SELECT COALESCE(sum(n), 0) AS n, (SELECT count(*) FROM superseded) AS imports FROM per_import`,
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
    const closed = rows.closed;
    if (closed.length) {
      await queryRows(
        tx,
        `UPDATE billing_periods bp SET status = 'closed', closed_at = COALESCE(bp.closed_at, $3::timestamptz)
         FROM json_to_recordset($2::json) AS p(provider text, month date)
         WHERE bp.org_id = $1::uuid AND bp.provider = p.provider AND bp.month = p.month AND bp.status = 'open'`,
        [orgId, JSON.stringify(closed), (opts.now ?? new Date()).toISOString()],
      );
    }
    const accountList = rows.accounts;
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
    // Statistics of what was written, before the statements that read it and committed with it: a
    // planner that believes the month is empty sorts a million rows where it would hash them, and
    // later picks nested loops that re-read the month per account (minutes instead of seconds).
    // (The summary tables' statistics are the rebuild's: lib/reports/rowCache.ts, analyzeSummaries.)
    if (imported || replaced) await queryRows(tx, `ANALYZE billing_line_items (${ANALYZED_COLUMNS.join(", ")})`);
    const commitmentsUpserted = rows.commitments.length ? await deriveCommitments(tx, orgId, rows.commitments) : 0;
    // PostgreSQL sums the periods' summaries from the rows just written (exact numeric, one pass per table).
    await rebuildBillingSummaries(tx, orgId, periodList);
    await queryRows(tx, `UPDATE billing_imports SET rows_imported = $2, rows_rejected = $3 WHERE id = $1::uuid`, [importId, imported, rejected]);
    const result: ImportResult = {
      import_id: importId,
      file_name: fileName,
      unchanged: false,
      rows_unchanged: 0,
      parsed_by: rows.parsedBy,
      rows_read: rows.rowsRead,
      rows_imported: imported,
      rows_rejected: rejected,
      rejects: rows.rejects,
      periods: periodList,
      periods_closed: closed as { provider: Provider; month: string }[],
      rows_replaced: replaced,
      accounts_discovered: accountList.length,
      commitments_upserted: commitmentsUpserted,
    };
    await opts.beforeCommit?.(tx, result);
    return result;
  });
}

/** The org's import of this content digest, when every row it wrote is still there (no later import replaced one of its periods). */
async function currentImportOf(tx: Tx, orgId: string, digest: string): Promise<{ id: string; rows_imported: number; rows_rejected: number } | null> {
  const [row] = await queryRows<{ id: string; rows_imported: number; rows_rejected: number }>(
    tx,
    `SELECT id, rows_imported, rows_rejected FROM billing_imports
     WHERE org_id = $1::uuid AND content_digest = $2 AND superseded_at IS NULL ORDER BY created_at DESC LIMIT 1`,
    [orgId, digest],
  );
  return row ?? null;
}

function unchangedResult(fileName: string, same: { id: string; rows_imported: number }): ImportResult {
  return {
    import_id: same.id,
    file_name: fileName,
    unchanged: true,
    rows_unchanged: same.rows_imported,
    parsed_by: null,
    rows_read: 0,
    rows_imported: 0,
    rows_rejected: 0,
    rejects: [],
    periods: [],
    periods_closed: [],
    rows_replaced: 0,
    accounts_discovered: 0,
    commitments_upserted: 0,
  };
}

/**
 * importFocus on a file path (`.csv` or `.csv.gz`). The file's digest (with the options that
 * shape its rows) is taken first: the same content already imported and still current costs one
 * read of the file. On PostgreSQL the bytes then go to the server as they are; a file it cannot
 * take whole is imported row by row instead, in the same transaction.
 */
export async function importFocusFile(db: Db, orgId: string, path: string, opts: ImportOptions = {}): Promise<ImportResult> {
  const o: ImportOptions = { fileName: path.split(/[\\/]/).pop(), ...opts };
  // A pipe or a device is read once, as it comes: no digest, no second reading.
  const stat = statSync(path);
  if (!stat.isFile()) return importFocus(db, orgId, openFocusFile(path), o);
  importBytes.inc(stat.size);
  const digest = await contentDigest(path, o);
  // A second session of the pool stages the file's chunks while the import's own inserts them.
  const releasePipeline = o.rowByRow ? null : claimPipelinedStaging(db);
  const pipelined = releasePipeline !== null;
  // The wall clock, not `o.now`: staging tables are named by the wall clock they were made at.
  if (pipelined) await dropStaleStagingTables(db, new Date()).catch(() => 0);
  const created: string[] = [];
  try {
    return await importInTransaction(db, orgId, o, digest, async (tx, importId) => {
      const header = o.rowByRow || !copyInStreams(tx) ? null : await headerOfFile(path, o.defaults ?? {});
      if (header && stagedImportApplies(header)) {
        try {
          const staging = pipelined ? { pool: db, created, chunkBytes: o.stagingChunkBytes } : {};
          // A savepoint of the driver's own: postgres.js fails the whole transaction on any failed statement outside one.
          const staged = await tx.transaction((sp) => importStaged(sp, orgId, importId, header, o.defaults ?? {}, withProgress(openFocusFile(path), o), staging));
          o.onProgress?.(staged.rowsRead);
          return { parsedBy: "postgresql", rowsRead: staged.rowsRead, imported: staged.rowsRead, rejected: 0, rejects: [], periods: staged.periods, closed: staged.closedPeriods, accounts: staged.accounts, commitments: staged.commitments };
        } catch (e) {
          // A row the JS rules reject or read otherwise, or CSV PostgreSQL reads otherwise: row by row, with each reject's line.
          if (!isDataException(e)) throw e;
        }
      }
      return loadRowByRow(tx, orgId, importId, openFocusFile(path), o);
    });
  } finally {
    releasePipeline?.();
    // The staging tables: once the import's transaction, which read them, is over (a leftover is dropped by a later import).
    await dropStagingTables(db, created).catch(() => {});
  }
}

/** Pipelined imports running in this process, per pool. */
const pipelinedImports = new WeakMap<object, number>();

/**
 * A pipelined import holds its transaction's session and then waits for a second one: with as
 * many of them as the pool has sessions, each would wait for another's forever. At most
 * pool − 1 run at once; the others stage their file whole in their own session. The release,
 * or null when this import must not pipeline.
 */
function claimPipelinedStaging(db: Db): (() => void) | null {
  const running = pipelinedImports.get(db) ?? 0;
  if (running >= poolSessions(db) - 1) return null;
  pipelinedImports.set(db, running + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    pipelinedImports.set(db, (pipelinedImports.get(db) ?? 1) - 1);
  };
}

/** SQLSTATE class 22 (a value PostgreSQL could not take) or a NOT NULL violation: the staged path's signal to go row by row. */
function isDataException(e: unknown): boolean {
  const code = pgErrorCode(e);
  return code !== undefined && (code.startsWith("22") || code === "23502");
}

/** SHA-256 of the options that shape the rows and of the file's bytes as stored. */
async function contentDigest(path: string, o: ImportOptions): Promise<string> {
  const hash = createHash("sha256");
  const defaults = Object.entries(o.defaults ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  hash.update(JSON.stringify({ format: "focus-csv/1", defaults, skipInvalid: !!o.skipInvalid }));
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The file's canonical header, or null when the row path should say what is wrong with it. */
async function headerOfFile(path: string, defaults: Record<string, string>): Promise<string[] | null> {
  for await (const batch of readCsvBatches(openFocusFile(path))) {
    try {
      return headerOf(batch.records[0]!, defaults);
    } catch {
      return null;
    }
  }
  return null;
}

/** The bytes, with onProgress told about every `progressEvery` lines on the way (lines, not records: close enough for a progress line). */
async function* withProgress(bytes: AsyncIterable<Buffer>, o: ImportOptions): AsyncGenerator<Buffer> {
  const every = o.progressEvery ?? 50_000;
  let lines = -1;
  let next = every;
  for await (const chunk of bytes) {
    if (o.onProgress) {
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
      if (lines >= next) {
        o.onProgress(lines);
        next = (Math.floor(lines / every) + 1) * every;
      }
    }
    yield chunk;
  }
}
