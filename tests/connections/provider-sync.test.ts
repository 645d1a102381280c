/**
 * Azure cost exports (Azurite) and the GCP BigQuery FOCUS view (loopback BigQuery REST) synced
 * end to end through the API: the allocation reports equal a CLI-style import of the same rows.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startAzurite, writeAzureFocusExport, type Azurite } from "../helpers/azurite.ts";
import { startBigQueryServer, type BigQueryField, type BigQueryServer } from "../helpers/bigqueryServer.ts";
import { writeFocusParquet } from "../helpers/parquetFixture.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";
import { expectSameReports, focusMonths, toCsv } from "./fixtures.ts";

const NOW = new Date("2026-11-10T00:00:00Z");
const months = focusMonths({ now: NOW, months: 2, providers: ["azure", "gcp"], accountsPerProvider: 2, resourcesPerAccount: 2, grain: "daily" });
const providerAt = months.get("2026-10")!.header.indexOf("ProviderName");
const only = (provider: string) => new Map([...months].map(([m, v]) => [m, { header: v.header, rows: v.rows.filter((r) => r[providerAt] === provider) }]));
const AZURE = only("Microsoft");
const GCP = only("Google Cloud");

describeEachDb("billing connections: Azure exports and the BigQuery FOCUS view, end to end", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  let azurite: Azurite;
  let bigquery: BigQueryServer;

  beforeAll(async () => {
    expect(AZURE.get("2026-10")!.rows.length).toBeGreaterThan(10);
    expect(GCP.get("2026-10")!.rows.length).toBeGreaterThan(10);
    azurite = await startAzurite();
    const service = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey));
    const container = service.getContainerClient("cost-exports");
    await container.create();
    for (const [month, m] of AZURE) {
      const half = Math.floor(m.rows.length / 2);
      await writeAzureFocusExport(container, {
        directory: "focus/acme-focus",
        month,
        runId: crypto.randomUUID(),
        submittedTime: `${month}-05T08:00:00Z`,
        format: month === "2026-10" ? "Csv" : "Parquet",
        compression: month === "2026-10" ? "gzip" : "snappy",
        files:
          month === "2026-10"
            ? [{ name: "part_0_0001.csv.gz", bytes: gzipSync(toCsv(m.header, m.rows.slice(0, half))) }, { name: "part_1_0001.csv.gz", bytes: gzipSync(toCsv(m.header, m.rows.slice(half))) }]
            : [{ name: "part_0_0001.snappy.parquet", bytes: writeFocusParquet(m.header, m.rows, { rowGroupSize: 40 }) }],
      });
    }
    const header = GCP.get("2026-10")!.header;
    const schema: BigQueryField[] = header.map((name) => ({ name, type: /(Cost|Quantity|UnitPrice)$/.test(name) ? "NUMERIC" : /^(BillingPeriod|ChargePeriod)(Start|End)$/.test(name) ? "TIMESTAMP" : "STRING" }));
    const rows = [...GCP.values()].flatMap((m) => m.rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] === "" ? null : r[i]]))));
    bigquery = await startBigQueryServer({ projectId: "acme-billing", dataset: "billing_export", table: "focus_view", rows, schema, pageSize: 50 });
  });
  afterAll(async () => {
    await azurite?.stop();
    await bigquery?.stop();
  });

  async function syncAndCompare(kind: string, config: Record<string, string>, secrets: Record<string, string>, data: typeof AZURE) {
    const org = await t.newOrg(kind);
    const created = await t.request("POST", `/beta/v1/org/${org.id}/billing-connections`, { key: org.key, body: { name: kind, kind, config, secrets } });
    const body = await created.json();
    expect(created.status, JSON.stringify(body)).toBe(201);
    const tested = await (await t.request("POST", `/beta/v1/org/${org.id}/billing-connections/${body.id}/test`, { key: org.key })).json();
    expect(tested).toMatchObject({ ok: true, periods: [{ month: "2026-10" }, { month: "2026-11" }] });
    const [run] = await runDueSyncs(t.s, { connectionId: body.id });
    const total = [...data.values()].reduce((n, m) => n + m.rows.length, 0);
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 2, rows_imported: total });
    const [again] = await runDueSyncs(t.s, { connectionId: body.id, limit: 1 });
    expect(again).toBeUndefined(); // not due again until the interval passes
    const cli = await t.newOrg(`${kind} by file`);
    for (const m of data.values()) await importFocus(t.s.db, cli.id, Readable.from([toCsv(m.header, m.rows)]), { now: NOW });
    await expectSameReports(t, org, cli, ["commitment_cost_by_account", "cloud_bill_by_service", "cloud_bill_by_resource"], [10, 11]);
  }

  test("Azure: CSV.gz and Parquet runs in Blob Storage, account key", async () => {
    await syncAndCompare("azure_cost_exports", { storage_account_url: azurite.url, container: "cost-exports", directory: "focus/acme-focus" }, { account_key: azurite.accountKey }, AZURE);
  }, 60_000);

  test("Azure without a directory reads the container root (no export there: no_export)", async () => {
    const created = await t.orgRequest("POST", "/billing-connections", { body: { name: "root", kind: "azure_cost_exports", config: { storage_account_url: azurite.url, container: "cost-exports" }, secrets: { account_key: azurite.accountKey } } });
    expect(created.status).toBe(201);
    const tested = await (await t.orgRequest("POST", `/billing-connections/${(await created.json()).id}/test`)).json();
    expect(tested).toMatchObject({ ok: false, cause: "no_export" });
  });

  test("GCP: the BigQuery FOCUS view, service-account key", async () => {
    await syncAndCompare("gcp_bigquery_focus", { project_id: "acme-billing", dataset: "billing_export", table: "focus_view", endpoint_url: bigquery.endpoint }, { service_account_key: bigquery.serviceAccountKey }, GCP);
  }, 60_000);
});
