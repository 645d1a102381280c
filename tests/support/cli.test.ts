import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { commands } from "../../scripts/cli/index.ts";
import { CliError } from "../../scripts/cli/types.ts";
import { validBug, validFeature } from "./fixtures.ts";

const cmd = (name: string) => {
  const c = commands.find((c) => c.group === "tickets" && c.name === name);
  if (!c) throw new Error(`tickets ${name} is not registered`);
  return c;
};

describeEachDb("support: service-team CLI", (driver) => {
  const t = useTestApp(driver, { config: { supportDailyCap: 100 } });
  let other: { id: string; key: string };
  const keys: { org: string[]; other: string[] } = { org: [], other: [] };

  beforeAll(async () => {
    other = await t.newOrg("Other");
    for (let i = 0; i < 2; i++) {
      const r = await t.orgRequest("POST", "/support/bug-reports", { body: { ...validBug(), summary: `A bug ${i}` } });
      keys.org.push(((await r.json()) as any).ticket_key);
    }
    const r = await t.request("POST", `/beta/v1/org/${other.id}/support/feature-requests`, { key: other.key, body: validFeature() });
    keys.other.push(((await r.json()) as any).ticket_key);
  });

  test("tickets list: every org newest first; --org limits to one org", async () => {
    const all = (await cmd("list").run(t.s, {}, [])) as any[];
    expect(all.map((r) => r.ticket_key)).toEqual([keys.other[0], keys.org[1], keys.org[0]]);
    const mine = (await cmd("list").run(t.s, { org: t.org.id }, [])) as any[];
    expect(mine.map((r) => r.ticket_key)).toEqual([keys.org[1], keys.org[0]]);
    expect(mine[0]).toMatchObject({ kind: "bug", org_id: t.org.id, summary: "A bug 1", delivery: "none" });
    const theirs = (await cmd("list").run(t.s, { org: other.id }, [])) as any[];
    expect(theirs.map((r) => r.ticket_key)).toEqual(keys.other);
    expect(await cmd("list").run(t.s, { org: crypto.randomUUID() }, [])).toEqual([]);
    const text = cmd("list").human!(mine);
    expect(text).toContain(keys.org[0]);
    expect(text).not.toContain(keys.other[0]);
  });

  test("tickets show: every field; unknown or malformed keys are errors", async () => {
    const shown = (await cmd("show").run(t.s, {}, [keys.other[0]!])) as any;
    expect(shown).toMatchObject({ ticket_key: keys.other[0], kind: "feature", org_id: other.id, ...validFeature() });
    const text = cmd("show").human!(shown);
    for (const v of Object.values(validFeature())) expect(text).toContain(v);
    await expect(cmd("show").run(t.s, {}, ["SUP-999999"])).rejects.toBeInstanceOf(CliError);
    await expect(cmd("show").run(t.s, {}, ["12"])).rejects.toBeInstanceOf(CliError);
    await expect(cmd("list").run(t.s, { org: "not-a-uuid" }, [])).rejects.toBeInstanceOf(CliError);
  });

  if (driver === "postgres") {
    test("the real CLI process lists and shows tickets as JSON", async () => {
      const env = { ...process.env, DATABASE_URL: t.db.url!, LOG_LEVEL: "silent" };
      const run = (args: string[]) => {
        const p = Bun.spawnSync([process.execPath, "scripts/main.ts", ...args], { env, stdout: "pipe", stderr: "pipe" });
        return { code: p.exitCode, out: p.stdout.toString() };
      };
      const list = run(["tickets", "list", "--org", other.id, "--json"]);
      expect(list.code).toBe(0);
      expect(JSON.parse(list.out).map((r: any) => r.ticket_key)).toEqual(keys.other);
      const show = run(["tickets", "show", keys.org[0]!, "--json"]);
      expect(show.code).toBe(0);
      expect(JSON.parse(show.out)).toMatchObject({ ticket_key: keys.org[0], summary: "A bug 0" });
      expect(run(["tickets", "show", "SUP-999999"]).code).toBe(1);
    }, 60_000);
  }
});
