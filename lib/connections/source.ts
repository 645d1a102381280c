/**
 * What a billing connection reads from a provider's export, whatever the provider: its billing
 * periods, each with a fingerprint that changes whenever the provider rewrites the period, and
 * the period's rows as tables of records (CSV, gzip CSV, Parquet or query results) that go
 * through the same FOCUS import as a file given to the CLI.
 */
import type { CsvBatch } from "../billing/csvReader.ts";

export const CONNECTION_KINDS = ["aws_data_exports", "azure_cost_exports", "gcp_bigquery_focus"] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

/** Why a connection cannot be read; shown to the user with the message. */
export const FAILURE_CAUSES = ["credentials", "not_found", "permission", "no_export", "not_focus", "format", "unreachable"] as const;
export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** A provider said no, or its export is not what an import can read. The message never holds a secret. */
export class ConnectionFailure extends Error {
  constructor(readonly cause: FailureCause, message: string) {
    super(message);
  }
}

/**
 * A host that cannot be reached, in the same words whatever the reason (refused, closed or
 * filtered port, no such name, an address the server may not call), so a connection's test
 * cannot tell an open port from a closed one.
 */
export function unreachable(what: string): ConnectionFailure {
  return new ConnectionFailure("unreachable", `${what} could not be reached (no connection could be made to an address it resolves to). Check the URL and that the service admits connections from this server.`);
}

/** How a reader may connect. */
export interface ReaderOptions {
  /** CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: loopback, private and link-local addresses may be called too. */
  allowPrivateEndpoints: boolean;
}

/**
 * The records of one file or query, in batches: the first record of the first batch is the
 * header (column names), every later record a row. Line numbers are the row's position in its
 * file (header = 1) for reject reports.
 */
export type RecordTable = AsyncIterable<CsvBatch>;

/** A billing period (one month) as the source holds it now. */
export interface SourcePeriod {
  /** `YYYY-MM`. */
  month: string;
  /** Changes whenever the period's data changes (manifest, ETags, sizes, last-modified). */
  fingerprint: string;
  /** Bytes the period's files hold (0 when unknown, e.g. a query). */
  bytes: number;
  /** Files (or queries) of the period, for run records and messages. */
  files: string[];
  /** The period's rows, one table per file; read once, in order, lazily. */
  tables(): AsyncIterable<RecordTable>;
}

export interface ExportReader {
  /** The billing periods present in the source, oldest first. Throws ConnectionFailure. */
  periods(): Promise<SourcePeriod[]>;
  /** The ConnectionFailure an SDK error stands for (errors while reading a period's tables), else the error. */
  explain?(e: unknown): unknown;
  /** Releases clients (sockets) the reader holds. */
  close?(): void | Promise<void>;
}
