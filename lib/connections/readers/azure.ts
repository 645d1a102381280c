/**
 * Azure Cost Management FOCUS exports in Blob Storage, read with the official SDK. Layout of the
 * current exports experience: `<directory>/YYYYMMDD-YYYYMMDD/<run guid>/` per billing period and
 * run, each run holding its data blobs (`part_*.csv`, `part_*.csv.gz`, `part_*.parquet`) and a
 * `manifest.json` written last that lists them. A period's data is its latest complete run (by
 * the manifest's submittedTime); a run folder without a manifest is still being written.
 */
import { createHash } from "node:crypto";
import { ClientSecretCredential, DefaultAzureCredential } from "@azure/identity";
import {
  AnonymousCredential,
  BlobServiceClient,
  StorageSharedKeyCredential,
  type BlobClient,
  type BlobItem,
  type ContainerClient,
  type StoragePipelineOptions,
} from "@azure/storage-blob";
import type { AzureConfig, AzureSecrets } from "../kinds.ts";
import { parquetTable, type AsyncBuffer } from "../parquet.ts";
import { ConnectionFailure, unreachable, type ExportReader, type ReaderOptions, type RecordTable, type SourcePeriod } from "../source.ts";
import { csvTable } from "../tables.ts";
import { openEgress, type Egress } from "../../egress.ts";

/** `<period folder>/<run folder>/manifest.json` relative to the export directory. */
const RUN_MANIFEST = /^(\d{4})(\d{2})\d{2}-\d{8}\/([^/]+)\/manifest\.json$/;
/** Manifests downloaded at once while listing periods. */
const MANIFEST_CONCURRENCY = 8;

/** The part of a 2024-04-01 export manifest the reader relies on. */
interface Manifest {
  runInfo?: { runId?: string; submittedTime?: string };
  deliveryConfig?: { fileFormat?: string };
  blobs: { blobName: string }[];
}

/** A complete run of one period: its manifest and the blobs it lists, as listed. */
interface Run {
  month: string;
  manifest: Manifest;
  manifestItem: BlobItem;
  runId: string;
  submitted: number;
}

export function azureExportReader(config: AzureConfig, secrets: AzureSecrets, opts: ReaderOptions): ExportReader {
  const url = (config.endpoint_url ?? config.storage_account_url).replace(/\/+$/, "");
  // The account's host is resolved and checked once; every request connects to those addresses (lib/egress.ts).
  let egress: Egress | undefined;
  let opened: Promise<ContainerClient> | undefined;
  const open = () =>
    (opened ??= openEgress([url], opts.allowPrivateEndpoints).then(
      (e) => {
        egress = e;
        return serviceClient(config, secrets, url, e).getContainerClient(containerName);
      },
      () => {
        throw unreachable("The storage account");
      },
    ));
  const containerName = config.container;
  const directory = (config.directory ?? "").replace(/^\/+|\/+$/g, "");
  const prefix = directory ? `${directory}/` : "";
  const where = `container "${containerName}"${directory ? `, directory "${directory}"` : ""}`;
  const failure = (e: unknown) => azureFailure(e, containerName);

  async function listAll(): Promise<Map<string, BlobItem>> {
    const blobs = new Map<string, BlobItem>();
    const container = await open();
    for await (const item of container.listBlobsFlat({ prefix: prefix || undefined })) blobs.set(item.name, item);
    return blobs;
  }

  async function readManifest(item: BlobItem): Promise<Manifest> {
    const chunks: Uint8Array[] = [];
    for await (const chunk of blobBytes((await open()).getBlobClient(item.name), item.properties.etag)) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString("utf8");
    let m: Manifest;
    try {
      m = JSON.parse(text.replace(/^\uFEFF/, ""));
    } catch {
      throw new ConnectionFailure("format", `The export manifest ${item.name} in ${where} is not valid JSON.`);
    }
    if (!m || typeof m !== "object" || !Array.isArray(m.blobs) || m.blobs.some((b) => typeof b?.blobName !== "string")) {
      throw new ConnectionFailure("format", `The export manifest ${item.name} in ${where} has no list of blobs.`);
    }
    return m;
  }

  /** A manifest's blobName as a listed blob: container-relative, sometimes led by the container's name. */
  function listed(blobs: Map<string, BlobItem>, blobName: string): BlobItem | undefined {
    const name = blobName.trim().replace(/^\/+/, "");
    return blobs.get(name) ?? (name.startsWith(`${containerName}/`) ? blobs.get(name.slice(containerName.length + 1)) : undefined);
  }

  function period(run: Run, files: BlobItem[]): SourcePeriod {
    // Only the run, the manifest and the listed blobs' versions: other runs or folders don't count.
    const h = createHash("sha256");
    h.update(`run ${run.runId}\nmanifest ${run.manifestItem.properties.etag}\n`);
    for (const f of files) h.update(`${f.name} ${f.properties.etag} ${f.properties.contentLength ?? 0}\n`);
    const parquet = /parquet/i.test(run.manifest.deliveryConfig?.fileFormat ?? "");
    return {
      month: run.month,
      fingerprint: h.digest("hex"),
      bytes: files.reduce((n, f) => n + (f.properties.contentLength ?? 0), 0),
      files: files.map((f) => f.name),
      async *tables() {
        const container = await open();
        for (const f of files) yield table(container, f, parquet);
      },
    };
  }

  function table(container: ContainerClient, item: BlobItem, parquetExport: boolean): RecordTable {
    const blob = container.getBlobClient(item.name);
    const etag = item.properties.etag;
    const isParquet = /\.parquet$/i.test(item.name) || (parquetExport && !/\.csv(\.gz)?$/i.test(item.name));
    const inner = isParquet ? parquetTable(blobRanges(blob, item.properties.contentLength ?? 0, etag)) : csvTable(blobBytes(blob, etag));
    return {
      async *[Symbol.asyncIterator]() {
        try {
          yield* inner;
        } catch (e) {
          throw failure(e);
        }
      },
    };
  }

  return {
    async periods() {
      try {
        const blobs = await listAll();
        const candidates: { month: string; runFolder: string; item: BlobItem }[] = [];
        for (const [name, item] of blobs) {
          const m = RUN_MANIFEST.exec(name.slice(prefix.length));
          if (m) candidates.push({ month: `${m[1]}-${m[2]}`, runFolder: m[3]!, item });
        }
        if (!candidates.length) {
          throw new ConnectionFailure("no_export", `No Cost Management export under ${where}: expected billing period folders (YYYYMMDD-YYYYMMDD) holding run folders with a manifest.json. Check the directory (it includes the export name) and that the export has run.`);
        }
        const runs = await mapLimit(candidates, MANIFEST_CONCURRENCY, async ({ month, runFolder, item }): Promise<Run> => {
          const manifest = await readManifest(item);
          const submitted = Date.parse(manifest.runInfo?.submittedTime ?? "");
          return { month, manifest, manifestItem: item, runId: manifest.runInfo?.runId || runFolder, submitted: Number.isNaN(submitted) ? (item.properties.lastModified?.getTime() ?? 0) : submitted };
        });
        // Keyed by month, not folder: two folders of one month (custom ranges) are one period.
        const byMonth = new Map<string, Run[]>();
        for (const r of runs) byMonth.set(r.month, [...(byMonth.get(r.month) ?? []), r]);
        const periods: SourcePeriod[] = [];
        for (const [month, monthRuns] of byMonth) {
          monthRuns.sort((a, b) => b.submitted - a.submitted || a.runId.localeCompare(b.runId));
          // The latest run whose listed blobs are all there (an overwriting run may be deleting an older one).
          let chosen: SourcePeriod | undefined;
          for (const run of monthRuns) {
            const files = run.manifest.blobs.map((b) => listed(blobs, b.blobName));
            if (files.every((f) => f)) {
              chosen = period(run, files as BlobItem[]);
              break;
            }
          }
          if (!chosen) {
            throw new ConnectionFailure("format", `The export manifests of ${month} in ${where} list blobs that are not in the container (the export is being rewritten; the next sync retries).`);
          }
          periods.push(chosen);
        }
        return periods.sort((a, b) => a.month.localeCompare(b.month));
      } catch (e) {
        throw failure(e);
      }
    },
    close() {
      egress?.close();
    },
  };
}

function serviceClient(config: AzureConfig, secrets: AzureSecrets, url: string, egress: Egress): BlobServiceClient {
  // A failed request is retried a few times, quickly: a sync runs again later anyway. `agent`
  // is a core-rest-pipeline option the storage client passes on (not in its typings): every
  // request of the pipeline goes through it, so only checked addresses are connected to.
  const options: StoragePipelineOptions = { retryOptions: { maxTries: 3, retryDelayInMs: 1000 }, ...({ agent: egress.agentFor(url) } as object) };
  if (config.client_id && secrets.client_secret) {
    if (!config.tenant_id) throw new ConnectionFailure("credentials", "A service principal needs its tenant ID as well as its client ID and secret.");
    return new BlobServiceClient(url, new ClientSecretCredential(config.tenant_id, config.client_id, secrets.client_secret), options);
  }
  if (secrets.account_key) {
    return new BlobServiceClient(url, new StorageSharedKeyCredential(accountName(config.storage_account_url), secrets.account_key), options);
  }
  if (secrets.sas_token) {
    const sas = secrets.sas_token.replace(/^\?/, "");
    return new BlobServiceClient(`${url}${url.includes("?") ? "&" : "?"}${sas}`, new AnonymousCredential(), options);
  }
  return new BlobServiceClient(url, new DefaultAzureCredential(), options);
}

/** The storage account of an account URL: the first host label, or the first path segment of an emulator URL (http://127.0.0.1:10000/devstoreaccount1). */
export function accountName(storageAccountUrl: string): string {
  let u: URL;
  try {
    u = new URL(storageAccountUrl);
  } catch {
    throw new ConnectionFailure("unreachable", "The storage account URL is not a URL (expected https://<account>.blob.core.windows.net).");
  }
  const segment = u.pathname.split("/").find(Boolean);
  return segment ?? u.hostname.split(".")[0]!;
}

/** A blob's bytes as they arrive (never the whole blob in memory), failing if it is rewritten meanwhile. */
function blobBytes(blob: BlobClient, etag: string | undefined): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      const res = await blob.download(0, undefined, { conditions: { ifMatch: etag } });
      yield* res.readableStreamBody as AsyncIterable<Uint8Array>;
    },
  };
}

/** A blob as hyparquet's random-access buffer over range downloads, so a Parquet file is read footer first and never whole. */
function blobRanges(blob: BlobClient, size: number, etag: string | undefined): AsyncBuffer {
  return {
    byteLength: size,
    async slice(start, end = size) {
      const count = Math.min(end, size) - start;
      if (count <= 0) return new ArrayBuffer(0);
      const out = new ArrayBuffer(count);
      await blob.downloadToBuffer(Buffer.from(out), start, count, { conditions: { ifMatch: etag } });
      return out;
    },
  };
}

/** Runs `fn` over `items` with at most `limit` calls at once, results in order. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const NETWORK = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENONPUBLIC|REQUEST_SEND_ERROR|ConnectionRefused|Unable to connect/i;

/** The cause of an SDK error, in words that name the container but no key, secret or SAS. */
export function azureFailure(e: unknown, container: string): unknown {
  if (e instanceof ConnectionFailure) return e;
  const err = e as { name?: string; code?: string; statusCode?: number; message?: string };
  const name = err?.name ?? "";
  const code = typeof err?.code === "string" ? err.code : "";
  const status = err?.statusCode;
  const message = err?.message ?? "";
  if (name === "AggregateAuthenticationError" || name === "CredentialUnavailableError") {
    return new ConnectionFailure("credentials", "No Azure credential was found for the storage account: give a service principal, an account key or a SAS token, or run with a managed identity.");
  }
  if (name === "AuthenticationError" || name === "AuthenticationRequiredError") {
    if (/network_error/.test(message) || NETWORK.test(message)) return new ConnectionFailure("unreachable", "Microsoft Entra ID could not be reached to sign in the service principal.");
    const aad = /AADSTS\d+/.exec(message)?.[0];
    return new ConnectionFailure("credentials", `Microsoft Entra ID gave no token for the storage account (${aad ?? name}). Check the tenant ID, client ID and client secret.`);
  }
  if (/non-TLS/.test(message)) return new ConnectionFailure("credentials", "A service principal or the default Azure credential needs an https storage account URL; use an account key or SAS token with an emulator.");
  // Azurite reports a bad signature as AuthorizationFailure with the authentication message.
  const badSignature = code === "AuthorizationFailure" && /failed to authenticate/i.test(message);
  if (["AuthenticationFailed", "InvalidAuthenticationInfo", "NoAuthenticationInformation"].includes(code) || badSignature || status === 401) {
    return new ConnectionFailure("credentials", `Azure Storage did not accept the credentials (${code || status}). Check the account key, the SAS token (and its expiry) or the service principal.`);
  }
  if (code === "ContainerNotFound") return new ConnectionFailure("not_found", `The container "${container}" does not exist in the storage account.`);
  if (code === "BlobNotFound" || code === "ConditionNotMet") {
    return new ConnectionFailure("not_found", `A blob of the export in container "${container}" was replaced or deleted while it was read (a new export run); the next sync reads the new run.`);
  }
  if (status === 403) {
    return new ConnectionFailure("permission", `Access to container "${container}" was denied (${code || status}). The identity needs the Storage Blob Data Reader role (or a SAS with list and read), and the account's network rules must admit this service.`);
  }
  if (status === 404) return new ConnectionFailure("not_found", `The storage account or container "${container}" was not found (${code || status}).`);
  // One answer for a refused, closed or filtered port and a refused address (no port scanning).
  if (name === "RestError" && status === undefined && NETWORK.test(`${code} ${message}`)) return unreachable("The storage account");
  if (status !== undefined && status >= 500) {
    return new ConnectionFailure("unreachable", `The storage account answered ${code || status}. Check the storage account URL; the next sync retries.`);
  }
  return e;
}
