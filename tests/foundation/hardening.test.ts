// test:solo — three refusals are asserted to take under 100 ms: other test files on the same cores would be measured, not the service.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { listen } from "../../scripts/bun-server.ts";
import { createLogger } from "../../lib/log.ts";
import { loadConfig } from "../../lib/config.ts";
import { createServices } from "../../lib/services.ts";
import { jsonNestingExceeds } from "../../lib/http/jsonBody.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { createApp } from "../../lib/http/app.ts";
import { validBug } from "../support/fixtures.ts";
import { Elysia } from "elysia";
import { orgRoutes, rateLimiterOf } from "../../lib/http/orgRoutes.ts";
import { OrgGuard } from "../../lib/http/orgGuard.ts";

const PROTOTYPE_NAMES = ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__"];
const ERROR_BODY_KEYS = ["error", "message", "errors", "timestamp", "type", "detail", "code", "status", "url"];

/** What no response may ever contain: a stack frame, a source path, the machine's directories. */
function expectNoInternals(text: string) {
  expect(text).not.toMatch(/\n\s+at |\.ts:\d|node_modules|file:\/\/|<html|<!DOCTYPE/i);
  expect(text).not.toContain(process.cwd());
}

async function expectErrorBody(r: Response, status: number) {
  const text = await r.text();
  expect({ status: r.status, text: text.slice(0, 300) }).toMatchObject({ status });
  expect(r.headers.get("content-type")).toContain("application/json");
  expectNoInternals(text);
  const body = JSON.parse(text);
  for (const k of ERROR_BODY_KEYS) expect(body).toHaveProperty(k);
  return body;
}

/** One raw HTTP/1.1 exchange, so headers fetch() would not send (an odd Host) can be tested. */
function rawHttp(port: number, head: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let data = "";
    sock.on("data", (d) => (data += d));
    sock.on("error", reject);
    sock.on("end", () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), text: data }));
    sock.write(head.replace(/\n/g, "\r\n") + "\r\n");
    setTimeout(() => sock.end(), 3000).unref();
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, performance.now() - t0];
}

describeEachDb("hardening", (driver) => {
  const logLines: any[] = [];
  const ctx = useTestApp(driver);
  let server: ReturnType<typeof listen>;
  let base: string;
  let estimateId: string;
  let templateId: string;
  const auth = () => ({ authorization: `Bearer ${ctx.org.key}` });
  const org = () => `${base}/beta/v1/org/${ctx.org.id}`;

  beforeAll(async () => {
    // The same app behind the real Bun adapter, logging into memory.
    const s = createServices(ctx.s.handle, ctx.s.config, createLogger("info", (l) => logLines.push(JSON.parse(l))), { extras: ctx.s.extras });
    server = listen(s, createApp(s), { port: 0, hostname: "127.0.0.1" });
    base = `http://127.0.0.1:${server.port}`;
    const est = await (await ctx.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Hardening" } })).json();
    estimateId = est.id;
    templateId = (await (await ctx.orgRequest("GET", "/commitment-plan-templates?provider=aws")).json())[0].id;
  });
  afterAll(() => server?.stop(true));

  describe("1. prototype-named fields and the last-resort answer", () => {
    for (const name of PROTOTYPE_NAMES) {
      test(`a body field named ${name} is an ordinary unknown field (422)`, async () => {
        const raw = `{"provider":"aws","${name}":1}`;
        const r = await fetch(`${org()}/cost-estimates`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: raw });
        const body = await expectErrorBody(r, 422);
        expect(body.errors[name]).toEqual(["is not a known field"]);
      });

      test(`a query parameter named ${name} → 400 naming it (the error handler does not crash)`, async () => {
        const r = await fetch(`${org()}/api-keys?${name}=1`, { headers: auth() });
        const body = await expectErrorBody(r, 400);
        expect(Object.keys(body.errors)).toContain(name);
      });
    }

    test("whatever escapes the app is the spec's JSON 500, logged with a request id, never Bun's page", async () => {
      const lines: any[] = [];
      const s = createServices(ctx.s.handle, loadConfig({}), createLogger("error", (l) => lines.push(JSON.parse(l))));
      const throwing = listen(s, { handle: () => Promise.reject(new Error(`boom in ${process.cwd()}/lib/x.ts:1`)) }, { port: 0, hostname: "127.0.0.1" });
      const notAResponse = listen(s, { handle: async () => 42 as unknown as Response }, { port: 0, hostname: "127.0.0.1" });
      try {
        for (const srv of [throwing, notAResponse]) {
          const r = await fetch(`http://127.0.0.1:${srv.port}/anything`, { headers: { "x-request-id": "rid-7" } });
          const body = await expectErrorBody(r, 500);
          expect(body.message).not.toContain("boom");
        }
        expect(lines.some((l) => l.request_id === "rid-7" && l.level === "error")).toBe(true);
      } finally {
        throwing.stop(true);
        notAResponse.stop(true);
      }
    });
  });

  describe("2. JSON nesting", () => {
    test("50,000 nested [ → 400 in well under 100 ms, and /healthz answers meanwhile", async () => {
      const hostile = "[".repeat(50_000);
      const send = () => fetch(`${org()}/cost-estimates/${estimateId}`, { method: "PATCH", headers: { ...auth(), "content-type": "application/json" }, body: hostile });
      await send(); // warm the route
      const [[r, health], ms] = await timed(() => Promise.all([send(), fetch(`${base}/healthz`)]));
      const body = await expectErrorBody(r, 400);
      expect(body.message).toContain("32");
      expect(health.status).toBe(200);
      expect(ms).toBeLessThan(100);
    });

    test("33 levels → 400; 32 levels reach validation (422)", async () => {
      const nest = (n: number) => `{"name":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`;
      const r33 = await ctx.orgRequest("PATCH", `/cost-estimates/${estimateId}`, { rawBody: nest(33) });
      expect((await expectErrorBody(r33, 400)).type).toBe("invalid_request");
      const r32 = await ctx.orgRequest("PATCH", `/cost-estimates/${estimateId}`, { rawBody: nest(32) });
      expect((await expectErrorBody(r32, 422)).errors).toHaveProperty("name");
    });

    test("brackets inside strings do not count", () => {
      expect(jsonNestingExceeds(`{"a":"${"[".repeat(100)}\\"${"{".repeat(100)}"}`, 32)).toBe(false);
      expect(jsonNestingExceeds("[".repeat(33), 32)).toBe(true);
    });
  });

  describe("5. the path comes from the request line, whatever the Host header", () => {
    for (const host of ["xx", "a", "abc", "", "x:1", "a b", "[::1]", "évil"]) {
      test(`Host: ${JSON.stringify(host)} + /a/beta/… is not the Beta route, and the log says so`, async () => {
        const path = `/a/beta/v1/org/${ctx.org.id}/api-keys`;
        const r = await rawHttp(server.port!, `GET ${path} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${ctx.org.key}\nConnection: close\n`);
        expect(r.status).not.toBe(200);
        expect([400, 404]).toContain(r.status);
        expectNoInternals(r.text);
        if (r.status === 404) {
          await new Promise((res) => setTimeout(res, 20));
          const line = logLines.findLast((l) => l.msg === "request");
          expect(line.path).toBe(path);
        }
      });
    }

    test("a short Host still reaches the real route by its own path", async () => {
      const r = await rawHttp(server.port!, `GET /beta/v1/org/${ctx.org.id}/api-keys HTTP/1.1\nHost: xx\nAuthorization: Bearer ${ctx.org.key}\nConnection: close\n`);
      expect(r.status).toBe(200);
      const body = JSON.stringify({ provider: "aws", name: "via odd host" });
      const post = await rawHttp(
        server.port!,
        `POST /beta/v1/org/${ctx.org.id}/cost-estimates HTTP/1.1\nHost: a b\nAuthorization: Bearer ${ctx.org.key}\nContent-Type: application/json\nContent-Length: ${body.length}\nConnection: close\n\n${body}`,
      );
      expect(post.status).toBe(200);
      expect(post.text).toContain("via odd host");
    });
  });

  describe("6. body limit and free-text maximums", () => {
    const big = JSON.stringify({ name: "x", description: "y".repeat(2 * 1024 * 1024) });

    test("a 2 MiB body with Content-Length → 413 with the error body, nothing stored", async () => {
      const r = await fetch(`${org()}/cost-estimates/${estimateId}`, { method: "PATCH", headers: { ...auth(), "content-type": "application/json" }, body: big });
      const body = await expectErrorBody(r, 413);
      expect(body.code).toBe("payload_too_large");
      const after = await (await ctx.orgRequest("GET", `/cost-estimates/${estimateId}?include_pricing=false`)).json();
      expect(after.name).toBe("Hardening");
    });

    test("a chunked 2 MiB body (no Content-Length) → 413 with the error body", async () => {
      const bytes = new TextEncoder().encode(big);
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += 64 * 1024) c.enqueue(bytes.subarray(i, i + 64 * 1024));
          c.close();
        },
      });
      const r = await fetch(`${org()}/cost-estimates/${estimateId}`, { method: "PATCH", headers: { ...auth(), "content-type": "application/json" }, body: stream });
      expect((await expectErrorBody(r, 413)).code).toBe("payload_too_large");
    });

    const chunked = (text: string) => {
      const bytes = new TextEncoder().encode(text);
      return new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += 64 * 1024) c.enqueue(bytes.subarray(i, i + 64 * 1024));
          c.close();
        },
      });
    };

    test("an over-limit body to /mcp is refused the same way, declared or chunked", async () => {
      const r = await fetch(`${base}/mcp`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: big });
      await expectErrorBody(r, 413);
      const c = await fetch(`${base}/mcp`, { method: "POST", headers: { ...auth(), "content-type": "application/json", accept: "application/json, text/event-stream" }, body: chunked(big) });
      expect((await expectErrorBody(c, 413)).code).toBe("payload_too_large");
    });

    test("an /mcp body nested deeper than 32 levels → 400 before the SDK parses it", async () => {
      const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_spend","arguments":{"x":${"[".repeat(50_000)}}}}`;
      const [r, ms] = await timed(() => fetch(`${base}/mcp`, { method: "POST", headers: { ...auth(), "content-type": "application/json", accept: "application/json, text/event-stream" }, body: deep }));
      await expectErrorBody(r, 400);
      expect(ms).toBeLessThan(100);
    });

    test("a 200 MB declared body gets the 413 error body (not the server's empty 413), unread", async () => {
      const res = await rawHttp(
        server.port!,
        `POST /beta/v1/org/${ctx.org.id}/cost-estimates HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer ${ctx.org.key}\nContent-Type: application/json\nContent-Length: ${200 * 1024 * 1024}\nConnection: close\n`,
      );
      expect(res.status).toBe(413);
      expect(res.text).toContain('"code":"payload_too_large"');
      expectNoInternals(res.text);
    });

    test("OAuth endpoints cut a chunked body off at 64 KiB and answer in OAuth's format", async () => {
      const form = `grant_type=authorization_code&code=${"c".repeat(200 * 1024)}`;
      const r = await fetch(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: chunked(form) });
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ error: "invalid_request", error_description: expect.stringContaining("too large") });
    });

    test("an estimate description of 4,001 code points → 422; 4,000 emoji are accepted", async () => {
      const over = await ctx.orgRequest("PATCH", `/cost-estimates/${estimateId}`, { body: { description: "a".repeat(4001) } });
      expect((await expectErrorBody(over, 422)).errors).toHaveProperty("description");
      const ok = await ctx.orgRequest("PATCH", `/cost-estimates/${estimateId}`, { body: { description: "💸".repeat(4000) } });
      expect(ok.status).toBe(200);
    });

    test("another media type → 415 with the error body", async () => {
      const r = await ctx.orgRequest("PATCH", `/cost-estimates/${estimateId}`, { rawBody: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
      await expectErrorBody(r, 415);
    });
  });

  describe("7. scope before parsing or validation", () => {
    test("a reports:read key posting an invalid, malformed, deep or non-object body → 403, never a schema detail", async () => {
      const key = (await createApiKey(ctx.s.db, { orgId: ctx.org.id, scopes: ["reports:read"] })).key;
      for (const rawBody of ['{"provider":"nope","bogus":1}', "{not json", "[".repeat(5000), "123", ""]) {
        const r = await ctx.orgRequest("POST", "/cost-estimates", { key, rawBody });
        const body = await expectErrorBody(r, 403);
        expect(body.code).toBe("insufficient_scope");
        expect(body.errors).toEqual({});
      }
      const put = await ctx.orgRequest("PUT", `/commitment-plan-templates/${templateId}`, { key, rawBody: '{"name":1}' });
      expect((await expectErrorBody(put, 403)).code).toBe("insufficient_scope");
    });

    test("no credential → 401 before the body is looked at", async () => {
      const r = await ctx.orgRequest("POST", "/cost-estimates", { key: null, rawBody: "{not json" });
      await expectErrorBody(r, 401);
    });

    test("a Beta route that declares no scope stops the app at start", () => {
      const undeclared = new Elysia().use(orgRoutes(ctx.s, "/beta/v1/org/:org_id/undeclared").get("", () => "served"));
      expect(() => new OrgGuard(ctx.s, rateLimiterOf(ctx.s)).declare(undeclared.routes)).toThrow("declares no scope");
    });

    test("a Beta route reached without the guard fails closed (500), never served unauthenticated", async () => {
      let served = false;
      const unguarded = new Elysia().use(
        orgRoutes(ctx.s, "/beta/v1/org/:org_id/unguarded").get("", () => ((served = true), "served"), { scope: "any" }),
      );
      const r = await unguarded.handle(new Request(`http://localhost/beta/v1/org/${ctx.org.id}/unguarded`, { headers: auth() }));
      expect(r.status).toBe(500);
      expect(served).toBe(false);
    });

    test("every Beta operation publishes the scope it requires", async () => {
      const doc = await (await ctx.request("GET", "/openapi.json")).json();
      for (const [path, ops] of Object.entries<any>(doc.paths)) {
        if (!path.startsWith("/beta/v1/org/")) continue;
        for (const [method, op] of Object.entries<any>(ops)) expect({ method, path, scope: op["x-required-scope"] }).toMatchObject({ scope: expect.any(String) });
      }
    });
  });

  describe("8. template PUT takes a JSON object only", () => {
    for (const rawBody of ["123", "null", "[]", "true", '"text"', ""]) {
      test(`PUT body ${JSON.stringify(rawBody)} → 422, template unchanged`, async () => {
        const before = await (await ctx.orgRequest("GET", `/commitment-plan-templates/${templateId}`)).json();
        const r = await ctx.orgRequest("PUT", `/commitment-plan-templates/${templateId}`, { rawBody });
        const body = await expectErrorBody(r, 422);
        expect(body.errors).toHaveProperty("(root)");
        const after = await (await ctx.orgRequest("GET", `/commitment-plan-templates/${templateId}`)).json();
        expect(after).toEqual(before);
      });
    }
  });

  describe("found by the fuzz suite", () => {
    const withOwnKey = (base: object, key: string, value: unknown) => {
      const text = JSON.stringify(base);
      return `${text.slice(0, -1)}${text.length > 2 ? "," : ""}${JSON.stringify(key)}:${JSON.stringify(value)}}`;
    };

    test("a top-level __proto__ key is refused (422 naming it), never silently dropped, on every kind of body", async () => {
      const before = await (await ctx.orgRequest("GET", `/commitment-plan-templates/${templateId}`)).json();
      const cases: [string, string, string][] = [
        ["POST", "/support/bug-reports", withOwnKey(validBug(), "__proto__", { summary: "x" })],
        ["PUT", `/commitment-plan-templates/${templateId}`, withOwnKey({}, "__proto__", { name: "changed" })],
        ["POST", "/cost-estimates", withOwnKey({ provider: "aws", name: "proto" }, "__proto__", null)],
      ];
      for (const [method, path, raw] of cases) {
        const r = await fetch(`${org()}${path}`, { method, headers: { ...auth(), "content-type": "application/json" }, body: raw });
        const body = await expectErrorBody(r, 422);
        expect({ path, errors: body.errors }).toEqual({ path, errors: { __proto__: ["is not a known field"] } });
      }
      const after = await (await ctx.orgRequest("GET", `/commitment-plan-templates/${templateId}`)).json();
      expect(after).toEqual(before);
      const estimates = await (await ctx.orgRequest("GET", "/cost-estimates")).json();
      expect(JSON.stringify(estimates)).not.toContain('"proto"');
    });

    test("a nested __proto__ key is named by its path", async () => {
      const raw = `{"provider":"aws","name":"n","line_items":[{"__proto__":{"quantity":1}}]}`;
      const r = await fetch(`${org()}/cost-estimates`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: raw });
      const body = await expectErrorBody(r, 422);
      expect(body.errors).toEqual({ "line_items.0.__proto__": ["is not a known field"] });
    });

    test("a report filter holding NUL or over 512 characters → 400 naming the parameter, before any byte of a 200", async () => {
      // A period the report serves, so the query would run (and fail mid-stream) without the check.
      const periods = await (await fetch(`${org()}/allocation-reports/cloud_bill_by_service/periods`, { headers: auth() })).json();
      const { year, month } = periods.periods?.[0] ?? periods[0];
      const okQuery = `${org()}/allocation-reports/cloud_bill_by_service?year=${year}&month=${month}&service_name=`;
      expect((await fetch(`${okQuery}Amazon%20EC2`, { headers: auth() })).status).toBe(200);
      for (const value of ["a%00b", "%00", "x".repeat(513)]) {
        for (const format of ["json", "csv"]) {
          const r = await fetch(`${okQuery}${value}&format=${format}`, { headers: auth() });
          const body = await expectErrorBody(r, 400);
          expect(Object.keys(body.errors)).toEqual(["service_name"]);
        }
      }
    });

    test("megabyte-long API key scopes are refused in milliseconds (no per-byte uniqueness hashing)", async () => {
      const big = "s".repeat(300_000);
      const raw = JSON.stringify({ name: "k", scopes: [big, `${big}1`, `${big}2`] });
      const [r, ms] = await timed(() => fetch(`${org()}/api-keys`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: raw }));
      const body = await expectErrorBody(r, 422);
      expect(Object.keys(body.errors)).toEqual(["scopes"]);
      expect(ms).toBeLessThan(100);
    });

    test("API key scopes: a repeat or more values than there are scopes → 422 naming scopes", async () => {
      for (const scopes of [["reports:read", "reports:read"], Array(8).fill("reports:read"), [], ["nope"], "reports:read"]) {
        const r = await ctx.orgRequest("POST", "/api-keys", { body: { name: "k", scopes } });
        const body = await expectErrorBody(r, 422);
        expect(Object.keys(body.errors)).toEqual(["scopes"]);
      }
      const ok = await ctx.orgRequest("POST", "/api-keys", { body: { name: "k", scopes: ["reports:read", "estimates:read"] } });
      expect(ok.status).toBe(200);
      expect((await ok.json()).scopes.sort()).toEqual(["estimates:read", "reports:read"]);
    });
  });
});
