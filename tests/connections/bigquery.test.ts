/**
 * The GCP billing connection against a loopback BigQuery (jobs.query / jobs.getQueryResults and
 * the OAuth2 JWT bearer grant): periods and their fingerprints, paged period rows converted to
 * exact text, and each provider refusal mapped to its failure cause. Rows follow the columns and
 * values of a GCP FOCUS 1.2 export (Compute Engine and Cloud Functions usage).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:net";
import type { CsvBatch } from "../../lib/billing/csvReader.ts";
import type { GcpConfig, GcpSecrets } from "../../lib/connections/kinds.ts";
import { bigQueryFocusReader as openReader } from "../../lib/connections/readers/bigquery.ts";
import { ConnectionFailure, type SourcePeriod } from "../../lib/connections/source.ts";
import { joinTables } from "../../lib/connections/tables.ts";
import { startBigQueryServer, type BigQueryField, type BigQueryRow, type BigQueryServer } from "../helpers/bigqueryServer.ts";

/** The stand-in listens on loopback: allowed as with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS. */
const bigQueryFocusReader = (config: GcpConfig, secrets: GcpSecrets) => openReader(config, secrets, { allowPrivateEndpoints: true });

const PROJECT = "examplecorp-billing";
const DATASET = "gcp_billing_immutable_01A2B3_C4D5E6_F70819_us";
const TABLE = "gcp_billing_export_focus_01A2B3_C4D5E6_F70819";

const S = (name: string): BigQueryField => ({ name, type: "STRING" });
const SCHEMA: BigQueryField[] = [
  ...["ProviderName", "PublisherName", "InvoiceIssuerName", "InvoiceId", "BillingAccountId", "BillingAccountName"].map(S),
  ...["SubAccountId", "SubAccountName", "SubAccountType"].map(S),
  ...["BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"].map((name) => ({ name, type: "TIMESTAMP" })),
  ...["ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency"].map(S),
  ...["BilledCost", "EffectiveCost", "ListCost", "ContractedCost"].map((name) => ({ name, type: "NUMERIC" })),
  ...["ListUnitPrice", "ContractedUnitPrice"].map((name) => ({ name, type: "BIGNUMERIC" })),
  S("PricingCategory"),
  { name: "PricingQuantity", type: "NUMERIC" },
  S("PricingUnit"),
  S("BillingCurrency"),
  { name: "ConsumedQuantity", type: "NUMERIC" },
  ...["ConsumedUnit", "ServiceName", "ServiceCategory", "SkuId", "SkuPriceId"].map(S),
  { name: "SkuPriceDetails", type: "JSON" },
  ...["ResourceId", "ResourceName", "ResourceType", "RegionId", "RegionName", "AvailabilityZone", "CommitmentDiscountId"].map(S),
  {
    name: "Tags",
    type: "RECORD",
    mode: "REPEATED",
    fields: [
      { name: "key", type: "STRING" },
      { name: "value", type: "STRING" },
    ],
  },
];

const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");

/** Usage row `i` of a month ("YYYY-MM"): alternately an e2-standard-4 VM hour and a Cloud Functions hour. */
function usage(month: string, i: number): BigQueryRow {
  const start = Date.parse(`${month}-01T00:00:00Z`);
  const next = new Date(start);
  next.setUTCMonth(next.getUTCMonth() + 1);
  const hour = start + (i % 672) * 3_600_000;
  const vm = i % 2 === 0;
  const project = vm ? "examplecorp-staging-552831" : "examplecorp-prod-118204";
  return {
    ProviderName: "Google Cloud",
    PublisherName: "Google",
    InvoiceIssuerName: "Google Cloud",
    InvoiceId: `INV-${month}-F70819`,
    BillingAccountId: "01A2B3-C4D5E6-F70819",
    BillingAccountName: "ExampleCorp Billing - Primary",
    SubAccountId: project,
    SubAccountName: vm ? "staging-platform" : "prod-serverless",
    SubAccountType: "Project",
    BillingPeriodStart: iso(start),
    BillingPeriodEnd: iso(next.getTime()),
    ChargePeriodStart: iso(hour),
    ChargePeriodEnd: iso(hour + 3_600_000),
    ChargeCategory: "Usage",
    ChargeClass: null,
    ChargeDescription: vm ? "e2-standard-4 running" : "Function execution duration",
    ChargeFrequency: "Usage-Based",
    BilledCost: vm ? `0.1229835722${String(i).padStart(5, "0")}` : "2.70470553313385",
    EffectiveCost: vm ? "0.1229835722" : "2.70470553313385",
    ListCost: vm ? "0.1366484135" : "3.00524202221055",
    ContractedCost: vm ? "0.1229835722" : "2.70470553313385",
    ListUnitPrice: vm ? "0.1366484135" : "0.0000024459",
    ContractedUnitPrice: vm ? "0.1229835722" : "0.0000022013",
    PricingCategory: "Standard",
    PricingQuantity: vm ? "1" : "1228685.5645",
    PricingUnit: vm ? "Hours" : "GB-Seconds",
    BillingCurrency: "USD",
    ConsumedQuantity: vm ? "1" : "1228685.5645",
    ConsumedUnit: vm ? "Hours" : "GB-Seconds",
    ServiceName: vm ? "Compute Engine" : "Cloud Functions",
    ServiceCategory: "Compute",
    SkuId: vm ? "6D7E-805D-A846" : "6825-75EC-87A1",
    SkuPriceId: vm ? "A32C-3BB8-1E3C" : "71AC-826A-6FCE",
    SkuPriceDetails: vm ? { InstanceType: "e2-standard-4", CoreCount: 4 } : { x_Runtime: "python312" },
    ResourceId: vm ? `//compute.googleapis.com/projects/${project}/instances/instance-${i}` : `//cloudfunctions.googleapis.com/projects/${project}/functions/fn-${i}`,
    ResourceName: vm ? `instance-${i}` : `fn-${i}`,
    ResourceType: vm ? "Compute Instance" : "Cloud Function",
    RegionId: vm ? "us-east1" : "us-central1",
    RegionName: vm ? "South Carolina" : "Iowa",
    AvailabilityZone: vm ? "us-east1-b" : null,
    CommitmentDiscountId: null,
    Tags: vm
      ? [
          { key: "environment", value: "staging" },
          { key: "cost-center", value: "cc-3110" },
        ]
      : [],
  };
}

const monthRows = (month: string, n: number) => Array.from({ length: n }, (_, i) => usage(month, i));

function config(server: BigQueryServer, over: Partial<GcpConfig> = {}): GcpConfig {
  return { project_id: PROJECT, dataset: DATASET, table: TABLE, location: "US", endpoint_url: server.endpoint, ...over };
}

async function batches(period: SourcePeriod): Promise<CsvBatch[]> {
  const out: CsvBatch[] = [];
  for await (const table of period.tables()) for await (const batch of table) out.push(batch);
  return out;
}

async function failureOf(promise: Promise<unknown>): Promise<ConnectionFailure> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectionFailure);
    return err as ConnectionFailure;
  }
  throw new Error("expected a ConnectionFailure");
}

/** A failure message never carries the key: no PEM, no piece of the private key. */
function expectNoKeyMaterial(failure: ConnectionFailure, keyText: string) {
  const pem = JSON.parse(keyText).private_key as string;
  expect(failure.message).not.toContain("PRIVATE KEY");
  for (const line of pem.split("\n").filter((l) => l.length > 20)) expect(failure.message).not.toContain(line.slice(0, 20));
}

describe("BigQuery FOCUS reader", () => {
  let server: BigQueryServer;
  let rows: BigQueryRow[];

  beforeAll(async () => {
    rows = [...monthRows("2026-03", 40), ...monthRows("2026-04", 60), ...monthRows("2026-05", 30)];
    server = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: () => rows, schema: SCHEMA });
  });
  afterAll(() => server.stop());

  test("lists one period per billing month with stable fingerprints", async () => {
    const reader = bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey });
    const first = await reader.periods();
    expect(first.map((p) => p.month)).toEqual(["2026-03", "2026-04", "2026-05"]);
    for (const p of first) {
      expect(p.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(p.bytes).toBe(0);
      expect(p.files).toEqual([`SELECT * FROM \`${PROJECT}.${DATASET}.${TABLE}\` WHERE BillingPeriodStart = TIMESTAMP '${p.month}-01T00:00:00Z'`]);
    }
    expect(new Set(first.map((p) => p.fingerprint)).size).toBe(3);
    const again = await bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey }).periods();
    expect(again.map((p) => p.fingerprint)).toEqual(first.map((p) => p.fingerprint));
  });

  test("a restated month changes only its own fingerprint", async () => {
    const reader = bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey });
    const before = await reader.periods();
    const original = rows;
    try {
      // GCP restates April: one row's cost is corrected.
      rows = original.map((r) => (r.ResourceName === "instance-10" && r.InvoiceId === "INV-2026-04-F70819" ? { ...r, BilledCost: "0.1" } : r));
      const corrected = await reader.periods();
      expect(corrected.map((p) => p.fingerprint !== before.find((b) => b.month === p.month)!.fingerprint)).toEqual([false, true, false]);
      // Late usage arrives for May.
      rows = [...rows, usage("2026-05", 30)];
      const late = await reader.periods();
      expect(late.map((p) => p.fingerprint !== corrected.find((b) => b.month === p.month)!.fingerprint)).toEqual([false, false, true]);
    } finally {
      rows = original;
    }
  });

  test("a period's rows are FOCUS text: exact decimals, ISO timestamps, Tags as JSON", async () => {
    const [march] = await bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey }).periods();
    const got = await batches(march!);
    const [header, ...records] = got.flatMap((b) => b.records);
    expect(header).toEqual(SCHEMA.map((f) => f.name));
    expect(records).toHaveLength(40);
    const at = (name: string) => header!.indexOf(name);
    const [vm, fn] = records as [string[], string[]];
    expect(vm[at("BilledCost")]).toBe("0.122983572200000");
    expect(fn[at("ListCost")]).toBe("3.00524202221055");
    expect(fn[at("ContractedUnitPrice")]).toBe("0.0000022013");
    expect(vm[at("BillingPeriodStart")]).toBe("2026-03-01T00:00:00Z");
    expect(vm[at("BillingPeriodEnd")]).toBe("2026-04-01T00:00:00Z");
    expect(fn[at("ChargePeriodStart")]).toBe("2026-03-01T01:00:00Z");
    expect(JSON.parse(vm[at("Tags")]!)).toEqual({ environment: "staging", "cost-center": "cc-3110" });
    expect(fn[at("Tags")]).toBe("");
    expect(JSON.parse(vm[at("SkuPriceDetails")]!)).toEqual({ InstanceType: "e2-standard-4", CoreCount: 4 });
    expect(vm[at("ChargeClass")]).toBe("");
    expect(fn[at("AvailabilityZone")]).toBe("");
    expect(got.every((b) => b.plain)).toBe(true);
    // Joined like a file-based period: one header, rows after it.
    const joined: string[][] = [];
    for await (const b of joinTables(march!.tables())) joined.push(...b.records);
    expect(joined).toEqual([header!, ...records]);
  });

  test("the reader issues only jobs.query and jobs.getQueryResults", async () => {
    server.requests.length = 0;
    const periods = await bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey }).periods();
    await batches(periods[1]!);
    expect(server.requests.every((r) => /^(POST \/bigquery\/v2\/projects\/[^/]+\/queries|GET \/bigquery\/v2\/projects\/[^/]+\/queries\/[\w-]+)$/.test(r))).toBe(true);
    expect(server.requests.filter((r) => r.startsWith("POST"))).toHaveLength(2);
  });

  test("a not-yet-complete job is polled until its results are ready", async () => {
    const slow = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: monthRows("2026-05", 5), schema: SCHEMA, pollsBeforeComplete: 2 });
    try {
      const [may] = await bigQueryFocusReader(config(slow), { service_account_key: slow.serviceAccountKey }).periods();
      const records = (await batches(may!)).flatMap((b) => b.records);
      expect(records).toHaveLength(6);
      expect(slow.requests.filter((r) => r.startsWith("GET"))).toHaveLength(4);
    } finally {
      await slow.stop();
    }
  });
});

describe("BigQuery FOCUS reader paging", () => {
  test("reads a large period page by page, in order", async () => {
    const big = monthRows("2026-05", 25_000);
    big[12_345] = { ...big[12_345]!, BilledCost: "123456789012.3456789012", ChargePeriodEnd: "2026-05-14T09:00:00.250001Z" };
    const server = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: big, schema: SCHEMA, pageSize: 1_000 });
    try {
      const [may] = await bigQueryFocusReader(config(server), { service_account_key: server.serviceAccountKey }).periods();
      server.requests.length = 0;
      const got = await batches(may!);
      // One batch per response page: jobs.query, then getQueryResults per page token.
      expect(got.length).toBeGreaterThanOrEqual(25);
      expect(server.requests.filter((r) => r.startsWith("POST"))).toHaveLength(1);
      expect(server.requests.filter((r) => r.startsWith("GET"))).toHaveLength(got.length - 1);
      expect(got.every((b) => b.records.length <= 1_001)).toBe(true);
      const lines = got.flatMap((b) => b.lines);
      expect(lines).toEqual(Array.from({ length: 25_001 }, (_, i) => i + 1));
      const [header, ...records] = got.flatMap((b) => b.records);
      const name = header!.indexOf("ResourceName");
      expect(records.map((r) => r[name])).toEqual(big.map((r) => r.ResourceName as string));
      const row = records[12_345]!;
      expect(row[header!.indexOf("BilledCost")]).toBe("123456789012.3456789012");
      expect(row[header!.indexOf("ChargePeriodEnd")]).toBe("2026-05-14T09:00:00.250001Z");
      expect(records[24_998]![header!.indexOf("BilledCost")]).toBe("0.122983572224998");
    } finally {
      await server.stop();
    }
  });
});

describe("BigQuery FOCUS reader failures", () => {
  let server: BigQueryServer;
  beforeAll(async () => {
    server = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: monthRows("2026-05", 3), schema: SCHEMA });
  });
  afterAll(() => server.stop());

  test("a key signed with another private key → credentials", async () => {
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const forged = JSON.stringify({ ...JSON.parse(server.serviceAccountKey), private_key: other });
    const failure = await failureOf(bigQueryFocusReader(config(server), { service_account_key: forged }).periods());
    expect(failure.cause).toBe("credentials");
    expect(failure.message).toContain("invalid_grant");
    expectNoKeyMaterial(failure, forged);
  });

  test("a key that is not a service-account key → credentials, without echoing it", async () => {
    for (const key of ["not json {", JSON.stringify({ type: "service_account", client_email: "x@y", private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" })]) {
      const failure = await failureOf(bigQueryFocusReader(config(server), { service_account_key: key }).periods());
      expect(failure.cause).toBe("credentials");
      expect(failure.message).not.toContain("AAAA");
    }
  });

  test("a missing table or dataset → not_found", async () => {
    const table = await failureOf(bigQueryFocusReader(config(server, { table: "gcp_billing_export_focus_000000" }), { service_account_key: server.serviceAccountKey }).periods());
    expect(table.cause).toBe("not_found");
    expect(table.message).toContain("gcp_billing_export_focus_000000 was not found");
    const gone = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: [], schema: SCHEMA, missing: "dataset" });
    try {
      const dataset = await failureOf(bigQueryFocusReader(config(gone), { service_account_key: gone.serviceAccountKey }).periods());
      expect(dataset.cause).toBe("not_found");
      expect(dataset.message).toContain(`Dataset ${PROJECT}:${DATASET}`);
    } finally {
      await gone.stop();
    }
  });

  test("access denied → permission", async () => {
    const denied = await startBigQueryServer({ projectId: PROJECT, dataset: DATASET, table: TABLE, rows: [], schema: SCHEMA, denied: true });
    try {
      const failure = await failureOf(bigQueryFocusReader(config(denied), { service_account_key: denied.serviceAccountKey }).periods());
      expect(failure.cause).toBe("permission");
      expectNoKeyMaterial(failure, denied.serviceAccountKey);
    } finally {
      await denied.stop();
    }
  });

  test("a view without FOCUS columns → not_focus", async () => {
    const legacy = await startBigQueryServer({
      projectId: PROJECT,
      dataset: DATASET,
      table: TABLE,
      rows: [],
      schema: [S("billing_account_id"), { name: "usage_start_time", type: "TIMESTAMP" }, { name: "cost", type: "FLOAT" }],
    });
    try {
      const failure = await failureOf(bigQueryFocusReader(config(legacy), { service_account_key: legacy.serviceAccountKey }).periods());
      expect(failure.cause).toBe("not_focus");
      expect(failure.message).toContain("Unrecognized name: BillingPeriodStart");
    } finally {
      await legacy.stop();
    }
  });

  test("a table name that is not a BigQuery identifier is refused before any query", async () => {
    server.requests.length = 0;
    for (const table of ["focus` WHERE 1=1 --", "focus\\x", "a.b"]) {
      const failure = await failureOf(bigQueryFocusReader(config(server, { table }), { service_account_key: server.serviceAccountKey }).periods());
      expect(failure.cause).toBe("not_found");
    }
    expect(server.requests).toEqual([]);
  });

  test("nothing listening → unreachable", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const closed = `http://127.0.0.1:${port}`;
    // The API down, the token endpoint up.
    const api = await failureOf(bigQueryFocusReader(config(server, { endpoint_url: closed }), { service_account_key: server.serviceAccountKey }).periods());
    expect(api.cause).toBe("unreachable");
    // Both down: the token exchange cannot connect either.
    const key = JSON.stringify({ ...JSON.parse(server.serviceAccountKey), token_uri: `${closed}/token` });
    const token = await failureOf(bigQueryFocusReader(config(server, { endpoint_url: closed }), { service_account_key: key }).periods());
    expect(token.cause).toBe("unreachable");
    expect(token.message).toContain("token endpoint");
  });
});
