import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { mkdirSync, existsSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import * as schema from "./schema/index.ts";
import type { DatabaseHandle, Db } from "./types.ts";

export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string, readonly pid: number) {
    super(
      `The embedded database in ${dataDir} is held by a running commitops process (pid ${pid}). ` +
        `Stop it first, or point DATABASE_URL at a PostgreSQL server so several processes can share it.`,
    );
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === "EPERM";
  }
}

/** PGlite is single-process: a pid file stops a second process from corrupting the files. */
function lockDataDir(dir: string): () => void {
  const lockFile = join(dir, "commitops.pid");
  if (existsSync(lockFile)) {
    const pid = Number(readFileSync(lockFile, "utf8").trim());
    if (pid && pid !== process.pid && pidAlive(pid)) throw new DataDirLockedError(dir, pid);
  }
  writeFileSync(lockFile, String(process.pid));
  return () => {
    try {
      if (readFileSync(lockFile, "utf8").trim() === String(process.pid)) rmSync(lockFile);
    } catch {}
  };
}

export interface PgliteAssets {
  pgliteWasm: ArrayBuffer;
  initdbWasm: ArrayBuffer;
  fsBundle: ArrayBuffer;
}

let assetLoader: (() => Promise<PgliteAssets>) | undefined;
/**
 * The compiled binary has no node_modules: its entry embeds PGlite's wasm, initdb wasm and
 * data bundle and hands them over here.
 */
export function setPgliteAssets(loader: () => Promise<PgliteAssets>) {
  assetLoader = loader;
}

async function pgliteOptions() {
  if (!assetLoader) return {};
  const a = await assetLoader();
  return {
    pgliteWasmModule: await WebAssembly.compile(a.pgliteWasm),
    initdbWasmModule: await WebAssembly.compile(a.initdbWasm),
    fsBundle: new Blob([a.fsBundle]),
  };
}

/** Opens PGlite: persisted under `dataDir`, or in memory when dataDir is undefined. */
export async function openPglite(dataDir?: string): Promise<DatabaseHandle> {
  let unlock = () => {};
  let client: PGlite;
  if (dataDir) {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    unlock = lockDataDir(dir);
    client = await PGlite.create({ dataDir: join(dir, "pg"), ...(await pgliteOptions()) });
  } else {
    client = await PGlite.create({ ...(await pgliteOptions()) });
  }
  const db = drizzle(client, { schema }) as unknown as Db;
  let closed = false;
  let cursorSeq = 0;
  return {
    db,
    driver: "pglite",
    poolSize: 1,
    description: dataDir ? `pglite:${resolve(dataDir)}` : "pglite:memory",
    async query<T>(text: string, params: unknown[] = []) {
      const r = await client.query(text, params as any[]);
      return r.rows as T[];
    },
    async stream<T>(text: string, params: unknown[], onBatch: (rows: T[]) => Promise<void> | void, batchSize = 5000) {
      // A holdable cursor: its rows are materialized when the DECLARE commits, then each FETCH is
      // one short query. PGlite has a single connection and a transaction holds it exclusively, so
      // a cursor inside a transaction would stop every other request while a slow client reads.
      const cursor = `commitops_cursor_${++cursorSeq}`;
      await client.query(`DECLARE ${cursor} NO SCROLL CURSOR WITH HOLD FOR ${text}`, params as any[]);
      try {
        for (;;) {
          const r = await client.query(`FETCH FORWARD ${batchSize} FROM ${cursor}`);
          if (r.rows.length === 0) break;
          await onBatch(r.rows as T[]);
          if (r.rows.length < batchSize) break;
        }
      } finally {
        if (!closed) await client.query(`CLOSE ${cursor}`).catch(() => {});
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      unlock();
    },
  };
}
