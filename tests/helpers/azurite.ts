/**
 * Azurite (the Azure Storage emulator) for connection tests, and Cost Management FOCUS exports
 * laid out in it as Azure writes them: `<directory>/YYYYMMDD-YYYYMMDD/<run>/part_*` plus the
 * run's manifest.json, written last.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContainerClient } from "@azure/storage-blob";
import { freePort } from "./process.ts";

/** The emulator's well-known development account (public, documented by Microsoft). */
const ACCOUNT = "devstoreaccount1";
const ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const AZURITE_BLOB = join(import.meta.dir, "../../node_modules/azurite/dist/src/blob/main.js");

export interface Azurite {
  /** http://127.0.0.1:<port>/devstoreaccount1 */
  url: string;
  accountName: typeof ACCOUNT;
  accountKey: string;
  stop(): Promise<void>;
}

/** Starts Azurite's blob service on a free port with its own temporary storage. */
export async function startAzurite(): Promise<Azurite> {
  const location = await mkdtemp(join(tmpdir(), "azurite-"));
  const port = await freePort();
  const child = spawn(
    "node",
    [AZURITE_BLOB, "--blobHost", "127.0.0.1", "--blobPort", String(port), "--location", location, "--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // A test process that dies without stop() must not leave the emulator running.
  const orphaned = () => {
    child.kill("SIGKILL");
    rmSync(location, { recursive: true, force: true });
  };
  process.once("exit", orphaned);
  const stop = async () => {
    process.off("exit", orphaned);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    await rm(location, { recursive: true, force: true });
  };
  try {
    await listening(port, () => child.exitCode !== null, 30_000);
  } catch (e) {
    await stop();
    throw new Error(`Azurite did not start: ${(e as Error).message}\n${output}`);
  }
  return { url: `http://127.0.0.1:${port}/${ACCOUNT}`, accountName: ACCOUNT, accountKey: ACCOUNT_KEY, stop };
}

/** Resolves once a TCP connection to the port succeeds. */
async function listening(port: number, exited: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (exited()) throw new Error("the process exited");
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} not listening after ${timeoutMs} ms`);
}

export interface AzureFocusExport {
  /** The export's directory in the container (includes the export name; "" for the root). */
  directory: string;
  /** `YYYY-MM` */
  month: string;
  runId: string;
  /** ISO time the run was submitted (orders the runs of a period). */
  submittedTime: string;
  files: { name: string; bytes: Uint8Array }[];
  format: "Csv" | "Parquet";
  compression: "gzip" | "none" | "snappy";
}

/** Writes one export run: its data blobs, then its manifest.json listing them in the given order. */
export async function writeAzureFocusExport(container: ContainerClient, opts: AzureFocusExport): Promise<{ folder: string; manifest: string; blobs: string[] }> {
  const [year, month] = opts.month.split("-").map(Number) as [number, number];
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const ym = `${year}${String(month).padStart(2, "0")}`;
  const directory = opts.directory.replace(/^\/+|\/+$/g, "");
  const folder = `${directory ? `${directory}/` : ""}${ym}01-${ym}${lastDay}/${opts.runId}`;
  const blobs: { blobName: string; byteCount: number; dataRowCount: number }[] = [];
  for (const file of opts.files) {
    const blobName = `${folder}/${file.name}`;
    await container.getBlockBlobClient(blobName).uploadData(file.bytes);
    blobs.push({ blobName, byteCount: file.bytes.byteLength, dataRowCount: 0 });
  }
  const exportName = directory.split("/").at(-1) || "focus-export";
  const isoMonth = `${year}-${String(month).padStart(2, "0")}`;
  const manifest = {
    manifestVersion: "2024-04-01",
    byteCount: blobs.reduce((n, b) => n + b.byteCount, 0),
    blobCount: blobs.length,
    dataRowCount: 0,
    exportConfig: {
      exportName,
      resourceId: `/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.CostManagement/exports/${exportName}`,
      dataVersion: "1.0r2",
      apiVersion: "2023-07-01-preview",
      type: "FocusCost",
      timeFrame: "BillingMonthToDate",
      granularity: "Daily",
    },
    deliveryConfig: {
      partitionData: true,
      dataOverwriteBehavior: "OverwritePreviousReport",
      fileFormat: opts.format,
      compressionMode: opts.compression,
      containerUri: `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/billing/providers/Microsoft.Storage/storageAccounts/${container.accountName}`,
      rootFolderPath: directory,
    },
    runInfo: {
      executionType: "Scheduled",
      submittedTime: opts.submittedTime,
      runId: opts.runId,
      startDate: `${isoMonth}-01T00:00:00`,
      endDate: `${isoMonth}-${lastDay}T00:00:00`,
    },
    blobs,
  };
  const body = JSON.stringify(manifest);
  await container.getBlockBlobClient(`${folder}/manifest.json`).upload(body, Buffer.byteLength(body));
  return { folder, manifest: `${folder}/manifest.json`, blobs: blobs.map((b) => b.blobName) };
}
