import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createTemplate } from "../../lib/templates/service.ts";
import { utcDate } from "../../lib/templates/schedule.ts";
import { OFFERS, seedCatalog, seedUsage } from "./fixtures.ts";

const ROOT = join(import.meta.dir, "..", "..");

interface Proc {
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>;
  kill(sig: NodeJS.Signals): void;
  waitFor(text: string, ms: number): Promise<void>;
}

/** `commitops autopurchase tick` in its own process against the test database. */
function tick(url: string, env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ["scripts/main.ts", "autopurchase", "tick", "--json"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "silent", SEED_DEMO: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => {
    stderr += d;
    for (const w of waiters) if (stderr.includes(w.text)) w.resolve();
  });
  const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    done,
    kill: (sig) => child.kill(sig),
    waitFor: (text, ms) =>
      new Promise<void>((resolve, reject) => {
        if (stderr.includes(text)) return resolve();
        const timer = setTimeout(() => reject(new Error(`timed out waiting for "${text}"; stderr: ${stderr}`)), ms);
        waiters.push({ text, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

// Needs a PostgreSQL server shared by several processes: skipped without TEST_DATABASE_URL.
const maybe = process.env.TEST_DATABASE_URL ? describe : describe.skip;

maybe("auto-purchase across processes [postgres]", () => {
  let db: TestDatabase;
  let s: Services;

  beforeAll(async () => {
    db = await createTestDatabase("postgres");
    s = createServices(db.handle, loadConfig({ ...process.env }, { jobsEnabled: false, seedDemo: false }), createLogger("silent"));
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function scheduledTemplate(): Promise<{ orgId: string; templateId: string }> {
    const org = await createOrganization(s.db, { name: "Multi-process org" });
    await seedCatalog(s.db, org.id);
    const now = new Date();
    await seedUsage(s.db, org.id, new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000), 7 * 24, () => 5);
    const tpl = await createTemplate(
      s.db,
      org.id,
      {
        provider: "aws",
        name: "Nightly",
        configuration: { contract_specs: [{ commitment_type: OFFERS.oneYearNoUpfront.commitmentType, contract_term: "one_year", payment_option: "no_upfront" }], lookback_days: 7 },
        auto_purchase: { schedule: "daily", start_date: utcDate(now), enabled: true, min_monthly_savings: 0 },
      },
      now,
    );
    return { orgId: org.id, templateId: tpl.id };
  }

  const purchasesOf = async (templateId: string) =>
    Number((await s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM purchases WHERE template_id = $1", [templateId]))[0]!.n);
  const commitmentsOf = async (orgId: string) =>
    Number((await s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitments WHERE org_id = $1", [orgId]))[0]!.n);

  test("two processes racing the same due schedule buy once", async () => {
    const { orgId, templateId } = await scheduledTemplate();
    const [a, b] = await Promise.all([tick(db.url!).done, tick(db.url!).done]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const outcomes = [a, b].flatMap((r) => JSON.parse(r.stdout).runs).filter((r: any) => r.template_id === templateId).map((r: any) => r.outcome);
    expect(outcomes).toEqual(["purchased"]);
    expect(await purchasesOf(templateId)).toBe(1);
    expect(await commitmentsOf(orgId)).toBe(1);
  }, 60_000);

  test("a process killed mid-purchase leaves nothing; the restart buys exactly once", async () => {
    const { orgId, templateId } = await scheduledTemplate();
    const slow = tick(db.url!, { COMMITOPS_TEST_PURCHASE_DELAY_MS: "30000" });
    await slow.waitFor(`purchase-started ${templateId}`, 30_000);
    slow.kill("SIGKILL");
    const killed = await slow.done;
    expect(killed.signal).toBe("SIGKILL");
    expect(await purchasesOf(templateId)).toBe(0);
    // the server notices the dead connection and rolls back; the restart takes the slot
    let restart;
    for (let i = 0; i < 20; i++) {
      restart = await tick(db.url!).done;
      if (await purchasesOf(templateId)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(restart!.code).toBe(0);
    expect(await purchasesOf(templateId)).toBe(1);
    const again = await tick(db.url!).done;
    expect(JSON.parse(again.stdout).runs.filter((r: any) => r.template_id === templateId)).toHaveLength(0);
    expect(await purchasesOf(templateId)).toBe(1);
    expect(await commitmentsOf(orgId)).toBe(1);
  }, 120_000);
});
