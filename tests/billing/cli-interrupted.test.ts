/**
 * `commitops import focus` cut part-way, as an operator runs it (a separate process): a file that
 * fails while being read, or the database connection killed in the middle of the COPY. The CLI
 * prints one line (no stack) and exits 1, and nothing of the import is kept.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { gzipSync } from "node:zlib";
import { createTestDatabase, testDrivers, type DriverName, type TestDatabase } from "../helpers/db.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcpProxy.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { writeFocusCsv } from "../../lib/billing/generator.ts";

const MAIN = join(import.meta.dir, "..", "..", "scripts", "main.ts");
const NOW = new Date("2026-06-10T00:00:00Z");

/** A small generated FOCUS file as text (header line first). */
async function focusText(): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (c) => chunks.push(c));
  await writeFocusCsv({ now: NOW, months: 1, providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 3, grain: "daily", commitments: false }, out);
  out.end();
  return Buffer.concat(chunks).toString("utf8");
}

/** Runs the CLI; stdout and stderr apart. */
function runCli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, LOG_LEVEL: "error", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return { exited, out: () => stdout, err: () => stderr };
}

/** One line of `error: …`, no stack frame. */
function expectOneLineError(stderr: string, contains: string) {
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toStartWith("error: ");
  expect(lines[0]).toContain(contains);
  expect(stderr).not.toContain("    at ");
  expect(stderr).not.toContain("TypeError");
}

for (const driver of testDrivers()) {
  describe(`import focus cut part-way [${driver}]`, () => {
    const dir = mkdtempSync(join(tmpdir(), "commitops-cut-"));
    let db: TestDatabase | null = null;
    let orgId = "";
    let env: Record<string, string> = {};
    let text = "";

    beforeAll(async () => {
      text = await focusText();
      if (driver === "postgres") {
        db = await createTestDatabase(driver as DriverName);
        orgId = (await createOrganization(db.handle.db, { name: "Cut" })).id;
        env = { DATABASE_URL: db.url!, DATA_DIR: "" };
      } else {
        env = { DATABASE_URL: "", DATA_DIR: join(dir, "data") };
        const r = spawnSync(process.execPath, [MAIN, "org", "create", "--name", "Cut", "--json"], { encoding: "utf8", env: { ...process.env, LOG_LEVEL: "error", ...env } });
        orgId = JSON.parse(r.stdout.slice(r.stdout.indexOf("{"))).org_id;
      }
    }, 120_000);
    afterAll(async () => {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    test("a truncated .csv.gz: one line, exit 1", async () => {
      const gz = gzipSync(text);
      const file = join(dir, "cut.csv.gz");
      writeFileSync(file, gz.subarray(0, Math.floor(gz.length / 2)));
      const run = runCli(["import", "focus", "--org", orgId, file], env);
      expect(await run.exited).toBe(1);
      expectOneLineError(run.err(), "not valid gzip");
      expect(run.err()).toContain("nothing was imported");
    }, 120_000);

    test("invalid rows: the CLI names its remedy, --skip-invalid (a sync's message names another)", async () => {
      const run = runCli(["import", "focus", "--org", orgId, join(import.meta.dir, "../../data/focus/focus_sample_1000.csv")], env);
      expect(await run.exited).toBe(1);
      expectOneLineError(run.err(), "7 row(s) violate the FOCUS specification; nothing was imported (--skip-invalid keeps the valid rows");
      expect(run.err()).toContain("line 927");
    }, 120_000);

    if (driver !== "postgres") return;

    test("the database connection reset in the middle of the COPY: one line, exit 1, nothing kept", async () => {
      const url = new URL(db!.url!);
      const proxy: TcpProxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
      try {
        // A FIFO: the import reads the first half, then waits for the rest while its COPY is open.
        const fifo = join(dir, "slow.csv");
        expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
        const run = runCli(["import", "focus", "--org", orgId, fifo], { ...env, DATABASE_URL: proxy.urlFor(db!.url!) });
        const feed = createWriteStream(fifo);
        feed.on("error", () => {}); // the reader may be gone by the time the rest is written
        const lines = text.split("\n");
        const half = Math.floor(lines.length / 2);
        feed.write(lines.slice(0, half).join("\n") + "\n");
        // Wait until the import's COPY runs on the server (the first batch is written).
        const name = url.pathname.slice(1);
        for (let i = 0; ; i++) {
          const [r] = await db!.handle.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'COPY billing_line_items%'`, [name]);
          if (Number(r!.n) > 0) break;
          if (i > 1200) throw new Error(`the import's COPY never started: ${run.err()}`);
          await Bun.sleep(50);
        }
        proxy.reset();
        feed.end(lines.slice(half).join("\n"));
        expect(await run.exited).toBe(1);
        expectOneLineError(run.err(), "database connection was lost during the import");
        expect(run.err()).toContain("nothing was imported");
        const [n] = await db!.handle.query<{ n: string }>(`SELECT count(*)::text AS n FROM billing_line_items WHERE org_id = $1`, [orgId]);
        expect(n!.n).toBe("0");
      } finally {
        await proxy.close();
      }
    }, 120_000);
  });
}
