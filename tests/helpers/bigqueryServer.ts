/**
 * A loopback stand-in for BigQuery that speaks its v2 REST wire format for the two calls the
 * GCP billing connection makes — jobs.query (POST projects/{p}/queries) and jobs.getQueryResults
 * (GET projects/{p}/queries/{jobId}) — plus Google's OAuth2 token endpoint for service-account
 * JWT bearer grants. It is not a SQL engine: it recognises the reader's two query shapes (the
 * per-billing-period aggregate and the rows of one billing period) over its one in-memory table
 * and answers anything else with 400 invalidQuery, as BigQuery answers SQL it cannot run.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { googleServiceAccount } from "./googleServiceAccount.ts";
import { readBody as body, sendJson as send } from "./httpJson.ts";

export interface BigQueryField {
  name: string;
  /** Legacy REST type names: STRING, INTEGER, FLOAT, NUMERIC, BIGNUMERIC, BOOLEAN, TIMESTAMP, DATE, JSON, RECORD, ... */
  type: string;
  mode?: "NULLABLE" | "REQUIRED" | "REPEATED";
  fields?: BigQueryField[];
}

/**
 * A row as plain values: strings for NUMERIC/BIGNUMERIC (exact), ISO strings or Dates for
 * TIMESTAMP, arrays for REPEATED, objects for RECORD, null for NULL.
 */
export type BigQueryRow = Record<string, unknown>;

export interface BigQueryServerOptions {
  projectId: string;
  dataset: string;
  table: string;
  rows: BigQueryRow[] | (() => BigQueryRow[]);
  schema: BigQueryField[];
  /** Location reported on jobs and in not-found messages (default US). */
  location?: string;
  /** Most rows one response carries, whatever maxResults asks (BigQuery caps pages by size too). */
  pageSize?: number;
  /** Answer 404 notFound for the dataset or the table although the names match. */
  missing?: "dataset" | "table";
  /** Answer 403 accessDenied for queries over the table. */
  denied?: boolean;
  /** How many polls a query job stays running (jobComplete: false) before its results are ready. */
  pollsBeforeComplete?: number;
}

export interface BigQueryServer {
  /** API root for the client's apiEndpoint (the client appends /bigquery/v2). */
  endpoint: string;
  /** Service-account key file (JSON text) whose token_uri is this server's token endpoint. */
  serviceAccountKey: string;
  /** "METHOD /path" of every API request, for asserting which REST calls a client made. */
  requests: string[];
  setRows(rows: BigQueryRow[] | (() => BigQueryRow[])): void;
  stop(): Promise<void>;
}

/** The audience google-auth-library signs service-account assertions for, whatever the key's token_uri. */
const API_PREFIX = "/bigquery/v2/projects/";

interface Job {
  id: string;
  fields: BigQueryField[];
  rows: BigQueryRow[];
  polls: number;
}

class BigQueryError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

const STATUS: Record<number, string> = { 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND" };

export async function startBigQueryServer(opts: BigQueryServerOptions): Promise<BigQueryServer> {
  const location = opts.location ?? "US";
  const account = await googleServiceAccount(`commitops-billing@${opts.projectId}.iam.gserviceaccount.com`);
  const tokens = account.tokens;
  const jobs = new Map<string, Job>();
  const requests: string[] = [];
  let rows = opts.rows;
  let endpoint = "";

  async function token(req: IncomingMessage, res: ServerResponse) {
    const form = new URLSearchParams(await body(req));
    const answer = await account.grant(form, endpoint);
    send(res, answer.status, answer.body);
  }

  /** Resolves `project.dataset.table` the way BigQuery reports a missing or forbidden one. */
  function resolveTable(ref: string) {
    const parts = ref.split(".");
    if (parts.length !== 3) throw new BigQueryError(400, "invalidQuery", `Table "${ref}" must be qualified with a dataset (e.g. dataset.table).`);
    const [project, dataset, table] = parts as [string, string, string];
    if (project !== opts.projectId) throw new BigQueryError(404, "notFound", `Not found: Project ${project}`);
    if (dataset !== opts.dataset || opts.missing === "dataset") {
      throw new BigQueryError(404, "notFound", `Not found: Dataset ${project}:${dataset} was not found in location ${location}`);
    }
    if (table !== opts.table || opts.missing === "table") {
      throw new BigQueryError(404, "notFound", `Not found: Table ${project}:${dataset}.${table} was not found in location ${location}`);
    }
    if (opts.denied) {
      throw new BigQueryError(403, "accessDenied", `Access Denied: Table ${project}:${dataset}.${table}: User does not have permission to query table ${project}:${dataset}.${table}, or perhaps it does not exist.`);
    }
  }

  function column(name: string, sql: string): BigQueryField {
    const field = opts.schema.find((f) => f.name === name);
    if (!field) throw new BigQueryError(400, "invalidQuery", `Unrecognized name: ${name} at [1:${sql.indexOf(name) + 1}]`);
    return field;
  }

  /** Runs one of the reader's query shapes to a result (schema and rows), or throws as BigQuery would. */
  function run(sql: string, params: QueryParameter[]): { fields: BigQueryField[]; rows: BigQueryRow[] } {
    const text = sql.replace(/\s+/g, " ").trim();
    const ref = /\bFROM `([^`]+)`/i.exec(text)?.[1];
    if (!ref) throw new BigQueryError(400, "invalidQuery", "Syntax error: Expected a table name after FROM at [1:1]");
    resolveTable(ref);
    const table = typeof rows === "function" ? rows() : rows;

    const select = /^SELECT \* FROM `[^`]+` WHERE (\w+) = @(\w+)$/i.exec(text);
    if (select) {
      const [, name, param] = select as unknown as [string, string, string];
      const field = column(name, text);
      const value = params.find((p) => p.name === param);
      if (!value) throw new BigQueryError(400, "invalidQuery", `Query parameter '${param}' not found at [1:${text.indexOf("@") + 1}]`);
      if (field.type !== "TIMESTAMP" || value.parameterType?.type !== "TIMESTAMP") {
        throw new BigQueryError(400, "invalidQuery", `No matching signature for operator = for argument types: ${field.type}, ${value.parameterType?.type}`);
      }
      const at = timestampMicros(value.parameterValue?.value);
      return { fields: opts.schema, rows: table.filter((r) => timestampMicros(r[name]) === at) };
    }

    const grouped = /^SELECT (.+) FROM `[^`]+` GROUP BY (\w+) ORDER BY (\w+)$/i.exec(text);
    if (grouped && grouped[2] === grouped[3]) return aggregate(text, grouped[1]!, grouped[2]!, table);
    throw new BigQueryError(400, "invalidQuery", "Syntax error: this test server runs only the billing connection's queries at [1:1]");
  }

  /** SELECT of FORMAT_TIMESTAMP('%Y-%m', k), k, COUNT(*), SUM(CAST(c AS BIGNUMERIC)), MAX(c) ... GROUP BY k ORDER BY k. */
  function aggregate(sql: string, list: string, key: string, table: BigQueryRow[]) {
    const keyField = column(key, sql);
    type Item = { field: BigQueryField; value: (group: BigQueryRow[]) => unknown };
    const items: Item[] = list.split(/,\s*(?![^()]*\))/).map((item): Item => {
      let m: RegExpExecArray | null;
      if ((m = /^FORMAT_TIMESTAMP\('%Y-%m', (\w+)\) AS (\w+)$/i.exec(item))) {
        const [, col, as] = m as unknown as [string, string, string];
        if (col !== key) column(col, sql);
        return { field: { name: as, type: "STRING" }, value: (g) => isoMicros(timestampMicros(g[0]![col])).slice(0, 7) };
      }
      if ((m = /^(\w+) AS (\w+)$/i.exec(item))) {
        const [, col, as] = m as unknown as [string, string, string];
        if (col !== key) throw new BigQueryError(400, "invalidQuery", `SELECT list expression references column ${col} which is neither grouped nor aggregated at [1:8]`);
        return { field: { name: as, type: keyField.type }, value: (g) => g[0]![col] };
      }
      if ((m = /^COUNT\(\*\) AS (\w+)$/i.exec(item))) {
        return { field: { name: m[1]!, type: "INTEGER" }, value: (g) => String(g.length) };
      }
      if ((m = /^SUM\(CAST\((\w+) AS BIGNUMERIC\)\) AS (\w+)$/i.exec(item))) {
        const [, col, as] = m as unknown as [string, string, string];
        column(col, sql);
        return { field: { name: as, type: "BIGNUMERIC" }, value: (g) => decimalSum(g.map((r) => r[col])) };
      }
      if ((m = /^MAX\((\w+)\) AS (\w+)$/i.exec(item))) {
        const [, col, as] = m as unknown as [string, string, string];
        const field = column(col, sql);
        if (field.type !== "TIMESTAMP") throw new BigQueryError(400, "invalidQuery", `This test server aggregates MAX over TIMESTAMP columns only, not ${col}`);
        return {
          field: { name: as, type: "TIMESTAMP" },
          value: (g) => g.map((r) => r[col]).reduce<unknown>((a, v) => (v == null || (a != null && timestampMicros(a) >= timestampMicros(v)) ? a : v), null),
        };
      }
      throw new BigQueryError(400, "invalidQuery", `Syntax error: unsupported expression ${item.slice(0, 40)} at [1:8]`);
    });
    if (keyField.type !== "TIMESTAMP") throw new BigQueryError(400, "invalidQuery", `No matching signature for function FORMAT_TIMESTAMP for argument types: STRING, ${keyField.type}`);
    const groups = new Map<bigint, BigQueryRow[]>();
    for (const r of table) {
      if (r[key] == null) continue;
      const k = timestampMicros(r[key]);
      const group = groups.get(k);
      if (group) group.push(r);
      else groups.set(k, [r]);
    }
    const ordered = [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g);
    return {
      fields: items.map((i) => i.field),
      rows: ordered.map((g) => Object.fromEntries(items.map((i) => [i.field.name, i.value(g)]))),
    };
  }

  /** A response page of a job: at most maxResults (and pageSize) rows from the page token's offset. */
  function page(job: Job, kind: string, maxResults: unknown, pageToken: unknown, int64Timestamps: boolean) {
    const reference = { projectId: opts.projectId, jobId: job.id, location };
    if (job.polls > 0) {
      job.polls--;
      return { kind, jobReference: reference, jobComplete: false };
    }
    let offset = 0;
    if (typeof pageToken === "string" && pageToken) {
      const [id, at] = Buffer.from(pageToken, "base64url").toString().split(":");
      if (id !== job.id || !/^\d+$/.test(at ?? "")) throw new BigQueryError(400, "invalid", "Invalid page token.");
      offset = Number(at);
    }
    let size = Number(maxResults) > 0 ? Number(maxResults) : 100_000;
    if (opts.pageSize) size = Math.min(size, opts.pageSize);
    const slice = job.rows.slice(offset, offset + size);
    const end = offset + slice.length;
    return {
      kind,
      jobReference: reference,
      schema: { fields: job.fields },
      totalRows: String(job.rows.length),
      ...(slice.length ? { rows: slice.map((r) => encodeRow(job.fields, r, int64Timestamps)) } : {}),
      ...(end < job.rows.length ? { pageToken: Buffer.from(`${job.id}:${end}`).toString("base64url") } : {}),
      totalBytesProcessed: "0",
      jobComplete: true,
      cacheHit: false,
    };
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL) {
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ")) {
      throw new BigQueryError(401, "required", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.");
    }
    if (!tokens.has(auth.slice(7))) {
      throw new BigQueryError(401, "authError", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.");
    }
    const [project, collection, jobId, ...rest] = url.pathname.slice(API_PREFIX.length).split("/").map(decodeURIComponent);
    if (project !== opts.projectId) {
      throw new BigQueryError(403, "accessDenied", `Access Denied: Project ${project}: User does not have bigquery.jobs.create permission in project ${project}.`);
    }
    if (collection !== "queries" || rest.length) throw new BigQueryError(404, "notFound", `Not found: ${req.method} ${url.pathname}`);

    if (req.method === "POST" && jobId === undefined) {
      const request = JSON.parse((await body(req)) || "{}") as QueryRequest;
      if (request.useLegacySql !== false) throw new BigQueryError(400, "invalidQuery", "The billing connection must send standard SQL (useLegacySql: false).");
      const result = run(request.query ?? "", request.queryParameters ?? []);
      const job: Job = { id: `job_${randomUUID().replace(/-/g, "")}`, ...result, polls: opts.pollsBeforeComplete ?? 0 };
      jobs.set(job.id, job);
      return send(res, 200, page(job, "bigquery#queryResponse", request.maxResults, undefined, request.formatOptions?.useInt64Timestamp === true));
    }
    if (req.method === "GET" && jobId) {
      const job = jobs.get(jobId);
      if (!job) throw new BigQueryError(404, "notFound", `Not found: Job ${project}:${location}.${jobId}`);
      const q = url.searchParams;
      const int64 = q.get("formatOptions.useInt64Timestamp") === "true";
      return send(res, 200, page(job, "bigquery#getQueryResultsResponse", q.get("maxResults"), q.get("pageToken"), int64));
    }
    throw new BigQueryError(404, "notFound", `Not found: ${req.method} ${url.pathname}`);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const handle = async () => {
      if (url.pathname === "/token" && req.method === "POST") return token(req, res);
      if (!url.pathname.startsWith(API_PREFIX)) throw new BigQueryError(404, "notFound", `Not found: ${url.pathname}`);
      requests.push(`${req.method} ${url.pathname}`);
      return api(req, res, url);
    };
    handle().catch((err) => {
      if (!(err instanceof BigQueryError)) err = new BigQueryError(500, "internalError", String(err));
      const { status, reason, message } = err as BigQueryError;
      send(res, status, { error: { code: status, message, errors: [{ message, domain: "global", reason }], status: STATUS[status] ?? "INTERNAL" } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const serviceAccountKey = account.keyFile(opts.projectId, endpoint);

  return {
    endpoint,
    serviceAccountKey,
    requests,
    setRows(next) {
      rows = next;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface QueryParameter {
  name?: string;
  parameterType?: { type?: string };
  parameterValue?: { value?: string };
}
interface QueryRequest {
  query?: string;
  useLegacySql?: boolean;
  maxResults?: number;
  queryParameters?: QueryParameter[];
  formatOptions?: { useInt64Timestamp?: boolean };
}


/** Rows in the REST shape: {f: [{v}]}, scalars as strings, TIMESTAMP as int64 micros or float seconds. */
function encodeRow(fields: BigQueryField[], row: BigQueryRow, int64Timestamps: boolean): { f: { v: unknown }[] } {
  return { f: fields.map((f) => ({ v: encodeValue(f, row[f.name], int64Timestamps) })) };
}

function encodeValue(field: BigQueryField, value: unknown, int64Timestamps: boolean): unknown {
  if (field.mode === "REPEATED") {
    const items = Array.isArray(value) ? value : [];
    return items.map((item) => ({ v: encodeValue({ ...field, mode: "NULLABLE" }, item, int64Timestamps) }));
  }
  if (value === null || value === undefined) return null;
  if (field.type === "RECORD" || field.type === "STRUCT") return encodeRow(field.fields ?? [], value as BigQueryRow, int64Timestamps);
  if (field.type === "TIMESTAMP") {
    const micros = timestampMicros(value);
    return int64Timestamps ? String(micros) : (Number(micros) / 1e6).toExponential().replace("e+", "E");
  }
  if (field.type === "JSON" && typeof value !== "string") return JSON.stringify(value);
  return String(value);
}

/** Microseconds since the epoch of an ISO / `YYYY-MM-DD HH:MM:SS[.ffffff]` text or a Date. */
function timestampMicros(value: unknown): bigint {
  if (value instanceof Date) return BigInt(value.getTime()) * 1000n;
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})?$/.exec(String(value ?? ""));
  if (!m) throw new BigQueryError(400, "invalidQuery", `Invalid timestamp: '${String(value)}'`);
  const ms = Date.parse(`${m[1]}T${m[2]}${m[4] ?? "Z"}`);
  return BigInt(ms) * 1000n + BigInt((m[3] ?? "").padEnd(6, "0"));
}

function isoMicros(micros: bigint): string {
  return new Date(Number(micros / 1000n)).toISOString();
}

/** Exact sum of decimal texts (BIGNUMERIC arithmetic), in BigQuery's canonical form (no trailing zeros). */
function decimalSum(values: unknown[]): string | null {
  const present = values.filter((v) => v !== null && v !== undefined).map(String);
  if (!present.length) return null;
  const scale = Math.max(...present.map((v) => (v.split(".")[1] ?? "").length));
  let total = 0n;
  for (const v of present) {
    const [whole, frac = ""] = v.replace(/^[+-]/, "").split(".");
    const units = BigInt(whole || "0") * 10n ** BigInt(scale) + BigInt(frac.padEnd(scale, "0") || "0");
    total += v.startsWith("-") ? -units : units;
  }
  const sign = total < 0n ? "-" : "";
  const digits = (total < 0n ? -total : total).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, "");
  return sign + whole + (frac ? `.${frac}` : "");
}
