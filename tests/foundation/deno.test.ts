import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";

const root = join(import.meta.dir, "../..");
const deno = join(root, "node_modules/.bin/deno");

test("the runtime-neutral app serves /readyz under Deno on the embedded database", async () => {
  const data = mkdtempSync(join(tmpdir(), "commitops-deno-"));
  const port = await freePort();
  const p = startProcess(deno, ["run", "-A", "--no-lock", join(root, "scripts/server.deno.ts")], {
    cwd: root,
    env: { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: data, DATABASE_URL: "", LOG_LEVEL: "warn", SEED_DEMO: "false", DENO_NO_UPDATE_CHECK: "1" },
  });
  try {
    const res = await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 120_000);
    expect(await res.json()).toEqual({
      status: "ready",
      database: "pglite",
      checks: ["database", "migrations", "secret_key"].map((name) => ({ name, status: "ok" })),
    });
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const missing = await fetch(`http://127.0.0.1:${port}/beta/v1/org/${crypto.randomUUID()}`);
    expect(missing.status).toBe(401);
  } finally {
    await p.stop();
    rmSync(data, { recursive: true, force: true });
  }
}, 180_000);
