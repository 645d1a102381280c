import { expect, test, describe } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";
import { SCOPES } from "../../lib/auth/scopes.ts";

const root = join(import.meta.dir, "../..");
const cli = join(root, "scripts/commitops.mjs");

function commitops(args: string[], env: Record<string, string>) {
  const r = spawnSync("node", [cli, ...args], { cwd: root, env: { ...process.env, DATABASE_URL: "", LOG_LEVEL: "warn", ...env }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("commitops CLI and server start-up", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "commitops-cli-"));
  const env = { DATA_DIR: dataDir };

  test("org create --json prints the org id and an admin key holding every scope", () => {
    const r = commitops(["org", "create", "--name", "Acme FinOps", "--json"], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.org_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(out.api_key).toStartWith("co_");
    const child = commitops(["org", "create", "--name", "Acme EU", "--parent", out.org_id, "--json"], env);
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout).parent_id).toBe(out.org_id);
    const keys = commitops(["apikey", "list", "--org", out.org_id, "--json"], env);
    expect(JSON.parse(keys.stdout)[0].scopes).toEqual([...SCOPES]);
  }, 180_000);

  test("user create, member add, apikey create/revoke", () => {
    const org = JSON.parse(commitops(["org", "create", "--name", "Beta", "--json"], env).stdout);
    const u = commitops(["user", "create", "--email", "ana@example.com", "--password", "correct horse battery", "--json"], env);
    expect(u.code).toBe(0);
    expect(commitops(["member", "add", "--org", org.org_id, "--user", "ana@example.com", "--role", "viewer", "--json"], env).code).toBe(0);
    const k = JSON.parse(commitops(["apikey", "create", "--org", org.org_id, "--scopes", "reports:read", "--json"], env).stdout);
    expect(k.scopes).toEqual(["reports:read"]);
    expect(commitops(["apikey", "revoke", "--id", k.key_id, "--json"], env).code).toBe(0);
  }, 180_000);

  test("bad input: clear message and non-zero exit", () => {
    const noName = commitops(["org", "create"], env);
    expect(noName.code).not.toBe(0);
    expect(noName.stderr).toContain("--name is required");
    const badScope = commitops(["apikey", "create", "--org", crypto.randomUUID(), "--scopes", "everything"], env);
    expect(badScope.code).not.toBe(0);
    expect(badScope.stderr).toContain("Unknown scope");
    const badRole = commitops(["member", "add", "--org", "nope", "--user", "x", "--role", "admin"], env);
    expect(badRole.code).not.toBe(0);
    const unknown = commitops(["frobnicate", "now"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command");
  }, 180_000);

  test("server: seeds the demo org once, CLI refuses the held database clearly, SIGTERM exits cleanly", async () => {
    const port = await freePort();
    const start = () => startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: { ...env, PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: "", LOG_LEVEL: "info" } });
    let p = start();
    await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 90_000);
    await new Promise((r) => setTimeout(r, 300));
    const first = p.output();
    const orgId = /Demo org: ([0-9a-f-]{36})/.exec(first)?.[1];
    const key = /Demo API key \(shown once, keep it\): (co_\S+)/.exec(first)?.[1];
    expect(orgId).toBeDefined();
    expect(key).toBeDefined();
    const r = await fetch(`http://127.0.0.1:${port}/beta/v1/org/${orgId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-request-id")).toBeTruthy();

    const held = commitops(["org", "create", "--name", "x"], env);
    expect(held.code).toBe(3);
    expect(held.stderr).toContain("held by a running commitops process");

    expect(await p.stop("SIGTERM")).toBe(0);
    expect(p.output()).toContain('"msg":"shutting down"');
    const logLines = p.output().split("\n").filter((l) => l.startsWith("{"));
    expect(logLines.length).toBeGreaterThan(1);
    expect(logLines.join("\n")).not.toContain(key!); // shown in the banner only, never logged
    p = start();
    await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 90_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(p.output()).toContain(`Demo org: ${orgId}`);
    expect(p.output()).not.toContain("shown once, keep it");
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 200_000);
});
