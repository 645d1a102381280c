/**
 * AWS Data Exports (FOCUS) in S3, read with the official SDK. Layout as AWS writes it:
 * `<prefix>/<export>/data/BILLING_PERIOD=YYYY-MM/…(.csv.gz|.parquet)` and
 * `<prefix>/<export>/metadata/BILLING_PERIOD=YYYY-MM/…<export>-Manifest.json`, the manifest
 * written last and listing the period's current data files. An overwriting export rewrites the
 * current month's files several times a day; the manifest's and files' ETags tell which
 * versions are there.
 */
import { createHash } from "node:crypto";
import { GetObjectCommand, ListObjectsV2Command, S3Client, type _Object } from "@aws-sdk/client-s3";
import { fromTemporaryCredentials } from "@aws-sdk/credential-providers";
import type { AwsConfig, AwsSecrets } from "../kinds.ts";
import { ConnectionFailure, unreachable, type ExportReader, type ReaderOptions, type RecordTable, type SourcePeriod } from "../source.ts";
import { EGRESS_CONNECT_TIMEOUT_MS, openEgress, type Egress } from "../../egress.ts";
import { csvTable } from "../tables.ts";
import { parquetTable } from "../parquet.ts";
import { rangedObject } from "./rangedObject.ts";

const PERIOD_FOLDER = /BILLING_PERIOD=(\d{4})-(\d{2})\/$/;
const DATA_FILE = /\.(csv|csv\.gz|gz|parquet)$/i;

interface Manifest {
  dataFiles?: string[];
  billingPeriod?: { start?: string; end?: string };
}

export function awsExportReader(config: AwsConfig, secrets: AwsSecrets, opts: ReaderOptions): ExportReader {
  const keys = config.access_key_id && secrets.secret_access_key ? { accessKeyId: config.access_key_id, secretAccessKey: secrets.secret_access_key } : undefined;
  const credentials = config.role_arn
    ? fromTemporaryCredentials({
        params: { RoleArn: config.role_arn, ExternalId: config.external_id ?? undefined, RoleSessionName: "commitops-billing-sync", DurationSeconds: 3600 },
        masterCredentials: keys,
        clientConfig: { region: config.region },
      })
    : keys;
  // Requests go through agents that connect only to checked public addresses (lib/egress.ts):
  // the endpoint's, resolved once here, or S3's own names, checked as they are resolved.
  let egress: Egress | undefined;
  let opened: Promise<S3Client> | undefined;
  const s3 = () =>
    (opened ??= openEgress([config.endpoint_url], opts.allowPrivateEndpoints).then(
      (e) => {
        egress = e;
        return new S3Client({
          region: config.region,
          endpoint: config.endpoint_url ?? undefined,
          forcePathStyle: !!config.endpoint_url,
          credentials,
          maxAttempts: 3,
          requestHandler: { httpAgent: e.httpAgent, httpsAgent: e.httpsAgent, connectionTimeout: EGRESS_CONNECT_TIMEOUT_MS },
        });
      },
      () => {
        throw unreachable("The S3 endpoint");
      },
    ));
  const bucket = config.bucket;
  const base = `${config.prefix ? config.prefix.replace(/^\/+|\/+$/g, "") + "/" : ""}${config.export_name}/`;

  async function list(prefix: string, delimiter?: string): Promise<{ objects: _Object[]; folders: string[] }> {
    const objects: _Object[] = [];
    const folders: string[] = [];
    let token: string | undefined;
    const client = await s3();
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
      objects.push(...(page.Contents ?? []));
      folders.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!).filter(Boolean));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return { objects, folders };
  }

  async function readManifest(key: string): Promise<Manifest> {
    const res = await (await s3()).send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const text = await res.Body!.transformToString();
    try {
      const m = JSON.parse(text) as Manifest;
      if (!m || typeof m !== "object" || (m.dataFiles !== undefined && !Array.isArray(m.dataFiles))) throw new Error();
      return m;
    } catch {
      throw new ConnectionFailure("format", `The manifest s3://${bucket}/${key} is not a Data Exports manifest (not JSON with dataFiles).`);
    }
  }

  /** The S3 key of a manifest's `s3://bucket/key` entry (AWS writes full URIs). */
  function keyOf(entry: string): string {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(entry);
    return m ? m[2]! : entry.replace(/^\/+/, "");
  }

  function table(client: S3Client, obj: _Object): RecordTable {
    const key = obj.Key!;
    if (/\.parquet$/i.test(key)) return parquetTable(rangedObject(client, bucket, key, obj.Size ?? 0));
    return csvTable({
      async *[Symbol.asyncIterator]() {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        yield* res.Body as AsyncIterable<Uint8Array>;
      },
    });
  }

  async function period(folder: string, month: string): Promise<SourcePeriod> {
    const metaPrefix = `${base}metadata/BILLING_PERIOD=${month}/`;
    const [data, meta] = await Promise.all([list(folder), list(metaPrefix)]);
    const dataObjects = new Map(data.objects.filter((o) => DATA_FILE.test(o.Key!)).map((o) => [o.Key!, o]));
    const manifests = meta.objects.filter((o) => o.Key!.endsWith("-Manifest.json")).sort((a, b) => (a.LastModified?.getTime() ?? 0) - (b.LastModified?.getTime() ?? 0));
    const manifestObj = manifests.at(-1);
    let files: _Object[];
    if (manifestObj) {
      const manifest = await readManifest(manifestObj.Key!);
      files = (manifest.dataFiles ?? []).map((entry) => {
        const o = dataObjects.get(keyOf(entry));
        if (!o) throw new ConnectionFailure("format", `The manifest of ${month} lists ${keyOf(entry)}, which is not in the bucket (the export is being rewritten; the next sync retries).`);
        return o;
      });
    } else {
      // An export without its manifest yet: every data file of the period folder.
      files = [...dataObjects.values()].sort((a, b) => a.Key!.localeCompare(b.Key!));
    }
    const h = createHash("sha256");
    if (manifestObj) h.update(`manifest ${manifestObj.Key} ${manifestObj.ETag} ${manifestObj.Size}\n`);
    for (const f of files) h.update(`${f.Key} ${f.ETag} ${f.Size} ${f.LastModified?.toISOString()}\n`);
    return {
      month,
      fingerprint: h.digest("hex"),
      bytes: files.reduce((n, f) => n + (f.Size ?? 0), 0),
      files: files.map((f) => f.Key!),
      async *tables() {
        const client = await s3();
        for (const f of files) yield table(client, f);
      },
    };
  }

  return {
    async periods() {
      try {
        const { folders } = await list(`${base}data/`, "/");
        const months = folders.map((f) => [f, PERIOD_FOLDER.exec(f)] as const).filter(([, m]) => m).map(([f, m]) => [f, `${m![1]}-${m![2]}`] as const);
        if (!months.length) throw new ConnectionFailure("no_export", `No Data Exports billing periods under s3://${bucket}/${base}data/ (is the export name "${config.export_name}" and prefix "${config.prefix ?? ""}" right, and has the export delivered yet?).`);
        const periods = await Promise.all(months.map(([f, m]) => period(f, m)));
        return periods.filter((p) => p.files.length).sort((a, b) => a.month.localeCompare(b.month));
      } catch (e) {
        throw awsFailure(e, bucket);
      }
    },
    explain: (e) => awsFailure(e, bucket),
    async close() {
      if (opened) (await opened.catch(() => null))?.destroy();
      egress?.close();
    },
  };
}

/** The cause of an SDK error, in words that name the bucket but no credential. */
export function awsFailure(e: unknown, bucket: string): unknown {
  if (e instanceof ConnectionFailure) return e;
  const err = e as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; message?: string };
  const name = err?.name ?? "";
  const status = err?.$metadata?.httpStatusCode;
  const code = err?.code ?? (e as { cause?: { code?: string } })?.cause?.code ?? "";
  if (["InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "CredentialsProviderError", "InvalidClientTokenId"].includes(name)) {
    return new ConnectionFailure("credentials", `AWS did not accept the credentials (${name}). Check the access key or the role ARN, its trust policy and external ID.`);
  }
  if (name === "NoSuchBucket" || (status === 404 && name !== "NoSuchKey")) return new ConnectionFailure("not_found", `The bucket "${bucket}" does not exist (or is in another partition).`);
  if (name === "AccessDenied" || name === "AllAccessDisabled" || status === 403) {
    return new ConnectionFailure("permission", `Access to s3://${bucket} was denied (${name || status}). The role or user needs s3:ListBucket and s3:GetObject on the export's prefix.`);
  }
  // One answer for a refused, closed or filtered port and a refused address (no port scanning).
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENONPUBLIC|UND_ERR|ConnectionRefused|TimeoutError/i.test(`${code} ${name} ${err?.message ?? ""}`)) {
    return unreachable("The S3 endpoint");
  }
  return e;
}
