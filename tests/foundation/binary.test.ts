import { expect, test } from "bun:test";
import { mkdtempSync, copyFileSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";
import { SCALAR_VERSION } from "../../lib/http/docs.ts";

const root = join(import.meta.dir, "../..");

test("the compiled binary (within 150 MB) serves /readyz and the embedded /docs script from a directory with no node_modules", async () => {
  const build = mkdtempSync(join(tmpdir(), "commitops-build-"));
  const outfile = join(build, "commitops");
  const r = spawnSync(process.execPath, [join(root, "scripts/build.ts")], { cwd: root, env: { ...process.env, OUTFILE: outfile }, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  // Issue 29's size budget.
  expect(statSync(outfile).size).toBeLessThanOrEqual(150_000_000);
  const run = mkdtempSync(join(tmpdir(), "commitops-run-"));
  copyFileSync(outfile, join(run, "commitops"));
  expect(readdirSync(run)).toEqual(["commitops"]);
  const port = await freePort();
  const p = startProcess(join(run, "commitops"), [], { cwd: run, env: { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: join(run, "data"), DATABASE_URL: "", LOG_LEVEL: "warn" } });
  try {
    const res = await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 90_000);
    expect((await res.json()).database).toBe("pglite");
    expect(p.output()).toContain("Demo org:");
    const script = await fetch(`http://127.0.0.1:${port}/docs/scalar.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("application/javascript");
    const js = await script.text();
    expect(js.length).toBeGreaterThan(1_000_000);
    expect(js).toContain(`@scalar/api-reference@${SCALAR_VERSION}`);
    expect(existsSync(join(run, "node_modules"))).toBe(false);
  } finally {
    await p.stop();
    rmSync(build, { recursive: true, force: true });
    rmSync(run, { recursive: true, force: true });
  }
}, 180_000);
