/**
 * A sync whose export has rows violating FOCUS: nothing of the period is imported, and the error
 * recorded on the run and the connection says what to do for a sync (correct the export) — not
 * the CLI's `--skip-invalid`, which a sync does not have.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { focusMonths, toCsv } from "./fixtures.ts";

const NOW = new Date("2026-11-10T00:00:00Z");
const ACCESS_KEY_ID = "AKIACOMMITOPSREJECT1";
const SECRET_ACCESS_KEY = `s3secret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

const OCT = focusMonths({ now: NOW, months: 2, providers: ["aws"], accountsPerProvider: 1, resourcesPerAccount: 2, grain: "daily" }).get("2026-10")!;

describeEachDb("a sync of an export with invalid rows", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  let s3: S3Server;
  const bucket = `rejects-${driver}`;

  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    const category = OCT.header.indexOf("ChargeCategory");
    const rows = OCT.rows.map((r, i) => (i === 2 ? r.map((v, c) => (c === category ? "Bogus" : v)) : r));
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus", month: "2026-10", files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(toCsv(OCT.header, rows)) }] });
  });
  afterAll(async () => {
    await s3?.stop();
  });

  test("the run fails with cause format; its error says to correct the export, never to skip-invalid; nothing is imported", async () => {
    const created = await t.orgRequest("POST", "/billing-connections", {
      body: { name: "With rejects", kind: "aws_data_exports", config: { bucket, prefix: "cur", export_name: "focus", region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url: s3.endpoint }, secrets: { secret_access_key: SECRET_ACCESS_KEY } },
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as any).id;
    const queued = await t.orgRequest("POST", `/billing-connections/${id}/sync`);
    expect(queued.status).toBe(202);
    const runId = ((await queued.json()) as any).id;
    let run: any;
    for (let i = 0; i < 1200 && !(run && (run.status === "failed" || run.status === "succeeded")); i++) {
      if (i) await Bun.sleep(50);
      run = (((await (await t.orgRequest("GET", `/billing-connections/${id}/runs`)).json()) as any[]) ?? []).find((r) => r.id === runId);
    }
    expect(run.status).toBe("failed");
    expect(run.error_cause).toBe("format");
    const c = (await (await t.orgRequest("GET", `/billing-connections/${id}`)).json()) as any;
    expect(c.last_error).toBe(run.error);
    for (const message of [run.error as string, c.last_error as string]) {
      expect(message).toStartWith("1 row(s) of the export violate the FOCUS specification, so the period was not imported and its previous data is kept.");
      expect(message).toContain("Correct the rows at the source of the export");
      expect(message).toContain("line 4: ");
      expect(message).not.toMatch(/skip.invalid/i);
    }
    const [n] = await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM billing_line_items WHERE org_id = $1", [t.org.id]);
    expect(n!.n).toBe("0");
  });
});
