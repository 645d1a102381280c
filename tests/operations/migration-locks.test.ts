// A migration waits for table locks only so long (MIGRATION_LOCK_TIMEOUT_SECONDS): behind a long
// transaction of a replica still serving it gives up whole, retries, and the serving replicas'
// statements on that table are never queued behind it for longer than that.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { holdTable } from "../helpers/pgLocks.ts";
import { migrate, MigrationLockTimeoutError, migrationState, type Migration } from "../../lib/db/migrate.ts";
import { loadConfig } from "../../lib/config.ts";
import { migrations } from "../../drizzle/migrations.gen.ts";

const next: Migration = { tag: "9999_rollout_probe", statements: [`ALTER TABLE organizations ADD COLUMN rollout_probe text`] };
const withNext = [...migrations, next];

test("MIGRATION_LOCK_TIMEOUT_SECONDS: 5 s by default, seconds as given, 0 for no limit; unusable values take the default", () => {
  const timeout = (v?: string) => loadConfig(v === undefined ? {} : { MIGRATION_LOCK_TIMEOUT_SECONDS: v }).migrationLockTimeoutMs;
  expect(timeout()).toBe(5000);
  expect(timeout("12")).toBe(12_000);
  expect(timeout("2.5")).toBe(2500);
  expect(timeout("0")).toBe(0);
  for (const bad of ["", " ", "abc", "-1", "7200"]) expect(timeout(bad)).toBe(5000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("a migration behind a serving replica's long transaction [postgres]", () => {
  let db: TestDatabase;
  let serving: postgres.Sql;
  let reader: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase("postgres");
    serving = postgres(db.url!, { max: 1, onnotice: () => {} });
    reader = postgres(db.url!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await serving?.end();
    await reader?.end();
    await db?.drop();
  });

  const applied = async () => (await reader`SELECT tag FROM commitops_migrations`).map((r) => r.tag as string);
  const hasColumn = async () => (await reader`SELECT 1 FROM information_schema.columns WHERE table_name = 'organizations' AND column_name = 'rollout_probe'`).length > 0;

  test("gives up within the lock timeout on every try, applies nothing, and never holds the other sessions' reads longer than that; applies once the transaction ends", async () => {
    // A replica still serving holds a read of the table in an open transaction (a long report).
    const longRead = await holdTable(serving, "organizations");

    // Meanwhile other sessions keep reading the table: each read waits at most about the timeout.
    const readWaits: number[] = [];
    let reading = true;
    const reads = (async () => {
      while (reading) {
        const t = performance.now();
        await reader`SELECT count(*) FROM organizations`;
        readWaits.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const t0 = performance.now();
    const err = await migrate(db.handle, { migrations: withNext, lockTimeoutMs: 300, attempts: 2 }).catch((e) => e);
    const took = performance.now() - t0;
    expect(err).toBeInstanceOf(MigrationLockTimeoutError);
    expect(err.message).toContain("9999_rollout_probe");
    expect(err.message).toContain("nothing was applied");
    expect(err.message).not.toContain("\n    at ");
    // Two tries of 300 ms and a 1 s backoff between them.
    expect(took).toBeGreaterThan(1500);
    expect(took).toBeLessThan(5000);
    reading = false;
    await reads;
    expect(readWaits.length).toBeGreaterThan(3);
    expect(Math.max(...readWaits)).toBeLessThan(1500);
    expect(await applied()).not.toContain(next.tag);
    expect(await hasColumn()).toBe(false);

    // The long transaction ends: the next start applies the migration, once.
    await longRead.release();
    expect(await migrate(db.handle, { migrations: withNext, lockTimeoutMs: 300, attempts: 2 })).toEqual([next.tag]);
    expect(await migrate(db.handle, { migrations: withNext, lockTimeoutMs: 300, attempts: 2 })).toEqual([]);
    expect(await hasColumn()).toBe(true);
    expect((await applied()).filter((t) => t === next.tag)).toHaveLength(1);
  }, 60_000);

  test("a replica of the old version on the database a newer one migrated: nothing pending for it (its /readyz stays ready), the newer tag known as unknown, its tables still answer", async () => {
    // What /readyz's migration check reads (lib/ops/readiness.ts).
    const state = await migrationState(db.handle);
    expect(state.pending).toEqual([]);
    expect(state.unknown).toEqual([next.tag]);
    // The old version's statements name their columns: the added one changes nothing for them.
    expect((await db.handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`))[0]!.n).toBeGreaterThanOrEqual(0);
  });
});
