import postgres from "postgres";
import { describe } from "bun:test";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { migrationsHash } from "../../lib/db/pgliteTemplate.ts";

export type DriverName = "pglite" | "postgres";

/** The drivers this run covers: PGlite always, the PostgreSQL server when TEST_DATABASE_URL is set. */
export function testDrivers(): DriverName[] {
  return process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];
}

export interface TestDatabase {
  handle: DatabaseHandle;
  /** postgres://… of the fresh database (postgres driver only), for a second process. */
  url?: string;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database: an in-memory PGlite, or a new database on the TEST_DATABASE_URL
 * server (or `base`'s: benchmarks) created here and dropped by `drop`, so suites and runs never
 * collide.
 */
export async function createTestDatabase(driver: DriverName, base = process.env.TEST_DATABASE_URL!): Promise<TestDatabase> {
  if (driver === "pglite") {
    const handle = await openDb({ migrate: true });
    return { handle, drop: () => handle.close() };
  }
  const name = `commitops_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const template = await migratedTemplate(base);
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const handle = await openDb({ url, migrate: true });
  return {
    handle,
    url,
    async drop() {
      await handle.close().catch(() => {});
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

const templates = new Map<string, Promise<string>>();
/**
 * A database on `base`'s server with this checkout's migrations applied, named by their hash:
 * each test database is a copy of it (CREATE DATABASE … TEMPLATE, ≈ 0.1 s) instead of a fresh
 * migration (≈ 0.7 s). Built once per server and set of migrations, whichever process (parallel
 * test workers, later runs) gets there first: it is built under another name and renamed when
 * complete, so a half-built template is never copied. Older templates are dropped.
 */
function migratedTemplate(base: string): Promise<string> {
  let t = templates.get(base);
  if (!t) {
    t = buildTemplate(base);
    templates.set(base, t);
    t.catch(() => templates.delete(base));
  }
  return t;
}

async function buildTemplate(base: string): Promise<string> {
  const name = `commitops_template_${migrationsHash()}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  try {
    const exists = async () => (await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length > 0;
    if (await exists()) return name;
    const building = `${name}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await admin.unsafe(`CREATE DATABASE ${building}`);
    try {
      const u = new URL(base);
      u.pathname = `/${building}`;
      const handle = await openDb({ url: u.toString(), migrate: true });
      await handle.close();
      if (!(await exists())) await admin.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`).catch(async (e) => {
        if (!(await exists())) throw e; // another worker's rename won the race: use theirs
      });
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
    }
    for (const old of await admin<{ datname: string }[]>`SELECT datname FROM pg_database WHERE datname LIKE 'commitops\_template\_%' AND datname <> ${name} AND datname NOT LIKE ${name + "\_%"}`)
      await admin.unsafe(`DROP DATABASE IF EXISTS ${old.datname}`).catch(() => {}); // in use by another checkout's run: left
    return name;
  } finally {
    await admin.end();
  }
}

/** Declares `fn`'s suite once per driver: `describe("… [pglite]")`, `describe("… [postgres]")`. */
export function describeEachDb(name: string, fn: (driver: DriverName) => void) {
  for (const d of testDrivers()) describe(`${name} [${d}]`, () => fn(d));
}
