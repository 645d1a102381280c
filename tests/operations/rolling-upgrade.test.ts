// A rolling upgrade of two replicas on one PostgreSQL with a new migration (docs/OPERATIONS.md,
// "Upgrades"), through real server processes: the "new version" is a copy of this checkout with
// an additive migration drizzle/0001_rollout_note.sql, embedded by the repository's own generator.
// A client drives steady reads and writes at both replicas the whole time, as a load balancer
// would (a replica that refuses the connection is retried on the other one); no response is ever
// a 5xx. And a new version whose migration waits behind a long transaction gives up within
// MIGRATION_LOCK_TIMEOUT_SECONDS with one line, having applied nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { MAIN, ROOT, spawnServer, startServer, until } from "../helpers/process.ts";
import { holdTable } from "../helpers/pgLocks.ts";

const NEW_TAG = "0001_rollout_note";
/** Additive: a nullable column and a plain index (transaction-safe; CONCURRENTLY is not) on a table the traffic writes. */
const NEW_MIGRATION = [`ALTER TABLE "budgets" ADD COLUMN "rollout_note" text;`, `CREATE INDEX "budgets_rollout_note_idx" ON "budgets" USING btree ("org_id","rollout_note");`].join("--> statement-breakpoint\n");

/** The next version of the service: this checkout's source (node_modules linked) plus one migration, embedded by scripts/gen-migrations-module.ts. */
function buildNewVersion(): string {
  const dir = mkdtempSync(join(tmpdir(), "commitops-next-"));
  for (const entry of readdirSync(ROOT)) if (![".git", "node_modules", "dist", ".data"].includes(entry)) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, "drizzle", `${NEW_TAG}.sql`), NEW_MIGRATION + "\n");
  const journalPath = join(dir, "drizzle", "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8"));
  journal.entries.push({ idx: journal.entries.length, version: "7", when: Date.now(), tag: NEW_TAG, breakpoints: true });
  writeFileSync(journalPath, JSON.stringify(journal, null, 2));
  const gen = spawnSync(process.execPath, [join(dir, "scripts/gen-migrations-module.ts")], { cwd: dir, encoding: "utf8" });
  if (gen.status !== 0) throw new Error(`gen-migrations-module failed: ${gen.stderr}`);
  expect(readFileSync(join(dir, "drizzle/migrations.gen.ts"), "utf8")).toContain(NEW_TAG);
  return dir;
}

/** Every replica: the test database, no jobs or demo data (the traffic is the client's). */
const replicaEnv = (url: string, extra: Record<string, string> = {}) => ({ DATABASE_URL: url, JOBS_ENABLED: "false", SEED_DEMO: "false", LOG_LEVEL: "warn", ...extra });

/** What the database says about the new migration. */
async function migrationApplied(sql: postgres.Sql) {
  const rows = await sql`SELECT count(*)::int AS n FROM commitops_migrations WHERE tag = ${NEW_TAG}`;
  const column = await sql`SELECT 1 FROM information_schema.columns WHERE table_name = 'budgets' AND column_name = 'rollout_note'`;
  return { rows: rows[0]!.n as number, column: column.length > 0 };
}

interface Backend {
  name: string;
  url: string;
}
interface Answer {
  at: number;
  backend: string;
  method: string;
  path: string;
  status: number;
  retried: boolean;
}

/**
 * A load balancer in front of the replicas: each request goes to the next backend in turn; a
 * connection that fails (a replica stopping or stopped refuses it) is retried on the next, as a
 * load balancer does. Writes carry an Idempotency-Key, so a retry never writes twice.
 */
class Balancer {
  backends: Backend[] = [];
  answers: Answer[] = [];
  connectionErrors: { backend: string; error: string }[] = [];
  private turn = 0;

  async request(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; json: any; backend: string; retried: boolean }> {
    const idempotencyKey = randomUUID();
    let retried = false;
    for (let tries = 0; tries < 50; tries++) {
      const pool = this.backends;
      const b = pool[this.turn++ % pool.length]!;
      try {
        const res = await fetch(b.url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json", "idempotency-key": idempotencyKey } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await res.text();
        this.answers.push({ at: performance.now(), backend: b.name, method, path, status: res.status, retried });
        return { status: res.status, json: text ? JSON.parse(text) : null, backend: b.name, retried };
      } catch (e) {
        this.connectionErrors.push({ backend: b.name, error: e instanceof Error ? e.message : String(e) });
        retried = true;
      }
    }
    throw new Error(`no replica answered ${method} ${path}: ${JSON.stringify(this.connectionErrors.slice(-5))}`);
  }

  served(name: string, since = 0) {
    return this.answers.filter((a) => a.backend === name && a.at >= since).length;
  }
}

describe.skipIf(!process.env.TEST_DATABASE_URL)("rolling upgrade of two replicas with a new migration [postgres]", () => {
  let next: string;
  beforeAll(() => {
    next = buildNewVersion();
  });
  afterAll(() => {
    if (next) rmSync(next, { recursive: true, force: true });
  });

  test("a new version whose migration waits behind a long transaction exits 1 within the lock timeout with one line and applies nothing; it starts once the transaction ends", async () => {
    const db = await createTestDatabase("postgres");
    await db.handle.close();
    const report = postgres(db.url!, { max: 1, onnotice: () => {} });
    const probe = postgres(db.url!, { max: 1, onnotice: () => {} });
    try {
      // A serving replica's long report: an open transaction that has read the table (ACCESS SHARE).
      const longReport = await holdTable(report, "budgets");

      const t0 = performance.now();
      const blocked = await spawnServer(replicaEnv(db.url!, { MIGRATION_LOCK_TIMEOUT_SECONDS: "0.5" }), { root: next });
      const code = await blocked.exited;
      const took = performance.now() - t0;
      expect(code).toBe(1);
      // 4 tries of 0.5 s, 1 + 2 + 4 s apart; plus the process's start.
      expect(took).toBeGreaterThan(9_000);
      expect(took).toBeLessThan(40_000);
      const lines = blocked.output().split("\n").filter((l) => l.trim());
      expect(lines).toEqual([`Migration ${NEW_TAG} could not take a table lock within 0.5 s on 4 tries (a long query or an open transaction holds the table); nothing was applied. Start again once it ends, or raise MIGRATION_LOCK_TIMEOUT_SECONDS.`]);
      expect(await migrationApplied(probe)).toEqual({ rows: 0, column: false });

      await longReport.release();
      const started = await startServer(replicaEnv(db.url!, { MIGRATION_LOCK_TIMEOUT_SECONDS: "0.5" }), 60_000, { root: next });
      await started.stop();
      expect(await migrationApplied(probe)).toEqual({ rows: 1, column: true });
    } finally {
      await report.end();
      await probe.end();
      await db.drop();
    }
  }, 90_000);

  test("A and B replaced one at a time by the new version under steady reads and writes: never a 5xx, the old replica stays ready on the newer schema, the migration applied once", async () => {
    const db: TestDatabase = await createTestDatabase("postgres");
    await db.handle.close();
    const probe = postgres(db.url!, { max: 1, onnotice: () => {} });
    const running: { stop(signal?: NodeJS.Signals): Promise<unknown> }[] = [];
    const lb = new Balancer();
    let traffic: Promise<void>[] = [];
    let driving = true;
    try {
      const env = replicaEnv(db.url!);
      const [a, b] = await Promise.all([startServer(env), startServer(env)]);
      running.push(a, b);
      lb.backends = [
        { name: "A", url: a.url },
        { name: "B", url: b.url },
      ];
      const cli = spawnSync(process.execPath, [MAIN, "org", "create", "--name", "Rolling", "--json"], { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8" });
      expect(cli.status).toBe(0);
      const org = JSON.parse(cli.stdout) as { org_id: string; api_key: string };
      const base = `/beta/v1/org/${org.org_id}`;

      // Three clients, each: create a budget, read it, list, delete it; paced at ≈ 20 rounds a second.
      const unexpected: string[] = [];
      const expectStatus = (what: string, r: { status: number; retried: boolean }, ok: number[]) => {
        if (!ok.includes(r.status)) unexpected.push(`${what}: ${r.status}`);
      };
      const client = async (n: number) => {
        for (let i = 0; driving; i++) {
          const created = await lb.request("POST", `${base}/budgets`, org.api_key, { name: `client ${n} round ${i}`, amount: 100 + i, currency: "USD", thresholds: [{ percent: 80, basis: "actual" }] });
          expectStatus("create", created, [201]);
          if (created.status === 201) {
            expectStatus("read", await lb.request("GET", `${base}/budgets/${created.json.id}`, org.api_key), [200]);
            expectStatus("list", await lb.request("GET", `${base}/budgets`, org.api_key), [200]);
            const deleted = await lb.request("DELETE", `${base}/budgets/${created.json.id}`, org.api_key);
            // A delete retried after a cut connection may find it already deleted.
            expectStatus("delete", deleted, deleted.retried ? [204, 404] : [204]);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      traffic = [0, 1, 2].map(client);
      // A load balancer's health checks: every backend in the pool, every 200 ms (a replica told to stop is left out).
      const readyz: { backend: string; status: number }[] = [];
      const draining = new Set<string>();
      traffic.push(
        (async () => {
          while (driving) {
            for (const backend of lb.backends.filter((x) => !draining.has(x.name)))
              readyz.push({ backend: backend.name, status: await fetch(`${backend.url}/readyz`).then((r) => r.status, () => -1) });
            await new Promise((r) => setTimeout(r, 200));
          }
        })(),
      );
      await until("both replicas serving", () => lb.served("A") >= 10 && lb.served("B") >= 10);

      /** Replaces one replica by the new version: SIGTERM, out of the pool once exited, the new one in once ready. */
      const replace = async (name: string, old: { stop(): Promise<number | null> }) => {
        draining.add(name);
        expect(await old.stop()).toBe(0);
        lb.backends = lb.backends.filter((x) => x.name !== name);
        const spawnedAt = performance.now();
        const fresh = await startServer(env, 90_000, { root: next });
        running.push(fresh);
        lb.backends = [...lb.backends, { name: `${name}'`, url: fresh.url }];
        return { fresh, spawnedAt, readyAt: performance.now() };
      };

      // B → B' (the new version migrates at its start; A, the old version, serves alone meanwhile).
      expect(await migrationApplied(probe)).toEqual({ rows: 0, column: false });
      const b2 = await replace("B", b);
      expect(await migrationApplied(probe)).toEqual({ rows: 1, column: true });
      expect(lb.served("A", b2.spawnedAt)).toBeGreaterThan(0);
      // Old A and new B' side by side on the newer schema.
      await until("A and B' both serving", () => lb.served("A", b2.readyAt) >= 10 && lb.served("B'", b2.readyAt) >= 10);
      // An old replica (re)started now, as an orchestrator restarts a crashed one or a rollback
      // does: nothing of its version is pending, the newer tag is only unknown, so it is ready.
      const old = await startServer(env);
      running.push(old);
      const ready = await (await fetch(`${old.url}/readyz`)).json();
      expect(ready.checks.find((c: any) => c.name === "migrations")).toMatchObject({ status: "ok" });
      await old.stop();

      // A → A' (nothing left to migrate).
      const a2 = await replace("A", a);
      await until("A' and B' both serving", () => lb.served("A'", a2.readyAt) >= 10 && lb.served("B'", a2.readyAt) >= 10);

      driving = false;
      await Promise.all(traffic);
      traffic = [];
      const fiveXX = lb.answers.filter((x) => x.status >= 500);
      expect(fiveXX).toEqual([]);
      expect(unexpected).toEqual([]);
      // Every replica that was in the pool answered its health checks 200 the whole time.
      expect(readyz.filter((r) => r.status !== 200)).toEqual([]);
      expect(new Set(readyz.map((r) => r.backend))).toEqual(new Set(["A", "B", "B'", "A'"]));
      // Applied once: one row, and A' (new version) found it done.
      expect(await migrationApplied(probe)).toEqual({ rows: 1, column: true });
      const tags = (await probe`SELECT tag FROM commitops_migrations ORDER BY tag`).map((r) => r.tag);
      expect(tags).toEqual(["0000_baseline", NEW_TAG]);
      for (const name of ["A", "B", "B'", "A'"]) expect(lb.served(name)).toBeGreaterThan(0);
      console.log(
        `rolling upgrade: ${lb.answers.length} answers (${["A", "B", "B'", "A'"].map((n) => `${n} ${lb.served(n)}`).join(", ")}), ${lb.connectionErrors.length} connection(s) retried on the other replica (${[...new Set(lb.connectionErrors.map((e) => e.error))].join("; ")}), ${readyz.length} health checks`,
      );
    } finally {
      driving = false;
      await Promise.allSettled(traffic);
      for (const p of running) await p.stop("SIGKILL");
      await probe.end();
      await db.drop();
    }
  }, 180_000);
});
