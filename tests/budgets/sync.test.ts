/**
 * A billing connection's sync (AWS Data Exports in a loopback S3) evaluates the org's budgets
 * once its periods are in: the threshold the synced data crosses fires, through the same API a
 * user syncs with; an unchanged re-sync fires nothing; a restated month fires what it newly crosses.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { dailyRows, focusCsv } from "./helpers.ts";

const NOW = new Date("2026-06-20T08:00:00Z");
const ACCESS_KEY_ID = "AKIACOMMITOPSBUDGET1";
const SECRET_ACCESS_KEY = `s3secret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

describeEachDb("budgets evaluated after a billing sync", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  let s3: S3Server;
  const bucket = `budgets-${driver}`;
  let connectionId = "";
  let budgetId = "";

  const writeJune = (perDay: number) =>
    writeAwsExport(s3.client, {
      bucket,
      prefix: "cur",
      exportName: "focus",
      month: "2026-06",
      files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(focusCsv(dailyRows([{ account: "111", service: "EC2", perDay }], "2026-06-01", "2026-06-20"))) }],
    });

  async function sync() {
    const queued = await t.orgRequest("POST", `/billing-connections/${connectionId}/sync`);
    expect(queued.status).toBe(202);
    const runId = ((await queued.json()) as any).id;
    for (let i = 0; i < 1200; i++) {
      const run = (((await (await t.orgRequest("GET", `/billing-connections/${connectionId}/runs`)).json()) as any[]) ?? []).find((r) => r.id === runId);
      if (run && (run.status === "failed" || run.status === "succeeded")) return run;
      await Bun.sleep(50);
    }
    throw new Error("the sync did not finish");
  }

  const fired = async () =>
    (await t.s.handle.query<{ dedupe_key: string; data: any }>(`SELECT dedupe_key, data FROM events WHERE org_id = $1 AND type = 'budget.threshold_crossed' ORDER BY seq`, [t.org.id])).map((e) =>
      e.dedupe_key.replace(`budget:${budgetId}:`, ""),
    );

  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    await writeJune(20);
    const created = await t.orgRequest("POST", "/billing-connections", {
      body: { name: "AWS payer", kind: "aws_data_exports", config: { bucket, prefix: "cur", export_name: "focus", region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url: s3.endpoint }, secrets: { secret_access_key: SECRET_ACCESS_KEY } },
    });
    expect(created.status).toBe(201);
    connectionId = ((await created.json()) as any).id;
    const b = await t.orgRequest("POST", "/budgets", { body: { name: "EC2", amount: 500, currency: "USD", filter: { service: "EC2" }, thresholds: [{ percent: 50, basis: "actual" }, { percent: 100, basis: "actual" }] } });
    expect(b.status).toBe(201);
    budgetId = ((await b.json()) as any).id;
  });
  afterAll(async () => {
    await s3?.stop();
  });

  test("the synced month crosses 50%: fired once the sync is in; an unchanged re-sync fires nothing", async () => {
    expect(await fired()).toEqual([]);
    const run = await sync();
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 1 });
    expect(await fired()).toEqual(["2026-06:actual:50"]);
    const status = ((await (await t.orgRequest("GET", `/budgets/${budgetId}`)).json()) as any).status;
    expect(status).toMatchObject({ month: "2026-06", actual: 19 * 20, percent_used: 76 });

    expect(await sync()).toMatchObject({ status: "succeeded", periods_imported: 0, periods_unchanged: 1 });
    expect(await fired()).toEqual(["2026-06:actual:50"]);
  });

  test("the provider restates the month: the sync brings it and the budget fires 100%, once", async () => {
    await writeJune(30);
    expect(await sync()).toMatchObject({ status: "succeeded", periods_imported: 1 });
    expect(await fired()).toEqual(["2026-06:actual:50", "2026-06:actual:100"]);
    const status = ((await (await t.orgRequest("GET", `/budgets/${budgetId}`)).json()) as any).status;
    expect(status).toMatchObject({ actual: 19 * 30, percent_used: 114, remaining: 500 - 19 * 30 });
  });
});
