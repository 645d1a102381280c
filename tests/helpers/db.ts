import postgres from "postgres";
import { describe } from "bun:test";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";

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
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
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

/** Declares `fn`'s suite once per driver: `describe("… [pglite]")`, `describe("… [postgres]")`. */
export function describeEachDb(name: string, fn: (driver: DriverName) => void) {
  for (const d of testDrivers()) describe(`${name} [${d}]`, () => fn(d));
}
