/**
 * SSRF by host name: a connection's endpoint_url / storage_account_url / key token_uri is
 * resolved and refused when any address is not public, at create and again at every test and
 * sync; the sockets connect to the address that was checked (no second DNS query), with the
 * name kept as Host; and /test answers a refused address like a closed port. Names are mapped by
 * a test resolver (lib/hosts.ts setHostResolver), never by the machine's /etc/hosts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createServer, request as httpRequest, type Server } from "node:http";
import { isIP, type AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { freePort } from "../helpers/process.ts";
import { createRequire } from "node:module";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { startAzurite, writeAzureFocusExport, type Azurite } from "../helpers/azurite.ts";
import { startBigQueryServer, type BigQueryField, type BigQueryServer } from "../helpers/bigqueryServer.ts";
import { createApp } from "../../lib/http/app.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";
import { checkedAddresses, isPublicAddress, NonPublicHostError, setHostResolver } from "../../lib/hosts.ts";
import { openEgress } from "../../lib/egress.ts";
import { focusMonths, toCsv } from "./fixtures.ts";

const NOW = new Date("2026-11-10T00:00:00Z");
// A key pair of s3rver's account model (the connection checks the access key id's form).
const ACCESS_KEY_ID = "AKIACOMMITOPSSSRF01";
const SECRET_ACCESS_KEY = `s3secret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);
const SECRET_KEY = randomBytes(32).toString("base64");
const months = focusMonths({ now: NOW, months: 2, providers: ["aws", "azure", "gcp"], accountsPerProvider: 1, resourcesPerAccount: 2, grain: "daily" });
const OCT = months.get("2026-10")!;
const providerAt = OCT.header.indexOf("ProviderName");
const rowsOf = (provider: string) => OCT.rows.filter((r) => r[providerAt] === provider);
const PRIVATE_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }) as string;
const gcpKey = (tokenUri?: string) => JSON.stringify({ type: "service_account", client_email: "sync@acme-billing.iam.gserviceaccount.com", private_key: PRIVATE_KEY, ...(tokenUri ? { token_uri: tokenUri } : {}) });

/** The test's DNS: name → addresses. Every name asked is recorded. */
const dns = new Map<string, string[]>();
const asked: string[] = [];
beforeAll(() =>
  setHostResolver(async (host) => {
    asked.push(host);
    const addresses = dns.get(host);
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: isIP(address) as 4 | 6 }));
  }),
);
afterAll(() => setHostResolver(null));

/** A loopback HTTP server that counts every connection and request it gets. */
interface Listener {
  port: number;
  connections: number;
  requests: number;
  stop(): Promise<void>;
}
async function startListener(): Promise<Listener> {
  const server: Server = createServer((req, res) => {
    l.requests++;
    res.end("{}");
  });
  const l: Listener = { port: 0, connections: 0, requests: 0, stop: () => new Promise((r) => server.close(() => r())) };
  server.on("connection", () => l.connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  l.port = (server.address() as AddressInfo).port;
  return l;
}

/** A loopback proxy in front of a real server: records the Host of each request it forwards. */
async function startRecordingProxy(target: string): Promise<{ port: number; hosts: string[]; stop(): Promise<void> }> {
  const to = new URL(target);
  const hosts: string[] = [];
  const server = createServer((req, res) => {
    hosts.push(String(req.headers.host));
    const upstream = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, hosts, stop: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

describeEachDb("billing connections: endpoints by host name (SSRF)", (driver) => {
  // The operator's setting is off: only public addresses.
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: false } });
  /** Another replica of the same service with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS=true. */
  let allowing: Services;
  let allowingApp: ReturnType<typeof createApp>;
  let listener: Listener;

  beforeAll(async () => {
    allowing = createServices(t.s.handle, { ...t.s.config, connectionsAllowPrivateEndpoints: true }, createLogger("silent"), { now: () => NOW });
    allowingApp = createApp(allowing);
    listener = await startListener();
  });
  afterAll(async () => {
    await listener?.stop();
  });

  async function call(method: string, path: string, body?: unknown, app: "strict" | "allowing" = "strict") {
    const r =
      app === "strict"
        ? await t.orgRequest(method, path, { body })
        : await allowingApp.handle(
            new Request(`http://localhost/beta/v1/org/${t.org.id}${path}`, {
              method,
              headers: { authorization: `Bearer ${t.org.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
              body: body === undefined ? undefined : JSON.stringify(body),
            }),
          );
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null, text };
  }

  const aws = (endpoint_url: string) => ({ bucket: "acme-billing", prefix: "cur", export_name: "focus-daily", region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url });
  const awsSecrets = { secret_access_key: SECRET_ACCESS_KEY };
  let n = 0;
  const create = (kind: string, config: Record<string, string>, secrets: Record<string, string> = {}, app: "strict" | "allowing" = "strict") =>
    call("POST", "/billing-connections", { name: `${kind} ${++n}`, kind, config, secrets }, app);

  test("the rule: public unicast only", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "52.216.0.1", "2606:4700::1111", "2a00:1450:4001::1"]) expect([a, isPublicAddress(a)]).toEqual([a, true]);
    for (const a of ["127.0.0.1", "::1", "169.254.169.254", "100.64.0.1", "198.18.0.1", "fec0::1", "64:ff9b::7f00:1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:8.8.8.8"]) {
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
    }
    for (const a of ["10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.0.1", "fe80::1", "fc00::1", "fd12:3456::1", "0.0.0.0", "0.1.2.3", "::", "224.0.0.1", "ff02::1", "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1", "2002:7f00:1::1", "2001::1", "100::1", "not an address"]) {
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
    }
  });

  test("a provider's own name may resolve to a private address (PrivateLink, Private Endpoints); any other name may not", async () => {
    dns.set("acme-billing.s3.us-east-1.amazonaws.com", ["10.0.12.7"]);
    dns.set("acmebilling.blob.core.windows.net", ["10.0.12.8"]);
    dns.set("bigquery.googleapis.com", ["10.0.12.9"]);
    dns.set("amazonaws.com.evil.example", ["10.0.12.10"]);
    for (const host of ["acme-billing.s3.us-east-1.amazonaws.com", "acmebilling.blob.core.windows.net", "bigquery.googleapis.com"]) {
      expect([host, await checkedAddresses(host, false)]).toEqual([host, [{ address: host === "bigquery.googleapis.com" ? "10.0.12.9" : host.includes("blob") ? "10.0.12.8" : "10.0.12.7", family: 4 }]]);
    }
    expect(await checkedAddresses("amazonaws.com.evil.example", false).catch((e) => e)).toBeInstanceOf(NonPublicHostError);
  });

  test("create refuses a name that resolves to a non-public address: 422 naming the field", async () => {
    for (const address of ["127.0.0.1", "::1", "169.254.169.254", "100.64.0.1", "198.18.0.1", "fec0::1", "64:ff9b::7f00:1", "::127.0.0.1", "::ffff:127.0.0.1", "10.0.0.8", "fd00::1"]) {
      dns.set("evil.example", [address]);
      const r = await create("aws_data_exports", aws(`http://evil.example:${listener.port}`), awsSecrets);
      expect([address, r.status]).toEqual([address, 422]);
      expect(r.body.errors["config.endpoint_url"]?.[0]).toContain("must not point at a loopback, private");
    }
    // One public and one private address: refused (the private one could be the one connected to).
    dns.set("evil.example", ["8.8.8.8", "127.0.0.1"]);
    expect((await create("aws_data_exports", aws("https://evil.example"))).body.errors).toHaveProperty(["config.endpoint_url"]);
    // Names that are never public, whatever DNS says (the test resolver does not know them).
    for (const url of ["http://localhost.:4566", "http://LOCALHOST:4566", "http://s3.localhost/", "http://metadata.google.internal/computeMetadata/v1/", "http://metadata.google.internal./"]) {
      const r = await create("aws_data_exports", aws(url), awsSecrets);
      expect([url, r.status]).toEqual([url, 422]);
      expect(Object.keys(r.body.errors)).toEqual(["config.endpoint_url"]);
    }
    dns.set("evil.example", ["169.254.169.254"]);
    const azure = await create("azure_cost_exports", { storage_account_url: "https://evil.example/acme", container: "exports" }, { sas_token: "sv=2024&sig=x" });
    expect([azure.status, Object.keys(azure.body.errors)]).toEqual([422, ["config.storage_account_url"]]);
    const azureEndpoint = await create("azure_cost_exports", { storage_account_url: "https://acme.blob.core.windows.net", endpoint_url: "http://evil.example", container: "exports" }, { sas_token: "sv=2024&sig=x" });
    expect([azureEndpoint.status, Object.keys(azureEndpoint.body.errors)]).toEqual([422, ["config.endpoint_url"]]);
    const gcp = { project_id: "acme-billing", dataset: "billing", table: "focus" };
    const bq = await create("gcp_bigquery_focus", { ...gcp, endpoint_url: "https://evil.example" });
    expect([bq.status, Object.keys(bq.body.errors)]).toEqual([422, ["config.endpoint_url"]]);
    const token = await create("gcp_bigquery_focus", gcp, { service_account_key: gcpKey("https://evil.example/token") });
    expect([token.status, Object.keys(token.body.errors)]).toEqual([422, ["secrets.service_account_key"]]);
    expect(token.text).toContain("token_uri must not point at a loopback");
    // A public name is accepted; a PATCH to a private one is refused like a create.
    dns.set("s3.public.example", ["52.216.0.1", "2606:4700::1111"]);
    const ok = await create("aws_data_exports", aws("https://s3.public.example"), awsSecrets);
    expect(ok.status).toBe(201);
    const patched = await call("PATCH", `/billing-connections/${ok.body.id}`, { config: { endpoint_url: `http://evil.example:${listener.port}` } });
    expect([patched.status, Object.keys(patched.body.errors)]).toEqual([422, ["config.endpoint_url"]]);
    expect((await call("GET", `/billing-connections/${ok.body.id}`)).body.config.endpoint_url).toBe("https://s3.public.example");
    // Nothing was sent anywhere.
    expect(listener.connections).toBe(0);
  });

  test("a name that later resolves to a private address fails /test and sync without a request (AWS, Azure, GCP)", async () => {
    dns.set("s3.rebind.example", ["52.216.0.1"]);
    dns.set("blob.rebind.example", ["20.60.0.1"]);
    dns.set("bq.rebind.example", ["142.250.0.1"]);
    dns.set("token.rebind.example", ["142.250.0.2"]);
    const created = [
      await create("aws_data_exports", aws(`http://s3.rebind.example:${listener.port}`), awsSecrets),
      await create("azure_cost_exports", { storage_account_url: `http://blob.rebind.example:${listener.port}/acme`, container: "exports" }, { sas_token: "sv=2024-11-04&ss=b&sig=secret" }),
      await create("gcp_bigquery_focus", { project_id: "acme-billing", dataset: "billing", table: "focus", endpoint_url: `http://bq.rebind.example:${listener.port}` }, { service_account_key: gcpKey(`https://token.rebind.example:${listener.port}/token`) }),
      await create("gcp_bigquery_focus", { project_id: "acme-billing", dataset: "billing", table: "focus" }, { service_account_key: gcpKey(`https://token.rebind.example:${listener.port}/token`) }),
    ];
    for (const c of created) expect(c.status, c.text).toBe(201);
    // Now the names point at this machine (a rebinding DNS server, or a changed record).
    for (const name of ["s3.rebind.example", "blob.rebind.example", "bq.rebind.example", "token.rebind.example"]) dns.set(name, ["127.0.0.1"]);
    const messages = new Set<string>();
    for (const c of created) {
      const tested = await call("POST", `/billing-connections/${c.body.id}/test`);
      expect(tested.body).toMatchObject({ ok: false, cause: "unreachable" });
      messages.add(tested.body.message);
      const [run] = await runDueSyncs(t.s, { connectionId: c.body.id });
      expect(run).toMatchObject({ status: "failed", error_cause: "unreachable" });
    }
    expect(messages.size).toBe(4); // one wording per host: S3, storage account, BigQuery, Google token endpoint
    expect(listener.connections).toBe(0);
    expect(listener.requests).toBe(0);
  });

  test("an address allowed when saved is checked again when the operator turns the setting off", async () => {
    const literal = [
      await create("aws_data_exports", aws(`http://127.0.0.1:${listener.port}`), awsSecrets, "allowing"),
      await create("azure_cost_exports", { storage_account_url: `http://127.0.0.1:${listener.port}/acme`, container: "exports" }, { sas_token: "sv=2024-11-04&ss=b&sig=secret" }, "allowing"),
      await create("gcp_bigquery_focus", { project_id: "acme-billing", dataset: "billing", table: "focus", endpoint_url: `http://[::1]:${listener.port}` }, { service_account_key: gcpKey(`http://127.0.0.1:${listener.port}/token`) }, "allowing"),
    ];
    for (const c of literal) {
      expect(c.status, c.text).toBe(201);
      expect((await call("POST", `/billing-connections/${c.body.id}/test`)).body).toMatchObject({ ok: false, cause: "unreachable" });
      const queued = await call("POST", `/billing-connections/${c.body.id}/sync`);
      expect(queued.status).toBe(202);
      let run: any;
      for (let i = 0; i < 600 && !["succeeded", "failed"].includes(run?.status); i++) {
        await Bun.sleep(50);
        run = ((await call("GET", `/billing-connections/${c.body.id}/runs`)).body as any[]).find((r) => r.id === queued.body.id);
      }
      expect(run).toMatchObject({ status: "failed", error_cause: "unreachable" });
    }
    expect(listener.connections).toBe(0);
  });

  test("/test cannot tell a refused address, an unknown name, a closed port and an open one apart", async () => {
    const closed = await freePort();
    dns.set("scan.example", ["52.216.0.1"]);
    const byName = await create("aws_data_exports", aws(`http://scan.example:${listener.port}`), awsSecrets);
    const closedPort = await create("aws_data_exports", aws(`http://127.0.0.1:${closed}`), awsSecrets, "allowing");
    const openPort = await create("aws_data_exports", aws(`http://127.0.0.1:${listener.port}`), awsSecrets, "allowing");
    const answers: unknown[] = [];
    const probe = async (id: string, app: "strict" | "allowing") => answers.push((await call("POST", `/billing-connections/${id}/test`, undefined, app)).body);
    dns.set("scan.example", ["127.0.0.1"]);
    await probe(byName.body.id, "strict"); // an open loopback port, refused
    dns.set("scan.example", ["10.0.0.1"]);
    await probe(byName.body.id, "strict"); // a private address, refused
    dns.delete("scan.example");
    await probe(byName.body.id, "strict"); // no such name
    await probe(openPort.body.id, "strict"); // an open loopback port saved earlier, refused
    await probe(closedPort.body.id, "strict"); // a closed loopback port saved earlier, refused
    await probe(closedPort.body.id, "allowing"); // a closed port, really tried
    expect(answers.length).toBe(6);
    for (const a of answers) expect(a).toEqual(answers[0]);
    expect(answers[0]).toMatchObject({ ok: false, cause: "unreachable", periods: [], columns: [] });
    expect(JSON.stringify(answers[0])).not.toMatch(/ECONNREFUSED|ENOTFOUND|ENONPUBLIC|refused|not public/i);
    expect(listener.connections).toBe(0);
  });

  test("a socket to an address nobody checked is refused before it connects (redirects, SDK defaults)", async () => {
    const egress = await openEgress([], false);
    try {
      await expect(egress.fetch(`http://127.0.0.1:${listener.port}/latest/meta-data/`)).rejects.toMatchObject({ code: "ENONPUBLIC" });
      await expect(egress.fetch(`http://[::ffff:127.0.0.1]:${listener.port}/`)).rejects.toMatchObject({ code: "ENONPUBLIC" });
      dns.set("redirect.example", ["169.254.169.254"]);
      await expect(egress.fetch(`http://redirect.example:${listener.port}/`)).rejects.toMatchObject({ code: "ENONPUBLIC" });
    } finally {
      egress.close();
    }
    expect(listener.connections).toBe(0);
  });

  test("the checked address is the one connected to: one lookup per reader, the name kept as Host (AWS, Azure, GCP)", async () => {
    // Real servers on loopback behind recording proxies, reachable only through the test resolver's names.
    let s3: S3Server | undefined;
    let azurite: Azurite | undefined;
    let bigquery: BigQueryServer | undefined;
    const proxies: Awaited<ReturnType<typeof startRecordingProxy>>[] = [];
    try {
      s3 = await startS3();
      await s3.createBucket("acme-billing");
      await writeAwsExport(s3.client, { bucket: "acme-billing", prefix: "cur", exportName: "focus-daily", month: "2026-10", files: [{ name: "focus-daily-00001.csv.gz", bytes: gzipSync(toCsv(OCT.header, rowsOf("AWS"))) }] });
      azurite = await startAzurite();
      const container = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey)).getContainerClient("cost-exports");
      await container.create();
      await writeAzureFocusExport(container, { directory: "focus/acme", month: "2026-10", runId: crypto.randomUUID(), submittedTime: "2026-10-05T08:00:00Z", format: "Csv", compression: "gzip", files: [{ name: "part_0_0001.csv.gz", bytes: gzipSync(toCsv(OCT.header, rowsOf("Microsoft"))) }] });
      const schema: BigQueryField[] = OCT.header.map((name) => ({ name, type: /(Cost|Quantity|UnitPrice)$/.test(name) ? "NUMERIC" : /^(BillingPeriod|ChargePeriod)(Start|End)$/.test(name) ? "TIMESTAMP" : "STRING" }));
      const rows = rowsOf("Google Cloud").map((r) => Object.fromEntries(OCT.header.map((h, i) => [h, r[i] === "" ? null : r[i]])));
      bigquery = await startBigQueryServer({ projectId: "acme-billing", dataset: "billing_export", table: "focus_view", rows, schema });
      const [s3Proxy, azureProxy, bqProxy] = [await startRecordingProxy(s3.endpoint), await startRecordingProxy(azurite.url), await startRecordingProxy(bigquery.endpoint)];
      proxies.push(s3Proxy, azureProxy, bqProxy);
      for (const name of ["s3.example.test", "blob.example.test", "bigquery.example.test"]) dns.set(name, ["127.0.0.1"]);
      const cases = [
        { proxy: s3Proxy, names: ["s3.example.test"], created: await create("aws_data_exports", aws(`http://s3.example.test:${s3Proxy.port}`), awsSecrets, "allowing") },
        {
          proxy: azureProxy,
          names: ["blob.example.test"],
          created: await create("azure_cost_exports", { storage_account_url: `http://blob.example.test:${azureProxy.port}/${azurite.accountName}`, container: "cost-exports", directory: "focus/acme" }, { account_key: azurite.accountKey }, "allowing"),
        },
        {
          proxy: bqProxy,
          names: ["bigquery.example.test"],
          created: await create(
            "gcp_bigquery_focus",
            { project_id: "acme-billing", dataset: "billing_export", table: "focus_view", endpoint_url: `http://bigquery.example.test:${bqProxy.port}` },
            // http is allowed for a token_uri only on a loopback address: the key keeps the stand-in's own.
            { service_account_key: bigquery.serviceAccountKey },
            "allowing",
          ),
        },
      ];
      for (const { proxy, names, created } of cases) {
        expect(created.status, created.text).toBe(201);
        asked.length = 0;
        const tested = await call("POST", `/billing-connections/${created.body.id}/test`, undefined, "allowing");
        expect(tested.body).toMatchObject({ ok: true, periods: [{ month: "2026-10" }] });
        const [run] = await runDueSyncs(allowing, { connectionId: created.body.id });
        expect(run).toMatchObject({ status: "succeeded", periods_imported: 1 });
        expect(run!.rows_imported).toBeGreaterThan(0);
        // Each name was resolved once by the test and once by the sync, however many requests each made.
        for (const name of names) expect([name, asked.filter((h) => h === name).length]).toEqual([name, 2]);
        expect(proxy.hosts.length).toBeGreaterThan(2 * names.length);
        expect(new Set(proxy.hosts)).toEqual(new Set(names.map((name) => `${name}:${proxy.port}`)));
      }
    } finally {
      for (const p of proxies) await p.stop();
      s3?.client.destroy();
      await s3?.stop();
      await azurite?.stop();
      await bigquery?.stop();
    }
  });
});
