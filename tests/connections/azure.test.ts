/**
 * The Azure Cost Management exports reader against Azurite: periods found from the exports'
 * folder layout and manifests, the latest complete run read, fingerprints that move only when
 * the data does, and failures told apart by cause.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { AccountSASPermissions, AccountSASResourceTypes, BlobClient, BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from "@azure/storage-blob";
import type { AzureConfig, AzureSecrets } from "../../lib/connections/kinds.ts";
import { accountName, azureExportReader, azureFailure } from "../../lib/connections/readers/azure.ts";
import { asyncBufferFromBytes, parquetTable } from "../../lib/connections/parquet.ts";
import { ConnectionFailure, type ExportReader, type SourcePeriod } from "../../lib/connections/source.ts";
import { csvTable, joinTables } from "../../lib/connections/tables.ts";
import { startAzurite, writeAzureFocusExport, type Azurite } from "../helpers/azurite.ts";
import { writeFocusParquet } from "../helpers/parquetFixture.ts";
import { freePort } from "../helpers/process.ts";

const SAMPLE = join(import.meta.dir, "../../data/focus/focus_sample_1000.csv");
const CONTAINER = "cost-exports";
const enc = new TextEncoder();

let azurite: Azurite;
let container: ContainerClient;
let sample: string;
/** The sample's header and rows as the importer's CSV reader gives them. */
let sampleRecords: string[][];

beforeAll(async () => {
  azurite = await startAzurite();
  const service = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey));
  container = service.getContainerClient(CONTAINER);
  await container.create();
  sample = await readFile(SAMPLE, "utf8");
  sampleRecords = await recordsOf(csvTable(chunks(enc.encode(sample))));
});

afterAll(async () => {
  await azurite?.stop();
});

function reader(config: Partial<AzureConfig> = {}, secrets: AzureSecrets = { account_key: azurite.accountKey }): ExportReader {
  // Azurite listens on loopback: allowed as with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS.
  return azureExportReader({ storage_account_url: azurite.url, container: CONTAINER, directory: "", ...config }, secrets, { allowPrivateEndpoints: true });
}

async function* chunks(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* parts;
}

async function recordsOf(batches: AsyncIterable<{ records: string[][] }>): Promise<string[][]> {
  const out: string[][] = [];
  for await (const b of batches) out.push(...b.records);
  return out;
}

const read = (p: SourcePeriod) => recordsOf(joinTables(p.tables()));

/** The sample's header with rows [from, to) as CSV text (the sample has one record per line). */
function sampleRows(from: number, to: number): string {
  const lines = sample.trimEnd().split("\n");
  return [lines[0], ...lines.slice(1 + from, 1 + to)].join("\n") + "\n";
}

async function failureOf(p: Promise<unknown>): Promise<ConnectionFailure> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectionFailure);
  return e as ConnectionFailure;
}

describe("Azure cost exports reader", () => {
  test("the sample has one record per line (the tests split it by lines)", () => {
    expect(sampleRecords.length).toBe(1001);
    expect(sample.trimEnd().split("\n").length).toBe(1001);
  });

  test("finds the billing periods, oldest first, with month, fingerprint, files and bytes", async () => {
    const directory = "exports/focus-cost";
    const oct = [
      { name: "part_0_0001.csv.gz", bytes: gzipSync(sampleRows(0, 400)) },
      { name: "part_0_0002.csv.gz", bytes: gzipSync(sampleRows(400, 1000)) },
    ];
    const sep = [{ name: "part_0_0001.csv", bytes: enc.encode(sampleRows(0, 5)) }];
    const octRun = await writeAzureFocusExport(container, { directory, month: "2026-10", runId: "0b6f5e1a-0000-4000-8000-000000000001", submittedTime: "2026-11-02T08:00:00Z", files: oct, format: "Csv", compression: "gzip" });
    const sepRun = await writeAzureFocusExport(container, { directory, month: "2026-09", runId: "0b6f5e1a-0000-4000-8000-000000000002", submittedTime: "2026-10-02T08:00:00Z", files: sep, format: "Csv", compression: "none" });
    expect(octRun.folder).toBe(`${directory}/20261001-20261031/0b6f5e1a-0000-4000-8000-000000000001`);
    expect(sepRun.folder).toBe(`${directory}/20260901-20260930/0b6f5e1a-0000-4000-8000-000000000002`);

    const periods = await reader({ directory }).periods();
    expect(periods.map((p) => p.month)).toEqual(["2026-09", "2026-10"]);
    const [september, october] = periods as [SourcePeriod, SourcePeriod];
    expect(october.files).toEqual(octRun.blobs);
    expect(september.files).toEqual(sepRun.blobs);
    expect(october.bytes).toBe(oct[0]!.bytes.byteLength + oct[1]!.bytes.byteLength);
    expect(october.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(october.fingerprint).not.toBe(september.fingerprint);
    // A leading or trailing slash names the same directory.
    expect((await reader({ directory: `/${directory}/` }).periods()).map((p) => p.fingerprint)).toEqual(periods.map((p) => p.fingerprint));
  });

  test("a gzip CSV export yields the same records as the plain CSV, blobs in the manifest's order", async () => {
    // Listed in reverse name order: the manifest, not the listing, orders the files.
    const parts = [
      { name: "part_1_0001", rows: sampleRows(300, 1000) },
      { name: "part_0_0001", rows: sampleRows(0, 300) },
    ];
    const common = { month: "2024-09", runId: "4d7c1a52-1d1f-4a8e-9b9e-2f0a8f6d1c01", submittedTime: "2024-10-01T06:00:00Z" };
    await writeAzureFocusExport(container, { ...common, directory: "plain/focus", files: parts.map((p) => ({ name: `${p.name}.csv`, bytes: enc.encode(p.rows) })), format: "Csv", compression: "none" });
    await writeAzureFocusExport(container, { ...common, directory: "gz/focus", files: parts.map((p) => ({ name: `${p.name}.csv.gz`, bytes: gzipSync(p.rows) })), format: "Csv", compression: "gzip" });

    const [plain] = await reader({ directory: "plain/focus" }).periods();
    const [gz] = await reader({ directory: "gz/focus" }).periods();
    expect(gz!.files.map((f) => f.split("/").at(-1))).toEqual(["part_1_0001.csv.gz", "part_0_0001.csv.gz"]);
    const plainRecords = await read(plain!);
    const gzRecords = await read(gz!);
    expect(gzRecords).toEqual(plainRecords);
    expect(gzRecords.length).toBe(1001);
    expect(gzRecords[0]).toEqual(sampleRecords[0]!);
    expect(new Set(gzRecords.slice(1).map((r) => r.join("\u0001")))).toEqual(new Set(sampleRecords.slice(1).map((r) => r.join("\u0001"))));
    expect(gzRecords[1]).toEqual(sampleRecords[301]!);
  });

  test("fingerprints: same on a re-list; a new run or a rewritten blob changes it; only the latest run is read", async () => {
    const directory = "runs/focus";
    const base = { directory, month: "2026-11", format: "Csv" as const, compression: "gzip" as const };
    const first = await writeAzureFocusExport(container, { ...base, runId: "11111111-1111-4111-8111-111111111111", submittedTime: "2026-11-02T08:00:00Z", files: [{ name: "part_0_0001.csv.gz", bytes: gzipSync(sampleRows(0, 10)) }] });
    const [before] = await reader({ directory }).periods();
    const [again] = await reader({ directory }).periods();
    expect(again!.fingerprint).toBe(before!.fingerprint);
    expect(before!.files).toEqual(first.blobs);

    // A later run; then one submitted earlier but delivered last: submittedTime decides.
    const latest = await writeAzureFocusExport(container, { ...base, runId: "22222222-2222-4222-8222-222222222222", submittedTime: "2026-11-03T08:00:00Z", files: [{ name: "part_0_0001.csv.gz", bytes: gzipSync(sampleRows(10, 25)) }] });
    await writeAzureFocusExport(container, { ...base, runId: "00000000-0000-4000-8000-000000000000", submittedTime: "2026-11-01T08:00:00Z", files: [{ name: "part_0_0001.csv.gz", bytes: gzipSync(sampleRows(500, 600)) }] });
    const [after] = await reader({ directory }).periods();
    expect(after!.fingerprint).not.toBe(before!.fingerprint);
    expect(after!.files).toEqual(latest.blobs);
    const records = await read(after!);
    expect(records.slice(1)).toEqual(sampleRecords.slice(11, 26));

    // A run folder still being written (no manifest yet) is not a run.
    await container.getBlockBlobClient(`${directory}/20261101-20261130/33333333-3333-4333-8333-333333333333/part_0_0001.csv.gz`).uploadData(gzipSync(sampleRows(0, 1000)));
    const [partial] = await reader({ directory }).periods();
    expect(partial!.fingerprint).toBe(after!.fingerprint);
    expect(partial!.files).toEqual(latest.blobs);

    // The chosen run's blob rewritten in place.
    const rewritten = gzipSync(sampleRows(10, 26));
    await container.getBlockBlobClient(latest.blobs[0]!).uploadData(rewritten);
    const [changed] = await reader({ directory }).periods();
    expect(changed!.fingerprint).not.toBe(after!.fingerprint);
    expect(changed!.bytes).toBe(rewritten.byteLength);
    expect((await read(changed!)).length).toBe(17);
  });

  test("a blob replaced after listing is refused rather than read half old, half new", async () => {
    const directory = "replaced/focus";
    const run = await writeAzureFocusExport(container, { directory, month: "2026-06", runId: "55555555-5555-4555-8555-555555555555", submittedTime: "2026-06-02T08:00:00Z", files: [{ name: "part_0_0001.csv", bytes: enc.encode(sampleRows(0, 3)) }], format: "Csv", compression: "none" });
    const [period] = await reader({ directory }).periods();
    await container.getBlockBlobClient(run.blobs[0]!).uploadData(enc.encode(sampleRows(3, 6)));
    const failure = await failureOf(read(period!));
    expect(failure.cause).toBe("not_found");
  });

  test("an account SAS token reads the export", async () => {
    const directory = "sas/focus";
    await writeAzureFocusExport(container, { directory, month: "2026-07", runId: "66666666-6666-4666-8666-666666666666", submittedTime: "2026-07-02T08:00:00Z", files: [{ name: "part_0_0001.csv", bytes: enc.encode(sampleRows(0, 4)) }], format: "Csv", compression: "none" });
    const service = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey));
    const sasUrl = service.generateAccountSasUrl(new Date(Date.now() + 3600_000), AccountSASPermissions.parse("rl"), AccountSASResourceTypes.parse("sco").toString());
    const sas = new URL(sasUrl).search;
    const [period] = await reader({ directory }, { sas_token: sas }).periods();
    expect(period!.month).toBe("2026-07");
    expect((await read(period!)).length).toBe(5);
  });

  test("the account name comes from the host, or from the path of an emulator URL", () => {
    expect(accountName("https://contosobilling.blob.core.windows.net")).toBe("contosobilling");
    expect(accountName("https://contosobilling.blob.core.windows.net/")).toBe("contosobilling");
    expect(accountName("http://127.0.0.1:10000/devstoreaccount1")).toBe("devstoreaccount1");
  });

  describe("failures", () => {
    test("a wrong account key is a credentials failure that does not show the key", async () => {
      const wrongKey = Buffer.from("not-the-account-key-not-the-account-key-not-the-account-key!").toString("base64");
      const failure = await failureOf(reader({}, { account_key: wrongKey }).periods());
      expect(failure.cause).toBe("credentials");
      expect(failure.message).not.toContain(wrongKey);
    });

    test("a missing container is not_found and names it", async () => {
      const failure = await failureOf(reader({ container: "no-such-container" }).periods());
      expect(failure.cause).toBe("not_found");
      expect(failure.message).toContain("no-such-container");
    });

    test("a directory without export runs is no_export", async () => {
      expect((await failureOf(reader({ directory: "nothing/here" }).periods())).cause).toBe("no_export");
      // Data blobs without any manifest are not an export yet.
      await container.getBlockBlobClient("pending/focus/20261201-20261231/77777777-7777-4777-8777-777777777777/part_0_0001.csv").uploadData(enc.encode(sampleRows(0, 1)));
      expect((await failureOf(reader({ directory: "pending/focus" }).periods())).cause).toBe("no_export");
    });

    test("a manifest that is not JSON is a format failure", async () => {
      await container.getBlockBlobClient("broken/focus/20260501-20260531/88888888-8888-4888-8888-888888888888/manifest.json").uploadData(enc.encode("{not json"));
      const failure = await failureOf(reader({ directory: "broken/focus" }).periods());
      expect(failure.cause).toBe("format");
      expect(failure.message).toContain("manifest.json");
    });

    test("a SAS token without the list permission is a permission failure", async () => {
      const service = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey));
      const readOnly = new URL(service.generateAccountSasUrl(new Date(Date.now() + 3600_000), AccountSASPermissions.parse("r"), AccountSASResourceTypes.parse("sco").toString())).search;
      const failure = await failureOf(reader({ directory: "exports/focus-cost" }, { sas_token: readOnly }).periods());
      expect(failure.cause).toBe("permission");
      expect(failure.message).not.toContain(readOnly.slice(1));
    });

    test("Azure's own error codes map to causes (as Azure, not Azurite, reports them)", () => {
      const rest = (code: string, statusCode: number, message = "") => Object.assign(new Error(message), { name: "RestError", code, statusCode });
      const causeOf = (e: unknown) => (azureFailure(e, CONTAINER) as ConnectionFailure).cause;
      expect(causeOf(rest("AuthenticationFailed", 403, "Server failed to authenticate the request."))).toBe("credentials");
      expect(causeOf(rest("InvalidAuthenticationInfo", 401))).toBe("credentials");
      expect(causeOf(rest("AuthorizationPermissionMismatch", 403, "This request is not authorized to perform this operation using this permission."))).toBe("permission");
      expect(causeOf(rest("AuthorizationFailure", 403, "This request is not authorized to perform this operation."))).toBe("permission");
      expect(causeOf(rest("ContainerNotFound", 404))).toBe("not_found");
      expect(causeOf(rest("ServerBusy", 503))).toBe("unreachable");
      expect(causeOf(Object.assign(new Error("getaddrinfo ENOTFOUND contoso.blob.core.windows.net"), { name: "RestError", code: "ENOTFOUND" }))).toBe("unreachable");
      expect(causeOf(Object.assign(new Error("AADSTS7000215: Invalid client secret provided."), { name: "AuthenticationError" }))).toBe("credentials");
      expect(causeOf(Object.assign(new Error("network_error: See https://aka.ms/msal.js.errors#network_error"), { name: "AuthenticationRequiredError" }))).toBe("unreachable");
      expect(causeOf(Object.assign(new Error("ChainedTokenCredential authentication failed."), { name: "AggregateAuthenticationError" }))).toBe("credentials");
      const other = new TypeError("a bug");
      expect(azureFailure(other, CONTAINER)).toBe(other);
    });

    test("a storage endpoint nobody listens on is unreachable", async () => {
      const port = await freePort();
      const failure = await failureOf(reader({ storage_account_url: `http://127.0.0.1:${port}/devstoreaccount1` }).periods());
      expect(failure.cause).toBe("unreachable");
    });

    test("a service principal without a tenant is a credentials failure", async () => {
      const failure = await failureOf(reader({ client_id: "00000000-0000-0000-0000-000000000001", tenant_id: null }, { client_secret: "s3cr3t-value" }).periods());
      expect(failure.cause).toBe("credentials");
      expect(failure.message).not.toContain("s3cr3t-value");
    });
  });

  test("a Parquet export is read through range downloads, never whole", async () => {
    const header = sampleRecords[0]!;
    const rows = sampleRecords.slice(1).map((r) => r.map((v) => (v === "NULL" ? "" : v)));
    const decimalColumns = Object.fromEntries(header.filter((c) => /(Cost|Quantity|UnitPrice)$/.test(c)).map((c) => [c, { precision: 38, scale: 18 }]));
    // Larger than hyparquet's first footer read (512 KiB), so row groups need reads of their own.
    const bytes = writeFocusParquet(header, [...rows, ...rows, ...rows, ...rows], { codec: "UNCOMPRESSED", rowGroupSize: 1000, decimalColumns });
    expect(bytes.byteLength).toBeGreaterThan(512 * 1024);
    const directory = "parquet/focus";
    const run = await writeAzureFocusExport(container, { directory, month: "2024-09", runId: "99999999-9999-4999-8999-999999999999", submittedTime: "2024-10-01T06:00:00Z", files: [{ name: "part_0_0001.parquet", bytes }], format: "Parquet", compression: "none" });

    const [period] = await reader({ directory }).periods();
    expect(period!.files).toEqual(run.blobs);
    expect(period!.bytes).toBe(bytes.byteLength);
    const ranges = spyOn(BlobClient.prototype, "downloadToBuffer");
    let counts: number[];
    let records: string[][];
    try {
      records = await read(period!);
      counts = ranges.mock.calls.map((args) => args[2] as number);
    } finally {
      ranges.mockRestore();
    }
    expect(records).toEqual(await recordsOf(parquetTable(asyncBufferFromBytes(bytes))));
    expect(records.length).toBe(4001);
    expect(records[0]).toEqual(header);
    const resourceId = header.indexOf("ResourceId");
    expect(records.slice(1, 1001).map((r) => r[resourceId])).toEqual(rows.map((r) => r[resourceId]));
    expect(counts.length).toBeGreaterThan(1);
    for (const count of counts) expect(count).toBeLessThan(bytes.byteLength);
  });
});
