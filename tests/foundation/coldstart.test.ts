import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { freePort, startProcess } from "../helpers/process.ts";
import { createTestDatabase, describeEachDb } from "../helpers/db.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { openPglite, pgliteTemplateArchive } from "../../lib/db/pglite.ts";
import { migrate } from "../../lib/db/migrate.ts";
import { migrationsHash, setPgliteTemplate, templateMatches, templateMeta, unpackTemplate } from "../../lib/db/pgliteTemplate.ts";
import { migrations } from "../../drizzle/migrations.gen.ts";
import { PUBLIC_CATALOG_VERSION } from "../../lib/catalog/seed.ts";

/**
 * Cold start (issue 11, goal 5): a fresh embedded database starts from the prebuilt data directory
 * (lib/db/pgliteTemplate.ts) and ends up as a normal start would; /readyz answers before the demo
 * seed (run in the background) has finished, and the seed then completes.
 */
const root = join(import.meta.dir, "../..");
const dirs: string[] = [];
const tmp = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `commitops-coldstart-${name}-`));
  dirs.push(d);
  return d;
};
afterAll(() => {
  setPgliteTemplate(undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** What a database's schema and migration record look like, to compare two of them. */
async function shape(h: DatabaseHandle) {
  const tags = (await h.query<{ tag: string }>(`SELECT tag FROM commitops_migrations ORDER BY tag`)).map((r) => r.tag);
  const columns = await h.query(
    `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name <> 'commitops_migrations' ORDER BY table_name, column_name`,
  );
  const indexes = await h.query(`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname`);
  const constraints = await h.query(
    `SELECT conrelid::regclass::text AS rel, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
  );
  return { tags, columns, indexes, constraints };
}

describe("prebuilt PGlite data directory", () => {
  test("a start from the template has the same migrations and schema as a normal start (initdb + migrations), and the public catalog", async () => {
    const fromTemplate = await openDb({ dataDir: tmp("template"), migrate: true });
    const normal = await openPglite(tmp("initdb"), { template: false });
    try {
      expect(await migrate(normal)).toEqual(migrations.map((m) => m.tag)); // the normal path applied them all
      expect(await migrate(fromTemplate)).toEqual([]); // the migration check still runs: nothing left
      const a = await shape(fromTemplate);
      const b = await shape(normal);
      expect(a.tags).toEqual(migrations.map((m) => m.tag));
      expect(a).toEqual(b);
      const [state] = await fromTemplate.query<{ version: string }>(`SELECT version FROM catalog_seed_state WHERE name = 'public_catalog'`);
      expect(state?.version).toBe(PUBLIC_CATALOG_VERSION);
    } finally {
      await fromTemplate.close();
      await normal.close();
    }
  }, 180_000);

  test("the template is keyed by the migrations: another set of migrations never uses it", async () => {
    const archive = await pgliteTemplateArchive();
    const meta = templateMeta(unpackTemplate(archive))!;
    expect(meta.migrations).toBe(migrationsHash());
    expect(meta.tags).toEqual(migrations.map((m) => m.tag));
    expect(templateMatches(meta)).toBe(true);
    const changed = migrations.map((m, i) => (i === migrations.length - 1 ? { ...m, statements: [...m.statements, "SELECT 1"] } : m));
    expect(templateMatches({ ...meta, migrations: migrationsHash(changed) })).toBe(false);
    expect(templateMatches({ ...meta, pglite: "0.0.0-other" }, "0.5.16")).toBe(false);
  }, 180_000);

  test("a template of other migrations (say a binary's, after an upgrade of the code) is ignored: initdb + every migration instead", async () => {
    const archive = await pgliteTemplateArchive();
    // Same files, but recorded as built for other migrations.
    const tar = Buffer.from(gunzipSync(archive));
    const metaText = JSON.stringify(templateMeta(tar));
    const forged = metaText.replace(migrationsHash(), "0000000000000000");
    expect(forged.length).toBe(metaText.length);
    const at = tar.indexOf(metaText);
    tar.write(forged, at);
    let loads = 0;
    setPgliteTemplate(async () => (loads++, gzipSync(tar)));
    try {
      const h = await openDb({ dataDir: tmp("forged"), migrate: false });
      try {
        expect(loads).toBe(1);
        // initdb ran: an empty database, which the migrations then fill.
        const [t] = await h.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
        expect(t?.n).toBe(0);
        expect(await migrate(h)).toEqual(migrations.map((m) => m.tag));
      } finally {
        await h.close();
      }
    } finally {
      setPgliteTemplate(undefined);
    }
  }, 180_000);

  test("a long chain of PGlite statements lets the event loop take turns, and readiness does not queue behind a transaction", async () => {
    const h = await openDb({ dataDir: tmp("chain"), migrate: false });
    try {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const started = performance.now();
      while (performance.now() - started < 300) await h.query("SELECT 1");
      clearInterval(timer);
      expect(ticks).toBeGreaterThan(5);

      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const tx = h.db.transaction(async () => {
        await held;
      });
      await new Promise((r) => setTimeout(r, 20));
      const t0 = performance.now();
      await h.ping!();
      expect(performance.now() - t0).toBeLessThan(100);
      release();
      await tx;
      await h.ping!(); // idle: a real SELECT 1
    } finally {
      await h.close();
    }
  }, 60_000);
});

describeEachDb("server start with the demo seed in the background", (driver) => {
  test("/readyz answers before the demo seed has finished, keeps answering while it runs, and the seed completes", async () => {
    const env: Record<string, string> = { LOG_LEVEL: "info", JOBS_ENABLED: "false", HOST: "127.0.0.1" };
    let drop = async () => {};
    if (driver === "pglite") {
      env.DATA_DIR = join(tmp("serve"), "data");
      env.DATABASE_URL = "";
    } else {
      const db = await createTestDatabase("postgres");
      await db.handle.close();
      env.DATABASE_URL = db.url!;
      drop = db.drop;
    }
    const port = await freePort();
    env.PORT = String(port);
    const p = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env });
    const seeded = () => /"msg":"demo data seeded","seeder":"billing"/.test(p.output());
    try {
      let readyAt = 0;
      let seededWhenReady = true;
      let seedDoneAt = 0;
      let readyWhileSeeding = 0;
      const t0 = performance.now();
      while (performance.now() - t0 < 120_000 && !seedDoneAt) {
        if (p.child.exitCode !== null) throw new Error(`server exited: ${p.output()}`);
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
        // Read after the answer arrived: the seed had not finished even then.
        const done = seeded();
        if (ok && !readyAt) {
          readyAt = performance.now() - t0;
          seededWhenReady = done;
        } else if (ok && !done) readyWhileSeeding++;
        if (done) seedDoneAt = performance.now() - t0;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(readyAt).toBeGreaterThan(0);
      expect(seededWhenReady, p.output().slice(-3000)).toBe(false);
      expect(seedDoneAt, p.output().slice(-3000)).toBeGreaterThan(0);
      expect(readyWhileSeeding).toBeGreaterThan(0);
      expect(p.output()).not.toContain("demo seeder failed");
      // The seeded data is there: the demo estimate and the billing months.
      const orgId = /Demo org: ([0-9a-f-]{36})/.exec(p.output())?.[1];
      const key = /Demo API key \(shown once, keep it\): (co_\S+)/.exec(p.output())?.[1];
      expect(orgId && key).toBeTruthy();
      const api = `http://127.0.0.1:${port}/beta/v1/org/${orgId}`;
      const headers = { authorization: `Bearer ${key}` };
      const estimates = await (await fetch(`${api}/cost-estimates?provider=aws`, { headers })).json();
      expect(JSON.stringify(estimates)).toContain("Demo: web platform");
      const periods = await fetch(`${api}/allocation-reports/commitment_cost_by_account/periods`, { headers });
      expect(periods.status).toBe(200);
      expect(JSON.stringify(await periods.json())).toContain('"year"');
    } finally {
      await p.stop();
      await drop();
    }
    if (driver === "pglite") expect(existsSync(join(env.DATA_DIR!, "pg", "PG_VERSION"))).toBe(true);
  }, 180_000);
});
