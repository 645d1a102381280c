/**
 * `/readyz` lists its checks (database, migrations, secret key) and is 503 while one fails;
 * `commitops doctor` checks a deployment's settings and exits non-zero with one line per problem.
 */
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { createServices } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { loadConfig, type Config } from "../../lib/config.ts";
import { runDoctor } from "../../lib/ops/doctor.ts";

const root = join(import.meta.dir, "../..");
const KEY = Buffer.alloc(32, 7).toString("base64");
const OTHER_KEY = Buffer.alloc(32, 9).toString("base64");

describeEachDb("readiness and doctor", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: KEY } });
  /** A new app on the same database (its readiness results are its own). */
  const appWith = (config: Partial<Config> = {}) =>
    createApp(createServices(t.s.handle, loadConfig({ PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, apiRateLimitPerMinute: 0, secretKey: KEY, ...config }), createLogger("silent")));
  const readyz = async (app: ReturnType<typeof createApp>) => {
    const r = await app.handle(new Request("http://localhost/readyz"));
    return { status: r.status, retryAfter: r.headers.get("retry-after"), body: (await r.json()) as any };
  };
  const keyIdOf = async (key: string) => {
    const { SecretBox } = await import("../../lib/secrets/index.ts");
    return new SecretBox(key).currentKeyId!;
  };
  const sealedConnection = async (keyId: string) => {
    const [c] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO billing_connections (org_id, name, kind, config, secret_ciphertext, secret_key_id) VALUES ($1, $2, 'aws_data_exports', '{}', 'c2VhbGVk', $3) RETURNING id`,
      [t.org.id, `sealed-${crypto.randomUUID()}`, keyId],
    );
    return c!.id;
  };

  test("/readyz: 200 with every check ok", async () => {
    const r = await readyz(appWith());
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: "ready",
      database: driver,
      checks: [
        { name: "database", status: "ok" },
        { name: "migrations", status: "ok" },
        { name: "secret_key", status: "ok" },
      ],
    });
  });

  test("/readyz: a stored credential sealed under a key this replica lacks is 503 with the checks in detail; ready again at the next poll once fixed", async () => {
    const id = await sealedConnection(await keyIdOf(OTHER_KEY));
    try {
      const app = appWith();
      const r = await readyz(app);
      expect(r.status).toBe(503);
      expect(r.retryAfter).toBe("5");
      expect(r.body.code).toBe("service_unavailable");
      const secret = r.body.detail.checks.find((c: any) => c.name === "secret_key");
      expect(secret.status).toBe("failing");
      expect(secret.message).toContain("COMMITOPS_SECRET_KEY_PREVIOUS");
      expect(r.body.message).toContain("COMMITOPS_SECRET_KEY_PREVIOUS");
      expect(r.body.detail.checks.filter((c: any) => c.status === "ok").map((c: any) => c.name)).toEqual(["database", "migrations"]);
      // The rotation's old key set: ready.
      expect((await readyz(appWith({ previousSecretKeys: [OTHER_KEY] }))).status).toBe(200);
      // Without any key, the message says which setting is missing.
      const none = await readyz(appWith({ secretKey: undefined }));
      expect(none.status).toBe(503);
      expect(none.body.detail.checks.find((c: any) => c.name === "secret_key").message).toContain("COMMITOPS_SECRET_KEY is not set");
      await t.s.handle.query(`DELETE FROM billing_connections WHERE id = $1`, [id]);
      expect((await readyz(app)).status).toBe(200);
    } finally {
      await t.s.handle.query(`DELETE FROM billing_connections WHERE id = $1`, [id]);
    }
  });

  test("/readyz: a migration of this version not applied is 503; doctor says so too", async () => {
    const [{ tag }] = await t.s.handle.query<{ tag: string }>(`SELECT tag FROM commitops_migrations ORDER BY tag LIMIT 1`);
    await t.s.handle.query(`DELETE FROM commitops_migrations WHERE tag = $1`, [tag]);
    try {
      const r = await readyz(appWith());
      expect(r.status).toBe(503);
      const migrations = r.body.detail.checks.find((c: any) => c.name === "migrations");
      expect(migrations).toMatchObject({ status: "failing" });
      expect(migrations.message).toContain(tag);
      const checks = await runDoctor(t.s.config, t.s.handle);
      expect(checks.find((c) => c.name === "migrations")).toMatchObject({ status: "problem" });
    } finally {
      await t.s.handle.query(`INSERT INTO commitops_migrations (tag) VALUES ($1) ON CONFLICT DO NOTHING`, [tag]);
    }
  });

  test("doctor: one problem per wrong setting (http public URL, a credential no key opens, prices older than PRICE_STALE_DAYS); a newer version's migration is a warning", async () => {
    const now = new Date();
    const healthy = await runDoctor(loadConfig({ PUBLIC_URL: "https://commitops.example.com" }, { secretKey: KEY }), t.s.handle, { now: () => now });
    expect(healthy.filter((c) => c.status === "problem")).toEqual([]);
    expect(healthy.map((c) => c.name)).toEqual(expect.arrayContaining(["public_url", "database", "database_version", "clock", "migrations", "secret_key", "catalog"]));
    expect(healthy.find((c) => c.name === "clock")!.status).toBe("ok");

    const id = await sealedConnection("kunknownkey00");
    await t.s.handle.query(`INSERT INTO catalog_feeds (feed, provider, checked_at) VALUES ('doctor-test-feed', 'gcp', $1)`, [new Date(now.getTime() - 40 * 86_400_000).toISOString()]);
    await t.s.handle.query(`INSERT INTO commitops_migrations (tag) VALUES ('9999_from_a_newer_version')`);
    try {
      const checks = await runDoctor(loadConfig({ PUBLIC_URL: "http://commitops.example.com", PRICE_STALE_DAYS: "35" }, { secretKey: KEY }), t.s.handle, { now: () => now });
      const problems = checks.filter((c) => c.status === "problem");
      expect(problems.map((c) => c.name).sort()).toEqual(["catalog", "public_url", "secret_key"]);
      expect(problems.find((c) => c.name === "catalog")!.message).toContain("gcp prices were last confirmed 40 days ago");
      expect(checks.find((c) => c.name === "migrations")).toMatchObject({ status: "warning" });
      for (const p of problems) expect(p.message).not.toContain("\n");
    } finally {
      await t.s.handle.query(`DELETE FROM billing_connections WHERE id = $1`, [id]);
      await t.s.handle.query(`DELETE FROM catalog_feeds WHERE feed = 'doctor-test-feed'`);
      await t.s.handle.query(`DELETE FROM commitops_migrations WHERE tag = '9999_from_a_newer_version'`);
    }
    // No database at all: said, not thrown.
    const unreachable = await runDoctor(t.s.config, null, { openError: "connect ECONNREFUSED" });
    expect(unreachable.find((c) => c.name === "database")).toMatchObject({ status: "problem" });
  });
});

test("`commitops doctor` exits 0 on a sound embedded deployment and 1 with one PROBLEM line per problem", () => {
  const dir = mkdtempSync(join(tmpdir(), "commitops-doctor-"));
  try {
    const run = (env: Record<string, string>, args: string[] = []) =>
      spawnSync(process.execPath, [join(root, "scripts/main.ts"), "doctor", ...args], { cwd: root, env: { ...process.env, DATABASE_URL: "", DATA_DIR: join(dir, "data"), ...env }, encoding: "utf8" });
    // A fresh data directory is migrated on open first (the first server start would do the same).
    spawnSync(process.execPath, [join(root, "scripts/main.ts"), "org", "create", "--name", "x", "--json"], { cwd: root, env: { ...process.env, DATABASE_URL: "", DATA_DIR: join(dir, "data") }, encoding: "utf8" });
    const fine = run({ PUBLIC_URL: "http://localhost:3000" });
    expect([fine.status, fine.stdout]).toEqual([0, expect.stringContaining("No problems.")]);
    const bad = run({ PUBLIC_URL: "http://commitops.example.com", COMMITOPS_SECRET_KEY: "too-short" });
    expect(bad.status).toBe(1);
    const problems = bad.stdout.split("\n").filter((l) => l.startsWith("PROBLEM"));
    expect(problems).toHaveLength(2);
    expect(problems.join("\n")).toContain("public_url");
    expect(problems.join("\n")).toContain("COMMITOPS_SECRET_KEY");
    const json = run({ PUBLIC_URL: "http://commitops.example.com" }, ["--json"]);
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, problems: 1 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
