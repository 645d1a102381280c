/**
 * GCP billing connection: the FOCUS view (or table) of a BigQuery dataset. Periods come from one
 * aggregate query per listing, a period's rows from one query read page by page, both through
 * the documented REST calls jobs.query and jobs.getQueryResults. Rows are taken raw (the `f`/`v`
 * cells) so NUMERIC and BIGNUMERIC costs stay exact decimal text.
 */
import { createHash } from "node:crypto";
import { stringify as stringifyQuery } from "node:querystring";
import { BigQuery, type Job, type Query } from "@google-cloud/bigquery";
import type { CsvBatch } from "../../billing/csvReader.ts";
import type { GcpConfig, GcpSecrets } from "../kinds.ts";
import { GOOGLE_TOKEN_URL, parseServiceAccountKey, useKeyTokenEndpoint } from "../gcpKey.ts";
import { ConnectionFailure, unreachable, type ExportReader, type ReaderOptions, type RecordTable, type SourcePeriod } from "../source.ts";
import { openEgress, type Egress } from "../../egress.ts";

/** Rows per result page: bounds memory while keeping the number of round trips small. */
const PAGE_ROWS = 10_000;
/** Rows of the first page, which the client deep-copies (costly for a large page) before handing it over. */
const FIRST_PAGE_ROWS = 500;

interface Field {
  name?: string | null;
  type?: string | null;
  mode?: string | null;
  fields?: Field[] | null;
}
interface Cell {
  v?: unknown;
}
interface RawRow {
  f: Cell[];
}
interface ResultPage {
  fields: Field[];
  rows: RawRow[];
}

export function bigQueryFocusReader(config: GcpConfig, secrets: GcpSecrets, opts: ReaderOptions): ExportReader {
  const egresses: Egress[] = [];
  let client: Promise<BigQuery> | undefined;
  const connect = () => (client ??= openClient(config, secrets, opts, egresses));

  return {
    async periods(): Promise<SourcePeriod[]> {
      const table = tableName(config);
      const bq = await connect().catch((err) => {
        throw failure(err);
      });
      // Aggregates over a few columns keep the listing's scan (and its cost) small; they change
      // whenever GCP restates a month (late usage, credits, corrections). Grouping by the exact
      // BillingPeriodStart lets tables() select a period by it: GCP months start at midnight
      // Pacific time, not on a UTC month boundary.
      const sql = [
        `SELECT FORMAT_TIMESTAMP('%Y-%m', BillingPeriodStart) AS month, BillingPeriodStart AS period_start,`,
        `COUNT(*) AS row_count, SUM(CAST(BilledCost AS BIGNUMERIC)) AS billed_cost,`,
        `SUM(CAST(EffectiveCost AS BIGNUMERIC)) AS effective_cost, SUM(CAST(ListCost AS BIGNUMERIC)) AS list_cost,`,
        `MAX(ChargePeriodEnd) AS last_charge_end`,
        `FROM ${table} GROUP BY BillingPeriodStart ORDER BY BillingPeriodStart`,
      ].join(" ");
      const months = new Map<string, { starts: string[]; digest: unknown[][] }>();
      for await (const page of queryPages(bq, { query: sql })) {
        const at = (name: string) => page.fields.findIndex((f) => f.name === name);
        const [month, start] = [at("month"), at("period_start")];
        for (const row of page.rows) {
          const values = row.f.map((c) => c.v ?? null);
          const m = values[month];
          // Rows without a billing period cannot be imported into one.
          if (typeof m !== "string" || typeof values[start] !== "string") continue;
          const entry = months.get(m) ?? { starts: [], digest: [] };
          entry.starts.push(timestampText(values[start] as string));
          entry.digest.push(values);
          months.set(m, entry);
        }
      }
      return [...months.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([month, { starts, digest }]) => ({
          month,
          fingerprint: createHash("sha256").update(JSON.stringify(digest)).digest("hex"),
          // GCP periods close through the FOCUS rows' own status; the import handles that.
          bytes: 0,
          files: starts.map((start) => `SELECT * FROM ${table} WHERE BillingPeriodStart = TIMESTAMP '${start}'`),
          async *tables() {
            for (const start of starts) yield periodTable(bq, table, start);
          },
        }));
    },
    close() {
      for (const e of egresses) e.close();
    },
  };
}

/** The rows of one billing period (by its exact BillingPeriodStart), header first. */
function periodTable(bq: BigQuery, table: string, start: string): RecordTable {
  return {
    async *[Symbol.asyncIterator]() {
      const query: Query = {
        query: `SELECT * FROM ${table} WHERE BillingPeriodStart = @start`,
        params: { start: BigQuery.timestamp(start) },
      };
      let line = 1;
      let convert: ((v: unknown) => string)[] | null = null;
      for await (const page of queryPages(bq, query)) {
        const records: string[][] = [];
        if (!convert) {
          convert = page.fields.map(cellText);
          records.push(page.fields.map((f) => f.name ?? ""));
        }
        for (const row of page.rows) records.push(row.f.map((c, i) => convert![i]!(c.v)));
        if (!records.length) continue;
        const lines = records.map(() => line++);
        yield { records, lines, plain: records.every((r) => r.every((v) => !SPECIAL.test(v))) } satisfies CsvBatch;
      }
    },
  };
}

const SPECIAL = /[\\\t\r\n]/;

/**
 * The complete result pages of a query: jobs.query, then jobs.getQueryResults with each page
 * token (or again while the job runs). Raw rows, one page in memory at a time.
 */
async function* queryPages(bq: BigQuery, query: Query): AsyncGenerator<ResultPage> {
  type Next = Query | null | undefined;
  type Response = { schema?: { fields?: Field[] | null } | null; rows?: RawRow[] | null; jobComplete?: boolean | null };
  let rows: unknown[];
  let next: Next;
  let response: Response | undefined;
  try {
    // With autoPaginate off the client answers [rows, nextQuery, response] (its typings say otherwise).
    const first = await bq.query({ ...query, skipParsing: true }, { autoPaginate: false, maxResults: FIRST_PAGE_ROWS });
    [rows, next, response] = first as unknown as [unknown[], Next, Response];
  } catch (err) {
    throw failure(err);
  }
  // query() hands over the job in its next query; later next queries are the options given.
  const job: Job | undefined = next?.job;
  for (;;) {
    if (response?.jobComplete !== false) yield { fields: response?.schema?.fields ?? [], rows: rows as RawRow[] };
    // No next query: the last page. One without a page token: the job still runs, poll it.
    if (!next || !job) return;
    const options = { maxResults: PAGE_ROWS, skipParsing: true, autoPaginate: false, ...(next?.pageToken ? { pageToken: next.pageToken } : {}) };
    try {
      [rows, next, response] = (await job.getQueryResults(options)) as unknown as [unknown[], Next, Response];
    } catch (err) {
      throw failure(err);
    }
  }
}

async function openClient(config: GcpConfig, secrets: GcpSecrets, opts: ReaderOptions, egresses: Egress[]): Promise<BigQuery> {
  const key = secrets.service_account_key ? parseServiceAccountKey(secrets.service_account_key) : undefined;
  // An endpoint or token endpoint the org named is resolved and checked once, and called only at
  // those addresses (lib/egress.ts); Google's own endpoints are left to the client.
  const egressTo = async (url: string | null | undefined, what: string) => {
    if (!url) return undefined;
    const egress = await openEgress([url], opts.allowPrivateEndpoints).catch(() => {
      throw unreachable(what);
    });
    egresses.push(egress);
    return egress;
  };
  const api = await egressTo(config.endpoint_url, "BigQuery");
  const token = await egressTo(key?.token_uri === GOOGLE_TOKEN_URL ? undefined : key?.token_uri, "The Google token endpoint");
  const bq = new BigQuery({
    projectId: config.project_id,
    location: config.location ?? undefined,
    apiEndpoint: config.endpoint_url ?? undefined,
    // Without a key: application default credentials.
    credentials: key,
  });
  await useKeyTokenEndpoint(bq.authClient.getClient(), key, token?.fetch);
  if (api) sendThrough(bq, api);
  return bq;
}

type ApiCallback = (err: Error | null, body?: unknown, response?: unknown) => void;
interface ApiRequest {
  method?: string;
  uri: string;
  qs?: Record<string, unknown>;
  json?: unknown;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * The client's API requests, once authenticated, sent through `egress` instead of its own HTTP
 * module (whose fetch resolves names itself): the same request and the same results — a parsed
 * JSON body, an error with the API's code, errors and message — without its retries (a failed
 * sync is retried later anyway).
 */
function sendThrough(bq: BigQuery, egress: Egress): void {
  const authenticate = bq.makeAuthenticatedRequest;
  const send = (reqOpts: ApiRequest, callback: ApiCallback) => {
    authenticate(reqOpts as never, {
      onAuthenticated(err: Error | null, authenticated?: unknown) {
        if (err) return callback(err);
        apiCall(egress, authenticated as ApiRequest).then(([e, body, response]) => callback(e, body, response), (e: Error) => callback(e));
      },
    });
  };
  bq.makeAuthenticatedRequest = ((reqOpts: ApiRequest, callback: unknown) => {
    if (typeof callback !== "function") throw new Error("The BigQuery reader makes no streaming requests.");
    send(reqOpts, callback as ApiCallback);
  }) as unknown as typeof bq.makeAuthenticatedRequest;
}

async function apiCall(egress: Egress, req: ApiRequest): Promise<[Error | null, unknown, unknown]> {
  const headers = new Headers(req.headers);
  let body: string | undefined;
  if (req.json !== undefined && typeof req.json === "object") {
    headers.set("content-type", "application/json");
    body = JSON.stringify(req.json);
  } else if (req.body !== undefined) body = typeof req.body === "string" ? req.body : JSON.stringify(req.body);
  const uri = req.qs && typeof req.qs === "object" ? `${req.uri}?${stringifyQuery(req.qs as never)}` : req.uri;
  const res = await egress.fetch(uri, { method: req.method ?? "GET", headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  const response = { statusCode: res.status, statusMessage: res.statusText, headers: Object.fromEntries(res.headers), body: parsed, request: { href: uri } };
  const apiError = parsed && typeof parsed === "object" ? (parsed as { error?: unknown }).error : undefined;
  if (apiError || res.status < 200 || res.status > 299) {
    const e = (apiError && typeof apiError === "object" ? apiError : {}) as { code?: number; message?: string; errors?: unknown[] };
    return [Object.assign(new Error(e.message ?? (res.statusText || `HTTP ${res.status}`)), { code: e.code ?? res.status, errors: e.errors ?? [], response }), parsed, response];
  }
  return [null, parsed, response];
}


const PROJECT_ID = /^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const DATASET_ID = /^[A-Za-z0-9_]{1,1024}$/;
const TABLE_ID = /^[\p{L}\p{M}\p{N}\p{Pc}\p{Pd}\p{Zs}]+$/u;

/**
 * `project.dataset.table` quoted for GoogleSQL. Each part is checked against BigQuery's naming
 * rules, none of which admit a backtick or a backslash, so the quoting cannot be escaped.
 */
function tableName(config: GcpConfig): string {
  const bad = (what: string, value: string) =>
    new ConnectionFailure("not_found", `"${value}" is not a valid BigQuery ${what}; check the connection's ${what}.`);
  if (!PROJECT_ID.test(config.project_id)) throw bad("project id", config.project_id);
  if (!DATASET_ID.test(config.dataset)) throw bad("dataset", config.dataset);
  if (!TABLE_ID.test(config.table) || Buffer.byteLength(config.table) > 1024) throw bad("table", config.table);
  return `\`${config.project_id}.${config.dataset}.${config.table}\``;
}

/** How a raw cell of a field becomes CSV text: NULL → "", TIMESTAMP → ISO 8601 UTC, RECORD / REPEATED → JSON. */
function cellText(field: Field): (v: unknown) => string {
  if (field.mode === "REPEATED" || isRecord(field)) {
    return (v) => {
      const value = jsonValue(field, v);
      return value === null || (Array.isArray(value) && !value.length) ? "" : JSON.stringify(value);
    };
  }
  if (field.type === "TIMESTAMP") return (v) => (typeof v === "string" ? timestampText(v) : "");
  return (v) => (typeof v === "string" ? v : "");
}

const isRecord = (field: Field) => field.type === "RECORD" || field.type === "STRUCT";

/**
 * A raw cell as a JSON value. Repeated key/value records (FOCUS Tags) become one object
 * {key: value}; an empty array reads as NULL, as BigQuery does not tell them apart.
 */
function jsonValue(field: Field, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (field.mode === "REPEATED") {
    const item = { ...field, mode: "NULLABLE" };
    const cells = Array.isArray(v) ? (v as Cell[]) : [];
    const names = (field.fields ?? []).map((f) => f.name?.toLowerCase());
    const [key, value] = [names.indexOf("key"), names.indexOf("value")];
    if (isRecord(field) && key >= 0 && value >= 0) {
      if (!cells.length) return null;
      const tags: Record<string, unknown> = {};
      for (const cell of cells) {
        const f = (cell.v as RawRow | null)?.f;
        const name = f?.[key]?.v;
        if (typeof name === "string") tags[name] = jsonValue(field.fields![value]!, f![value]?.v);
      }
      return tags;
    }
    return cells.map((c) => jsonValue(item, c.v));
  }
  if (isRecord(field)) {
    const cells = (v as RawRow).f ?? [];
    return Object.fromEntries((field.fields ?? []).map((f, i) => [f.name ?? String(i), jsonValue(f, cells[i]?.v)]));
  }
  if (typeof v !== "string") return v;
  if (field.type === "BOOLEAN" || field.type === "BOOL") return v === "true";
  if (field.type === "TIMESTAMP") return timestampText(v);
  if (field.type === "JSON") {
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }
  return v;
}

/**
 * A REST TIMESTAMP as ISO 8601 UTC: int64 microseconds (the client asks for
 * formatOptions.useInt64Timestamp) or, from older servers, float seconds.
 */
function timestampText(v: string): string {
  let micros: bigint;
  if (/^-?\d+$/.test(v)) micros = BigInt(v);
  else {
    const seconds = Number(v);
    if (!Number.isFinite(seconds)) return v;
    micros = BigInt(Math.round(seconds * 1e6));
  }
  let ms = micros / 1000n;
  let us = micros % 1000n;
  if (us < 0n) {
    us += 1000n;
    ms -= 1n;
  }
  const iso = new Date(Number(ms)).toISOString();
  if (us !== 0n) return `${iso.slice(0, -1)}${us.toString().padStart(3, "0")}Z`;
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso;
}

const NETWORK_CODES = new Set([
  "ENONPUBLIC", "ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE",
  "ConnectionRefused", "ConnectionClosed", "FailedToOpenSocket",
]);

/** A client, token or API error as a ConnectionFailure; the provider's own message, never key material. */
function failure(err: unknown): Error {
  if (err instanceof ConnectionFailure) return err;
  const e = (err ?? {}) as {
    code?: unknown;
    message?: unknown;
    errors?: { reason?: string; message?: string }[];
    response?: { status?: number; data?: unknown };
  };
  // The token endpoint refused the key's assertion (OAuth error body: invalid_grant, invalid_client, ...).
  const oauth = e.response?.data as { error?: unknown; error_description?: unknown } | undefined;
  if (oauth && typeof oauth === "object" && typeof oauth.error === "string") {
    const detail = typeof oauth.error_description === "string" ? `: ${oauth.error_description.slice(0, 200)}` : "";
    return new ConnectionFailure("credentials", `Google refused the service-account key (${oauth.error}${detail}).`);
  }
  const network = networkCode(err);
  if (network) {
    // Token requests go through gaxios (errors carry its config); API requests do not.
    // One answer for a refused, closed or filtered port and a refused address (no port scanning).
    return unreachable((err as { config?: unknown }).config ? "The Google token endpoint" : "BigQuery");
  }
  const message = String(e.message ?? "");
  if (/Could not load the default credentials/i.test(message)) {
    return new ConnectionFailure("credentials", "No service-account key was given and no application default credentials were found.");
  }
  const status = typeof e.code === "number" ? e.code : e.response?.status;
  const reason = e.errors?.[0]?.reason;
  const detail = (e.errors?.[0]?.message ?? message).slice(0, 300);
  if (status === 401) return new ConnectionFailure("credentials", `BigQuery did not accept the credentials: ${detail}`);
  if (reason === "accessDenied" || status === 403) {
    return new ConnectionFailure("permission", `The service account may not query the FOCUS table (it needs BigQuery Job User on the project and Data Viewer on the dataset): ${detail}`);
  }
  if (reason === "notFound" || status === 404) return new ConnectionFailure("not_found", `BigQuery did not find the FOCUS table: ${detail}`);
  // The connection's queries are fixed: one BigQuery cannot run names a view without FOCUS columns.
  if (reason === "invalidQuery") return new ConnectionFailure("not_focus", `The table is not a FOCUS view (${detail}).`);
  if (typeof status === "number" && status >= 500) return new ConnectionFailure("unreachable", `BigQuery answered ${status}: ${detail}`);
  return err instanceof Error ? err : new Error(message);
}

/** The system error code of a connection failure, looked up through wrapped causes. */
function networkCode(err: unknown): string | null {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && NETWORK_CODES.has(e.code)) return e.code;
  }
  return null;
}
