/**
 * OpenTelemetry traces (lib/tracing), exported over OTLP/HTTP to a loopback receiver that
 * decodes what it is sent: a server span per request in the caller's W3C trace, named by the
 * route template with the org id hashed; statement spans under it (PostgreSQL) carrying their kind
 * only; job and import spans; the trace id in log lines.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startTracing, inSpan } from "../../lib/tracing/index.ts";
import { measuredJobRun } from "../../lib/metrics/process.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { createLogger } from "../../lib/log.ts";
import { focusCsv } from "../reports/helpers.ts";
import { Readable } from "node:stream";

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
  resource: Record<string, unknown>;
}

/** OTLP/HTTP JSON (opentelemetry-proto's JSON mapping): attributes as key/value pairs of typed values. */
const attributesOf = (list: { key: string; value: Record<string, unknown> }[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue ?? value.doubleValue)]));

const received: ReceivedSpan[] = [];
const bodies: string[] = [];
let receiver: ReturnType<typeof Bun.serve>;
let tracing: Awaited<ReturnType<typeof startTracing>>;

beforeAll(async () => {
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces") return new Response("no", { status: 404 });
      expect(req.headers.get("content-type")).toContain("application/json");
      const text = await req.text();
      bodies.push(text);
      for (const rs of JSON.parse(text).resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const sp of ss.spans ?? []) received.push({ ...sp, attributes: attributesOf(sp.attributes), resource: attributesOf(rs.resource?.attributes) });
      return Response.json({});
    },
  });
  tracing = await startTracing({ endpoint: `http://127.0.0.1:${receiver.port}`, serviceName: "commitops-test" });
});

afterAll(async () => {
  await tracing?.shutdown();
  receiver?.stop(true);
});

describeEachDb("traces", (driver) => {
  const t = useTestApp(driver);

  test("a request continues the caller's trace: one server span named by the route template, org id hashed, status; its statements' spans are its children and carry no values", async () => {
    const traceId = crypto.randomUUID().replace(/-/g, "");
    const parentId = traceId.slice(0, 16);
    const r = await t.request("GET", `/beta/v1/org/${t.org.id}/commitments`, { key: t.org.key, headers: { traceparent: `00-${traceId}-${parentId}-01` } });
    expect(r.status).toBe(200);
    await tracing.flush();
    const mine = received.filter((s) => s.traceId === traceId);
    const server = mine.find((s) => s.kind === 2)!; // SPAN_KIND_SERVER
    expect(server).toBeDefined();
    expect(server.name).toBe("GET /beta/v1/org/:org_id/commitments");
    expect(server.parentSpanId).toBe(parentId);
    expect(server.attributes).toMatchObject({ "http.route": "/beta/v1/org/:org_id/commitments", "http.response.status_code": 200, "http.request.method": "GET" });
    expect(server.attributes["commitops.org_id_hash"]).toMatch(/^[0-9a-f]{16}$/);
    expect(server.resource["service.name"]).toBe("commitops-test");
    if (driver === "postgres") {
      const statements = mine.filter((s) => s.name.startsWith("db "));
      expect(statements.length).toBeGreaterThan(0);
      const ids = new Set(mine.map((s) => s.spanId));
      for (const s of statements) {
        expect(ids.has(s.parentSpanId!)).toBe(true);
        expect(s.attributes["db.system.name"]).toBe("postgresql");
        expect(Object.keys(s.attributes).sort()).toEqual(["db.operation.name", "db.system.name"]);
      }
      expect(statements.some((s) => s.attributes["db.operation.name"] === "SELECT")).toBe(true);
    }
    // Neither the org id nor the key is anywhere in what was sent.
    const sent = bodies.join("\n");
    expect(sent).not.toContain(t.org.id);
    expect(sent).not.toContain(t.org.key);
  });

  test("a request without traceparent starts a trace of its own; a 404 is named unmatched", async () => {
    const before = received.length;
    expect((await t.request("GET", "/no/such/thing", { key: null })).status).toBe(404);
    await tracing.flush();
    const server = received.slice(before).find((s) => s.kind === 2 && s.name === "GET unmatched")!;
    expect(server).toBeDefined();
    expect(server.parentSpanId ?? "").toBe("");
    expect(server.attributes["http.response.status_code"]).toBe(404);
  });

  test("jobs and imports have spans; a log line written inside a span carries its trace and span ids", async () => {
    const job = `tracing-test-${driver}`;
    await measuredJobRun(job, async () => {});
    const org = await t.newOrg("Traced import");
    await importFocus(t.s.db, org.id, Readable.from([focusCsv([1, 2].map((c) => ({ EffectiveCost: c, BilledCost: c, ListCost: c, ContractedCost: c })))]));
    const lines: string[] = [];
    const log = createLogger("info", (l) => lines.push(l));
    let ids = { traceId: "", spanId: "" };
    await inSpan("logging", {}, async (span) => {
      ids = span!.spanContext();
      log.info("inside");
    });
    log.info("outside");
    await tracing.flush();
    expect(received.find((s) => s.name === `job ${job}`)?.attributes["commitops.job"]).toBe(job);
    const imp = received.filter((s) => s.name === "import focus").at(-1)!;
    expect(imp.attributes).toMatchObject({ "commitops.import.rows": 2, "commitops.import.unchanged": false });
    if (driver === "postgres") expect(received.some((s) => s.parentSpanId === imp.spanId && s.name.startsWith("db "))).toBe(true);
    const [inside, outside] = lines.map((l) => JSON.parse(l));
    expect(inside).toMatchObject({ msg: "inside", trace_id: ids.traceId, span_id: ids.spanId });
    expect(outside.trace_id).toBeUndefined();
  });
});
