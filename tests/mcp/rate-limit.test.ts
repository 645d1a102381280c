/**
 * The assistant's endpoint under the per-credential rate limit (issue 26): every JSON-RPC message
 * of a request counts, batches are refused where the protocol removed them and capped where it
 * still has them, RateLimit-* headers on /mcp answers, the preflight advertises what is served.
 * The limiter runs on a clock frozen mid-minute, so no window turns over during a test.
 */
import { expect, test } from "bun:test";
import { and, count, eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { RateLimiter } from "../../lib/http/rateLimit.ts";
import { DEFAULT_PROTOCOL_VERSION, MCP_MAX_BATCH_MESSAGES } from "../../lib/mcp/batch.ts";
import { DEFAULT_NEGOTIATED_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { segments } from "../../lib/db/schema/index.ts";
import { NOW, initializeBody, mcpHeaders } from "./fixtures.ts";

const BUDGET = 20;
/** The limiter's clock: frozen 30 s into a minute. */
const CLOCK = Date.UTC(2026, 5, 17, 12, 0, 30);

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
const PROVIDERS = ["aws", "azure", "gcp"];
/** `list_plan_templates` creates the provider's default segment on its first call: a tool that ran leaves a row. */
const templatesCalls = (n: number) => Array.from({ length: n }, (_, i) => call(i + 1, "list_plan_templates", { provider: PROVIDERS[i % 3] }));

describeEachDb("mcp: every JSON-RPC message counts against the rate limit", (driver) => {
  const t = useTestApp(driver, {
    now: () => NOW,
    config: { apiRateLimitPerMinute: BUDGET, mcpAllowedOrigins: ["https://claude.example"] },
    extras: { rateLimiter: new RateLimiter(BUDGET, () => CLOCK) },
  });

  const post = (key: string, body: unknown, extra: Record<string, string> = {}) =>
    t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(key, extra), body: JSON.stringify(body) }));

  /** A fresh org whose key may list templates (each test has a budget and segments of its own). */
  const freshOrg = () => t.newOrg("Rate limited", ["assistant:read", "templates:read"]);

  async function segmentRows(orgId: string): Promise<number> {
    const [r] = await t.s.db.select({ n: count() }).from(segments).where(and(eq(segments.orgId, orgId), eq(segments.kind, "provider_resources")));
    return Number(r!.n);
  }

  function expectRateHeaders(r: Response, remaining: number) {
    expect(r.headers.get("ratelimit-limit")).toBe(String(BUDGET));
    expect(r.headers.get("ratelimit-remaining")).toBe(String(remaining));
    const reset = Number(r.headers.get("ratelimit-reset"));
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(60);
  }

  async function expectRateLimited(r: Response) {
    expect(r.status).toBe(429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get("ratelimit-remaining")).toBe("0");
    expect(r.headers.get("ratelimit-limit")).toBe(String(BUDGET));
    expect(await r.json()).toMatchObject({ error: "Too Many Requests", code: 429, type: "rate_limited", status: "TOO_MANY_REQUESTS", url: "/mcp" });
  }

  test("20 single calls pass with RateLimit-* headers counting down; the 21st is 429 + Retry-After", async () => {
    const org = await freshOrg();
    for (let i = 0; i < BUDGET; i++) {
      const r = await post(org.key, call(i + 1, "get_organization"));
      expect(r.status).toBe(200);
      expectRateHeaders(r, BUDGET - 1 - i);
      expect(((await r.json()) as any).result.isError).toBeUndefined();
    }
    await expectRateLimited(await post(org.key, call(99, "get_organization")));
    // Refused before the body is read or the method is looked at.
    await expectRateLimited(await t.app.handle(new Request("http://localhost/mcp", { method: "GET", headers: mcpHeaders(org.key) })));
    // Another credential of the same org has its own budget.
    const other = await t.newOrg("Other", ["assistant:read"]);
    const ok = await post(other.key, initializeBody);
    expect(ok.status).toBe(200);
    expectRateHeaders(ok, BUDGET - 1);
  }, 120_000);

  test("a batch of 100 tools/call is refused before any tool runs", async () => {
    const org = await freshOrg();
    // No MCP-Protocol-Version: the spec's default 2025-03-26, which has batches, capped.
    for (const extra of [{}, { "mcp-protocol-version": "2025-03-26" }] as Record<string, string>[]) {
      const r = await post(org.key, templatesCalls(100), extra);
      expect(r.status).toBe(400);
      const b = (await r.json()) as any;
      expect(b).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
      expect(b.error.message).toContain(`at most ${MCP_MAX_BATCH_MESSAGES} messages`);
    }
    // On 2025-06-18 and later there are no batches at all.
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const r = await post(org.key, templatesCalls(100), { "mcp-protocol-version": version });
      expect(r.status).toBe(400);
      const b = (await r.json()) as any;
      expect(b).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
      expect(b.error.message).toContain(`not supported in MCP protocol version ${version}`);
    }
    expect(await segmentRows(org.id)).toBe(0);
    // Each refused batch counted as the one request it was (4 so far).
    const one = await post(org.key, call(1, "list_plan_templates", { provider: "aws" }));
    expect(one.status).toBe(200);
    expectRateHeaders(one, BUDGET - 5);
    // The counter works: the tool that ran left its row.
    expect(await segmentRows(org.id)).toBe(1);
  }, 120_000);

  test("a batch is counted message by message: over what is left → 429 for the whole batch, nothing runs", async () => {
    const org = await freshOrg();
    for (let i = 0; i < 10; i++) expect((await post(org.key, call(i + 1, "get_organization"))).status).toBe(200);
    // 15 messages, 10 left: refused whole, with Retry-After, before any of them runs.
    await expectRateLimited(await post(org.key, templatesCalls(15), { "mcp-protocol-version": "2025-03-26" }));
    expect(await segmentRows(org.id)).toBe(0);
    // The refusal counted nothing: a batch of exactly what is left passes, every message answered.
    const r = await post(org.key, templatesCalls(10), { "mcp-protocol-version": "2025-03-26" });
    expect(r.status).toBe(200);
    expectRateHeaders(r, 0);
    const answers = (await r.json()) as any[];
    expect(answers.map((a) => a.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(answers.every((a) => a.result && !a.result.isError)).toBe(true);
    expect(await segmentRows(org.id)).toBe(3);
    await expectRateLimited(await post(org.key, call(1, "get_organization")));
  }, 120_000);

  test("batches on 2025-03-26: up to the cap served, over it 400; an initialize asking for 2025-06-18 in a batch 400", async () => {
    const org = await freshOrg();
    const v = { "mcp-protocol-version": "2025-03-26" };
    const over = await post(org.key, templatesCalls(MCP_MAX_BATCH_MESSAGES + 1), v);
    expect(over.status).toBe(400);
    expect(((await over.json()) as any).error.message).toContain(`this one holds ${MCP_MAX_BATCH_MESSAGES + 1}`);
    expectRateHeaders(over, BUDGET - 1);
    const empty = await post(org.key, [], v);
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as any).error).toMatchObject({ code: -32600, message: "Invalid Request: an empty JSON-RPC batch." });
    // An initialize inside a batch is judged by the version it asks for (no header yet).
    const init25 = await post(org.key, [{ ...initializeBody, params: { ...initializeBody.params, protocolVersion: "2025-06-18" } }]);
    expect(init25.status).toBe(400);
    expect(((await init25.json()) as any).error.message).toContain("protocol version 2025-06-18");
    const init03 = await post(org.key, [{ ...initializeBody, params: { ...initializeBody.params, protocolVersion: "2025-03-26" } }]);
    expect(init03.status).toBe(200);
    // (The SDK answers a batch of one with the bare response.)
    const got = (await init03.json()) as any;
    const answer = Array.isArray(got) ? got[0] : got;
    expect(answer.result.protocolVersion).toBe("2025-03-26");
    expect(await segmentRows(org.id)).toBe(0);
    // 4 requests so far; a batch of 16 uses the rest of the budget.
    const full = await post(org.key, templatesCalls(16), v);
    expect(full.status).toBe(200);
    expect(((await full.json()) as any[]).length).toBe(16);
    expectRateHeaders(full, 0);
    expect(await segmentRows(org.id)).toBe(3);
  }, 120_000);

  test("a single message on 2025-06-18 is unaffected; errors of /mcp carry RateLimit-* headers, exposed to browsers", async () => {
    const org = await freshOrg();
    const single = await post(org.key, call(1, "get_organization"), { "mcp-protocol-version": "2025-06-18", origin: "https://claude.example" });
    expect(single.status).toBe(200);
    expectRateHeaders(single, BUDGET - 1);
    const exposed = single.headers.get("access-control-expose-headers")!;
    for (const h of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"]) expect(exposed).toContain(h);
    const get = await t.app.handle(new Request("http://localhost/mcp", { method: "GET", headers: mcpHeaders(org.key) }));
    expect(get.status).toBe(405);
    expectRateHeaders(get, BUDGET - 2);
    // Not JSON: the SDK's parse error, counted as one request.
    const bad = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(org.key), body: "{not json" }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe(-32700);
    expectRateHeaders(bad, BUDGET - 3);
    // Over MAX_BODY_BYTES (1 MiB by default; the SDK's own 4 MiB is never reached): the spec's 413, counted.
    const big = new TextEncoder().encode(JSON.stringify({ ...call(1, "get_organization"), pad: "x".repeat(t.s.config.maxBodyBytes) }));
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < big.length; i += 64 * 1024) c.enqueue(big.subarray(i, i + 64 * 1024));
        c.close();
      },
    });
    const tooBig = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(org.key), body: stream }));
    expect(tooBig.status).toBe(413);
    expect(((await tooBig.json()) as any).code).toBe("payload_too_large");
    expectRateHeaders(tooBig, BUDGET - 4);
  }, 120_000);

  test("the CORS preflight advertises only what is served: POST and OPTIONS (GET and DELETE answer 405)", async () => {
    const pre = await t.app.handle(
      new Request("http://localhost/mcp", { method: "OPTIONS", headers: { origin: "https://claude.example", "access-control-request-method": "POST" } }),
    );
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
    const org = await freshOrg();
    for (const method of ["GET", "DELETE"]) {
      const r = await t.app.handle(new Request("http://localhost/mcp", { method, headers: mcpHeaders(org.key) }));
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe("POST, OPTIONS");
    }
  }, 60_000);

  test("a budget below the batch cap caps batches at the budget: a batch that could never pass is a 400, not a 429", async () => {
    const s = createServices(t.s.handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { apiRateLimitPerMinute: 5, jobsEnabled: false, seedDemo: false }), createLogger("silent"), {
      now: () => NOW,
      extras: { rateLimiter: new RateLimiter(5, () => CLOCK) },
    });
    const app = createApp(s);
    const org = await freshOrg();
    const send = (body: unknown) =>
      app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(org.key, { "mcp-protocol-version": "2025-03-26" }), body: JSON.stringify(body) }));
    const six = await send(templatesCalls(6));
    expect(six.status).toBe(400);
    expect(((await six.json()) as any).error.message).toContain("at most 5 messages (this credential's rate limit is 5 requests per minute)");
    expect(await segmentRows(org.id)).toBe(0);
    const four = await send(templatesCalls(4));
    expect(four.status).toBe(200);
    expect(four.headers.get("ratelimit-remaining")).toBe("0");
  }, 60_000);
});

test("the protocol version assumed without MCP-Protocol-Version is the SDK's (an SDK upgrade that moves it is noticed)", () => {
  expect(DEFAULT_PROTOCOL_VERSION).toBe(DEFAULT_NEGOTIATED_PROTOCOL_VERSION);
});
