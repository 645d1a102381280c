import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";

const root = join(import.meta.dir, "../..");

function commitops(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [join(root, "scripts/main.ts"), ...args], { cwd: root, env: { ...process.env, DATABASE_URL: "", LOG_LEVEL: "warn", ...env }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`commitops ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

test("SIGTERM lets an in-flight request finish: a CSV download started before it arrives completes", async () => {
  const dir = mkdtempSync(join(tmpdir(), "commitops-shutdown-"));
  const env = { DATA_DIR: join(dir, "data") };
  const { org_id, api_key } = JSON.parse(commitops(["org", "create", "--name", "Big", "--json"], env));
  commitops(["generate", "focus", "--out", join(dir, "bill.csv"), "--months", "1", "--accounts", "500", "--resources", "200", "--grain", "monthly", "--providers", "aws"], env);
  commitops(["import", "focus", "--org", org_id, join(dir, "bill.csv")], env);
  const now = new Date();

  const port = await freePort();
  const p = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: { ...env, PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: "", SEED_DEMO: "false", JOBS_ENABLED: "false", LOG_LEVEL: "info" } });
  try {
    await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 90_000);
    const res = await fetch(`http://127.0.0.1:${port}/beta/v1/org/${org_id}/allocation-reports/cloud_bill_by_resource?year=${now.getUTCFullYear()}&month=${now.getUTCMonth() + 1}&format=csv`, {
      headers: { authorization: `Bearer ${api_key}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read(); // the download is under way…
    p.child.kill("SIGTERM"); // …when the server is asked to stop, and the client reads slowly
    await new Promise((r) => setTimeout(r, 1500));
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const lines = text.trimEnd().split("\r\n");
    expect(lines.length).toBeGreaterThan(100_000); // every resource row arrived, not a cut stream
    expect(lines.at(-1)!.split(",").length).toBe(lines[0]!.split(",").length);
    expect(await p.exited).toBe(0);
    expect(p.output()).toContain('"msg":"shutting down"');
    // and it no longer accepts connections
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);
