/** The billing CLI end to end, as an operator runs it (separate processes on an embedded database). */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { FOCUS_DIR } from "../reports/helpers.ts";

const MAIN = join(import.meta.dir, "..", "..", "scripts", "main.ts");

describe("billing CLI", () => {
  const dir = mkdtempSync(join(tmpdir(), "commitops-cli-"));
  const run = (...args: string[]) => {
    const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", env: { ...process.env, DATA_DIR: dir, DATABASE_URL: "", LOG_LEVEL: "error" }, timeout: 60_000 });
    return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout.slice(r.stdout.indexOf("{"))) };
  };

  test("import (all-or-nothing, then skip-invalid with a rejects file), periods close freezes, periods list", () => {
    const org = run("org", "create", "--name", "CLI org", "--json").json().org_id as string;
    const refused = run("import", "focus", "--org", org, `${FOCUS_DIR}/focus_sample_1000.csv`);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("line 927");

    const rejects = join(dir, "rejects.csv");
    const ok = run("import", "focus", "--org", org, "--skip-invalid", "--rejects", rejects, `${FOCUS_DIR}/focus_sample_1000.csv`, "--json");
    expect(ok.code).toBe(0);
    expect(ok.json()).toMatchObject({ rows_imported: 993, rows_rejected: 7, rejects_file: rejects });
    const lines = readFileSync(rejects, "utf8").trim().split("\n");
    expect(lines.length).toBe(8);
    expect(lines[1]).toStartWith('927,"ContractedCost must not be null; ProviderName ""Oracle"" is not a supported provider');

    const closed = run("periods", "close", "--org", org, "--provider", "aws", "--month", "2024-09", "--json");
    expect(closed.code).toBe(0);
    const c = closed.json();
    expect(c).toMatchObject({ provider: "aws", month: "2024-09-01", status: "closed" });
    expect(c.frozen_at).not.toBeNull();
    expect(c.snapshot_rows).toBeGreaterThan(0);

    const bad = run("periods", "close", "--org", org, "--provider", "aws", "--month", "2024-9");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("--month must be YYYY-MM");

    const out = join(dir, "gen.csv.gz");
    const gen = run("generate", "focus", "--out", out, "--months", "1", "--grain", "daily", "--providers", "aws,gcp", "--accounts", "2", "--resources", "2", "--json");
    expect(gen.code).toBe(0);
    expect(gen.json().rows).toBeGreaterThan(50);
    const imported = run("import", "focus", "--org", org, out, "--json");
    expect(imported.code).toBe(0);
    expect(imported.json()).toMatchObject({ rows_imported: gen.json().rows, rows_rejected: 0 });
    // The same file again, as a person reads the answer: nothing written, and which import holds it.
    const again = run("import", "focus", "--org", org, out);
    expect(again.code).toBe(0);
    expect(again.out.trim()).toBe(`Unchanged: gen.csv.gz has the content of import ${imported.json().import_id} (${gen.json().rows} rows), whose rows are all still current; nothing was written.`);
    const againJson = run("import", "focus", "--org", org, out, "--json").json();
    expect(againJson).toMatchObject({ unchanged: true, import_id: imported.json().import_id, rows_imported: 0, rows_unchanged: gen.json().rows });

    const list = run("periods", "list", "--org", org);
    expect(list.out).toMatch(/aws\s+2024-09 closed\s+frozen/);
    expect(list.out).toMatch(/azure\s+2024-09 open/);
  }, 120_000);
});
