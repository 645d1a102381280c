/**
 * A real S3-compatible server on loopback (s3rver) and AWS Data Exports laid out in it exactly
 * as AWS writes them: data files under `<prefix>/<export>/data/BILLING_PERIOD=YYYY-MM/` and the
 * manifest, written last, under `<prefix>/<export>/metadata/BILLING_PERIOD=YYYY-MM/`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, request as httpRequest } from "node:http";
import S3rver from "s3rver";
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

/** s3rver's built-in key pair. It checks that a request's access key id is one of its accounts' (SigV4 signatures themselves are not verified). */
export const S3RVER_ACCESS_KEY_ID = "S3RVER";
export const S3RVER_SECRET = "S3RVER";

export interface S3Server {
  endpoint: string;
  client: S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startS3(): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), "commitops-s3-"));
  const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  const addr = (await server.run()) as unknown as { port: number };
  const endpoint = `http://127.0.0.1:${addr.port}`;
  const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: S3RVER_ACCESS_KEY_ID, secretAccessKey: S3RVER_SECRET } });
  return {
    endpoint,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface AwsExportPeriod {
  bucket: string;
  prefix: string;
  exportName: string;
  /** YYYY-MM */
  month: string;
  files: { name: string; bytes: Uint8Array | string }[];
  executionId?: string;
  /** Files of an earlier delivery to remove (an overwriting export replaces them). */
  remove?: string[];
}

const base = (p: { prefix: string; exportName: string }) => `${p.prefix ? p.prefix + "/" : ""}${p.exportName}`;

/** Writes (or overwrites) one billing period of an export: the data files, then the manifest. */
export async function writeAwsExport(client: S3Client, p: AwsExportPeriod): Promise<string[]> {
  const dataDir = `${base(p)}/data/BILLING_PERIOD=${p.month}`;
  const keys: string[] = [];
  for (const f of p.files) {
    const key = `${dataDir}/${f.name}`;
    await client.send(new PutObjectCommand({ Bucket: p.bucket, Key: key, Body: typeof f.bytes === "string" ? f.bytes : Buffer.from(f.bytes) }));
    keys.push(key);
  }
  for (const name of p.remove ?? []) await client.send(new DeleteObjectCommand({ Bucket: p.bucket, Key: `${dataDir}/${name}` }));
  const [y, m] = p.month.split("-").map(Number);
  const start = new Date(Date.UTC(y!, m! - 1, 1));
  const end = new Date(Date.UTC(y!, m!, 1));
  const manifest = {
    executionId: p.executionId ?? crypto.randomUUID(),
    billingPeriod: { start: start.toISOString(), end: end.toISOString() },
    dataFiles: keys.map((k) => `s3://${p.bucket}/${k}`),
    exportArn: `arn:aws:bcm-data-exports:us-east-1:123456789012:export/${p.exportName}-0000`,
    exportName: p.exportName,
    exportTime: new Date().toISOString(),
    queryStatement: "SELECT * FROM FOCUS_1_0_AWS",
    tableConfigurations: { FOCUS_1_0_AWS: {} },
  };
  await client.send(new PutObjectCommand({ Bucket: p.bucket, Key: `${base(p)}/metadata/BILLING_PERIOD=${p.month}/${p.exportName}-Manifest.json`, Body: JSON.stringify(manifest) }));
  return keys;
}

export interface StallingProxy {
  endpoint: string;
  /** Resolves once a data file's download has stalled (half of its bytes sent). */
  readonly stalled: Promise<void>;
  /** Stall no later download (those already stalled stay so). */
  release(): void;
  stop(): Promise<void>;
}

/**
 * An HTTP proxy in front of the loopback S3 server whose data-file downloads (GETs under
 * `/data/`) send their headers and the first half of their bytes, then nothing more: a sync
 * reading through it is mid-import for as long as the test wants. Other requests pass through.
 */
export async function startStallingProxy(target: string): Promise<StallingProxy> {
  let stalling = true;
  let onStall!: () => void;
  const stalled = new Promise<void>((r) => (onStall = r));
  const server = createServer((req, res) => {
    const upstream = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (!(stalling && req.method === "GET" && req.url?.includes("/data/"))) return void answer.pipe(res);
      let room = Math.floor(Number(answer.headers["content-length"] ?? 0) / 2);
      answer.on("data", (chunk: Buffer) => {
        if (room <= 0) return;
        res.write(chunk.subarray(0, room));
        room -= Math.min(room, chunk.length);
        if (room === 0) onStall();
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    stalled,
    release: () => void (stalling = false),
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
