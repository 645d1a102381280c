import { randomUUID } from "node:crypto";
import { currentRequestScope } from "./requestScope.ts";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { mkdirSync, mkdtempSync, existsSync, readdirSync, readFileSync, renameSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { migrations } from "../../drizzle/migrations.gen.ts";
import { migrate } from "./migrate.ts";
import * as schema from "./schema/index.ts";
import type { DatabaseHandle, Db, QueryOptions } from "./types.ts";
import { yieldingClient } from "./pgliteYield.ts";
import {
  archiveDataDir,
  embeddedTemplate,
  extractTemplate,
  installedPgliteVersion,
  migrationsHash,
  templateCachePath,
  templateMatches,
  templateMeta,
  templatesEnabled,
  unpackTemplate,
  writeTemplate,
} from "./pgliteTemplate.ts";

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

/**
 * A checkout's PGlite assets, read from node_modules: compiled once per process like the binary's,
 * instead of once per database (≈ 0.3–0.7 s each; a test run opens hundreds of databases).
 */
function installedPgliteAssets(): (() => Promise<PgliteAssets>) | undefined {
  const file = (name: string) => fileURLToPath(new URL(`../../node_modules/@electric-sql/pglite/dist/${name}`, import.meta.url));
  try {
    if (!["pglite.wasm", "initdb.wasm", "pglite.data"].every((n) => existsSync(file(n)))) return undefined;
  } catch {
    return undefined;
  }
  const read = (name: string) => {
    const b = readFileSync(file(name));
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  };
  return async () => ({ pgliteWasm: read("pglite.wasm"), initdbWasm: read("initdb.wasm"), fsBundle: read("pglite.data") });
}

let compiled: Promise<{ pgliteWasmModule?: WebAssembly.Module; initdbWasmModule?: WebAssembly.Module; fsBundle?: Blob }> | undefined;
/** PGlite's options for the embedded assets, compiled once per process (modules are reusable). */
function pgliteOptions() {
  assetLoader ??= installedPgliteAssets();
  if (!assetLoader) return Promise.resolve({});
  compiled ??= (async () => {
    const a = await assetLoader!();
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([WebAssembly.compile(a.pgliteWasm), WebAssembly.compile(a.initdbWasm)]);
    return { pgliteWasmModule, initdbWasmModule, fsBundle: new Blob([a.fsBundle]) };
  })();
  compiled.catch(() => (compiled = undefined));
  return compiled;
}

/**
 * Starts compiling PGlite's wasm (≈ 0.3–0.7 s, off this thread) now, so that it overlaps the
 * rest of the start-up (module loading, unpacking the template): the binary's entry calls it
 * when the database will be the embedded one.
 */
export function prewarmPglite(): void {
  void pgliteOptions().catch(() => {});
}

/**
 * An argument of `EXECUTE`, spelled as an escape string constant (its meaning does not depend on
 * standard_conforming_strings) that the prepared statement's parameter type then reads, as it
 * reads the text of a bound parameter. Only strings, numbers and null are spelled; anything else
 * (a boolean, a Date, an array, an object, a NUL character, a non-finite number) is undefined and
 * the call runs as a plain parameterised query, serialized by PGlite as always.
 */
export function executeArgument(v: unknown): string | undefined {
  let s: string;
  if (v === null) return "NULL";
  if (typeof v === "string") s = v;
  else if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "bigint") s = String(v);
  else return undefined;
  if (s.includes("\u0000")) return undefined;
  return `E'${s.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/**
 * Prepared statements of PGlite's one session (`query(…, { prepare: true })`). PGlite parses,
 * analyses and plans a parameterised query on every call (its extended protocol uses the unnamed
 * statement), which for the API-key lookup cost more than running the plan; a statement
 * `PREPARE`d once and run with `EXECUTE` skips that work.
 */
function preparedStatements(client: PGlite) {
  /** SQL text → statement name; null: it cannot be prepared (plain queries then). */
  const names = new Map<string, Promise<string | null>>();
  let seq = 0;
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (!name) {
      const n = `commitops_prepared_${++seq}`;
      // A statement PostgreSQL cannot prepare alone (e.g. a parameter of undeterminable type)
      // still runs as a plain query, which reports any real error itself.
      name = client.exec(`PREPARE ${n} AS ${text}`).then(
        () => n,
        () => null,
      );
      names.set(text, name);
    }
    return name;
  };
  return async <T>(text: string, params: unknown[]): Promise<T[]> => {
    const args: string[] = [];
    for (const p of params) {
      const a = executeArgument(p);
      if (a === undefined) return (await client.query<T>(text, params as any[])).rows;
      args.push(a);
    }
    const name = await nameOf(text);
    if (!name) return (await client.query<T>(text, params as any[])).rows;
    const execute = `EXECUTE ${name}${args.length ? `(${args.join(", ")})` : ""}`;
    try {
      return (await client.query<T>(execute)).rows;
    } catch (e) {
      // Deallocated behind our back (DEALLOCATE / DISCARD ALL): prepared again next time.
      if ((e as { code?: string })?.code === "26000") names.delete(text);
      else throw e;
      return (await client.query<T>(text, params as any[])).rows;
    }
  };
}

/**
 * The template of a fresh embedded database (lib/db/pgliteTemplate.ts): PGlite's initdb, every
 * migration and the public price catalog (reference data every deployment loads at its first
 * start, lib/catalog/seed.ts), run in a scratch directory, shut down cleanly and archived.
 */
export async function buildPgliteTemplate(): Promise<Uint8Array> {
  const tmp = mkdtempSync(join(tmpdir(), "commitops-pglite-template-"));
  try {
    return await buildTemplateIn(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Builds the template's data directory in `scratch`/pg (left there) and returns its archive. */
async function buildTemplateIn(scratch: string): Promise<Uint8Array> {
  const { ensurePublicCatalog } = await import("../catalog/seed.ts");
  const handle = await openPglite(scratch, { template: false });
  let catalog: string;
  try {
    await migrate(handle);
    catalog = (await ensurePublicCatalog(handle.db)).version;
  } finally {
    await handle.close();
  }
  return archiveDataDir(join(scratch, "pg"), { migrations: migrationsHash(), tags: migrations.map((m) => m.tag), pglite: installedPgliteVersion(), catalog });
}

/** The checkout's cached template when it matches the migrations, PGlite and the public catalog. */
async function cachedTemplate(): Promise<Uint8Array | null> {
  const cache = templateCachePath();
  if (!cache || !existsSync(cache)) return null;
  const { PUBLIC_CATALOG_VERSION } = await import("../catalog/seed.ts");
  const archive = new Uint8Array(readFileSync(cache));
  return templateMatches(templateMeta(unpackTemplate(archive)), installedPgliteVersion(), PUBLIC_CATALOG_VERSION) ? archive : null;
}

function cacheTemplate(archive: Uint8Array): void {
  const cache = templateCachePath();
  if (!cache) return;
  try {
    writeTemplate(cache, archive);
  } catch {}
}

/**
 * The gzipped template of this checkout (scripts/build.ts embeds it in the binary): the cached
 * one when it matches, else one built now and cached.
 */
export async function pgliteTemplateArchive(): Promise<Uint8Array> {
  const cached = await cachedTemplate();
  if (cached) return cached;
  const archive = await buildPgliteTemplate();
  cacheTemplate(archive);
  return archive;
}

/**
 * A data directory that does not exist yet starts as a copy of the template: the one embedded in
 * the binary, else the checkout's cached one, else one built now and cached for the next fresh
 * start. PGlite then opens it as an existing database, and `migrate` finds nothing to apply.
 * Without a template (COMMITOPS_PGLITE_TEMPLATE=off, nowhere to cache one) PGlite runs initdb.
 */
async function startFromTemplate(pgDir: string): Promise<boolean> {
  if (!templatesEnabled()) return false;
  if (existsSync(pgDir)) {
    if (readdirSync(pgDir).length) return false;
    rmSync(pgDir, { recursive: true, force: true });
  }
  let tar = await embeddedTemplate();
  if (!tar) {
    const cached = await cachedTemplate().catch(() => null);
    tar = cached && unpackTemplate(cached);
  }
  if (tar) {
    extractTemplate(tar, pgDir);
    return true;
  }
  if (!templateCachePath()) return false;
  // The checkout's first fresh start: the template is built next to the data directory, cached,
  // and its directory becomes this database (no extraction). Should building it fail, the normal
  // path runs (and reports any real problem).
  const scratch = `${pgDir}.template-${process.pid}`;
  try {
    rmSync(scratch, { recursive: true, force: true });
    cacheTemplate(await buildTemplateIn(scratch));
    renameSync(join(scratch, "pg"), pgDir);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

let migratedMemoryImage: Promise<Blob> | undefined;
/**
 * A migrated in-memory database: a copy of this process's first one, dumped right after its
 * migrations (≈ 0.5 s to load instead of ≈ 3–5 s of initdb and migrations: tests open one per
 * suite and driver).
 */
export async function openMigratedMemoryPglite(): Promise<DatabaseHandle> {
  migratedMemoryImage ??= (async () => {
    const first = await PGlite.create({ ...(await pgliteOptions()) });
    try {
      await migrate(wrapPglite(first, undefined, () => {}));
      return await first.dumpDataDir("none");
    } finally {
      await first.close().catch(() => {});
    }
  })();
  migratedMemoryImage.catch(() => (migratedMemoryImage = undefined));
  const image = await migratedMemoryImage;
  return wrapPglite(await PGlite.create({ loadDataDir: image, ...(await pgliteOptions()) }), undefined, () => {});
}

/**
 * Opens PGlite: persisted under `dataDir`, or in memory when dataDir is undefined. A new data
 * directory starts from the template (`template: false`: PGlite's own initdb).
 */
export async function openPglite(dataDir?: string, opts: { template?: boolean } = {}): Promise<DatabaseHandle> {
  let unlock = () => {};
  let client: PGlite;
  if (dataDir) {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    unlock = lockDataDir(dir);
    try {
      const pgDir = join(dir, "pg");
      const options = pgliteOptions(); // compiles while the template is unpacked
      if (opts.template !== false) await startFromTemplate(pgDir);
      client = await PGlite.create({ dataDir: pgDir, ...(await options) });
    } catch (e) {
      unlock();
      throw e;
    }
  } else {
    client = await PGlite.create({ ...(await pgliteOptions()) });
  }
  return wrapPglite(client, dataDir, unlock);
}

function wrapPglite(client: PGlite, dataDir: string | undefined, unlock: () => void): DatabaseHandle {
  // Every statement goes through the yielding wrapper: long chains of statements let the HTTP
  // server take its turns (pgliteYield.ts).
  const yielding = yieldingClient(client);
  client = yielding.client;
  const db = drizzle(witnessedTransactions(client), { schema }) as unknown as Db;
  const prepared = preparedStatements(client);
  let closed = false;
  let cursorSeq = 0;
  return {
    db,
    driver: "pglite",
    poolSize: 1,
    description: dataDir ? `pglite:${resolve(dataDir)}` : "pglite:memory",
    status: () => ({ up: !closed }),
    async query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      if (options?.prepare) return prepared<T>(text, params);
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
    async ping() {
      if (closed) throw new Error("The embedded database is closed");
      // Busy with statements (say the background demo seed): it is up, and a SELECT 1 would only
      // queue behind them on the one connection.
      if (yielding.inFlight() > 0) return;
      await client.query("SELECT 1");
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      unlock();
    },
  };
}

/**
 * A request that asked for exactly-once writes (lib/db/requestScope.ts) marks its claim as the
 * last statement of each transaction it commits, as on PostgreSQL. Here no network can lose a
 * COMMIT's answer, but a process can die between the COMMIT and the stored answer: the marker
 * then keeps the claim from ever being run again.
 */
function witnessedTransactions(client: PGlite): PGlite {
  return new Proxy(client, {
    get(t, prop) {
      const v = Reflect.get(t, prop, t) as unknown;
      if (prop !== "transaction" || typeof v !== "function") return v;
      return (fn: (tx: any) => Promise<unknown>) =>
        (v as PGlite["transaction"]).call(t, async (tx: any) => {
          const witness = currentRequestScope()?.witness;
          const result = await fn(tx);
          if (witness) await witness.record((text, params) => tx.query(text, params as any[]), randomUUID());
          return result;
        });
    },
  });
}
