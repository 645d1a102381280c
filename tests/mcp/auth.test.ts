import { MCP_SCOPES } from "../../lib/mcp/scopes.ts";
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey, revokeApiKey } from "../../lib/auth/apiKeys.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { NOW, initializeBody, mcpHeaders, seedOrgBilling } from "./fixtures.ts";
import { makeUser, obtainTokens, MCP_RESOURCE, REST_RESOURCE } from "../oauth/helpers.ts";

const PRM = "http://localhost/.well-known/oauth-protected-resource/mcp";

describeEachDb("mcp authentication, origin and CORS", (driver) => {
  const t = useTestApp(driver, { now: () => NOW, config: { mcpAllowedOrigins: ["https://claude.example"] } });

  const rpc = (key: string | null, body: unknown = initializeBody, extra: Record<string, string> = {}) =>
    t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(key, extra), body: JSON.stringify(body) }));

  async function toolNames(key: string): Promise<string[]> {
    const r = await rpc(key, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
    expect(r.status).toBe(200);
    return ((await r.json()) as any).result.tools.map((x: any) => x.name);
  }

  async function callTool(key: string, name: string, args: Record<string, unknown> = {}) {
    const r = await rpc(key, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name, arguments: args } });
    expect(r.status).toBe(200);
    return ((await r.json()) as any).result;
  }

  test("protected resource metadata (RFC 9728)", async () => {
    const r = await t.app.handle(new Request(PRM));
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({
      resource: "http://localhost/mcp",
      authorization_servers: ["http://localhost"],
      scopes_supported: [...MCP_SCOPES],
      bearer_methods_supported: ["header"],
    });
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
  }, 60_000);

  test("no token → 401 with resource_metadata and no error code, spec error body", async () => {
    const r = await rpc(null);
    expect(r.status).toBe(401);
    const www = r.headers.get("www-authenticate")!;
    expect(www).toBe(`Bearer resource_metadata="${PRM}", scope="${MCP_SCOPES.join(" ")}"`);
    const b = await r.json();
    expect(b).toMatchObject({ error: "Unauthorized", type: "unauthorized", code: 401, errors: {}, url: "/mcp" });
  }, 60_000);

  test("GET and DELETE without a token are challenged too", async () => {
    for (const method of ["GET", "DELETE"]) {
      const r = await t.app.handle(new Request("http://localhost/mcp", { method, headers: { accept: "text/event-stream" } }));
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toContain("resource_metadata=");
    }
  }, 60_000);

  test("unknown and revoked tokens → 401 invalid_token", async () => {
    const r = await rpc("co_definitelynotakey");
    expect(r.status).toBe(401);
    const www = r.headers.get("www-authenticate")!;
    expect(www).toContain('error="invalid_token"');
    expect(www).toContain(`resource_metadata="${PRM}"`);
    const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] });
    expect((await rpc(k.key)).status).toBe(200);
    await revokeApiKey(t.s.db, k.id);
    expect((await rpc(k.key)).status).toBe(401);
    // A malformed Authorization header is an invalid token, not a missing one.
    const m = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: { ...mcpHeaders(null), authorization: "Basic Zm9vOmJhcg==" }, body: JSON.stringify(initializeBody) }));
    expect(m.status).toBe(401);
    expect(m.headers.get("www-authenticate")).toContain('error="invalid_token"');
  }, 60_000);

  test("valid key without assistant:read → 403 insufficient_scope", async () => {
    const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["reports:read", "estimates:read"] });
    const r = await rpc(k.key);
    expect(r.status).toBe(403);
    const www = r.headers.get("www-authenticate")!;
    expect(www).toContain('Bearer error="insufficient_scope"');
    expect(www).toContain('scope="assistant:read"');
    expect((await r.json()).code).toBe("insufficient_scope");
  }, 60_000);

  test("API key with assistant:read works (Bearer and x-api-key); tools follow the key's scopes", async () => {
    const only = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] });
    const init = await rpc(only.key);
    expect(init.status).toBe(200);
    const body = (await init.json()) as any;
    expect(body.result.serverInfo.name).toBe("commitops");
    expect(body.result.capabilities.tools).toBeDefined();
    // Stateless: no session id is handed out.
    expect(init.headers.get("mcp-session-id")).toBeNull();

    const names = await toolNames(only.key);
    expect(names).toContain("list_commitments");
    expect(names).toContain("get_spend");
    expect(names).toContain("forecast_spend");
    expect(names).toContain("list_linked_accounts");
    expect(names).not.toContain("price_cost_estimate");
    expect(names).not.toContain("get_recommendations");

    const withEstimates = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read", "estimates:read"] });
    const n2 = await toolNames(withEstimates.key);
    expect(n2).toContain("price_cost_estimate");
    expect(n2).not.toContain("generate_commitment_plan");
    // Calling a tool the scopes do not allow is refused like an unknown tool.
    const r = await rpc(only.key, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "price_cost_estimate", arguments: { estimate_id: crypto.randomUUID() } } });
    const j = (await r.json()) as any;
    expect(j.error ?? j.result?.isError).toBeTruthy();

    const x = await t.app.handle(new Request("http://localhost/mcp", { method: "POST", headers: { ...mcpHeaders(null), "x-api-key": only.key }, body: JSON.stringify(initializeBody) }));
    expect(x.status).toBe(200);
  }, 60_000);

  test("mounted at exactly /mcp", async () => {
    expect((await t.app.handle(new Request("http://localhost/mcp/", { method: "POST", headers: mcpHeaders(t.org.key), body: JSON.stringify(initializeBody) }))).status).toBe(200);
    for (const path of ["/mcpx", "/mcp/tools"]) {
      const r = await t.app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: mcpHeaders(t.org.key), body: JSON.stringify(initializeBody) }));
      expect(r.status).toBe(404);
    }
  }, 60_000);

  test("GET and DELETE answer 405 (stateless server: no standalone stream, no session)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const r = await t.app.handle(new Request("http://localhost/mcp", { method, headers: mcpHeaders(t.org.key) }));
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toContain("POST");
    }
    const put = await t.app.handle(new Request("http://localhost/mcp", { method: "PUT", headers: mcpHeaders(t.org.key), body: "{}" }));
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toContain("POST");
  }, 60_000);

  test("each organization sees only its own data", async () => {
    const a = await t.newOrg("Org A", ["assistant:read"]);
    const b = await t.newOrg("Org B", ["assistant:read"]);
    const sa = await seedOrgBilling(t.s.db, a.id, { scale: 1, tag: "111" });
    const sb = await seedOrgBilling(t.s.db, b.id, { scale: 3, tag: "999" });

    const ca = (await callTool(a.key, "list_commitments", { status: "all" })).structuredContent;
    const cb = (await callTool(b.key, "list_commitments", { status: "all" })).structuredContent;
    expect(ca.commitments.map((c: any) => c.provider_commitment_id).sort()).toEqual([sa.spArn, sa.riId, sa.expiredId].sort());
    expect(cb.commitments.map((c: any) => c.provider_commitment_id).sort()).toEqual([sb.spArn, sb.riId, sb.expiredId].sort());

    const la = (await callTool(a.key, "list_linked_accounts")).structuredContent;
    expect(la.accounts.map((x: any) => x.account_id).sort()).toEqual(sa.accountIds);
    const lb = (await callTool(b.key, "list_linked_accounts")).structuredContent;
    expect(lb.accounts.map((x: any) => x.account_id).sort()).toEqual(sb.accountIds);

    const spendA = (await callTool(a.key, "get_spend", { group_by: "account" })).structuredContent;
    const spendB = (await callTool(b.key, "get_spend", { group_by: "account" })).structuredContent;
    expect(spendA.rows.length).toBeGreaterThan(0);
    expect(spendB.rows.length).toBeGreaterThan(0);
    expect(spendA.totals.map((x: any) => x.currency)).toEqual(["USD"]);
    expect(spendA.totals[0].effective_cost).toBeGreaterThan(0);
    expect(spendA.rows.every((r: any) => sa.accountIds.includes(r.key))).toBe(true);
    expect(spendB.rows.every((r: any) => sb.accountIds.includes(r.key))).toBe(true);
    expect(spendB.totals[0].effective_cost).toBeCloseTo(spendA.totals[0].effective_cost * 3, 1);

    // Another org's commitment, by id or provider id, does not exist for this caller.
    const other = cb.commitments[0];
    for (const id of [other.id, other.provider_commitment_id]) {
      const r = await callTool(a.key, "get_commitment", { commitment_id: id });
      expect(r.isError).toBe(true);
      expect(r.content[0].text).toContain("No commitment");
    }
    const org = (await callTool(a.key, "get_organization")).structuredContent;
    expect(org.organization).toMatchObject({ id: a.id, name: "Org A" });
    expect(org.access.scopes).toEqual(["assistant:read"]);
  }, 60_000);

  test("a browser Origin other than the public URL or the allow-list is refused", async () => {
    const evil = await rpc(t.org.key, initializeBody, { origin: "http://evil.example.com" });
    expect(evil.status).toBe(403);
    expect((await evil.json()).code).toBe("origin_not_allowed");
    // Refused before authentication: no token needed to be refused, nothing revealed.
    expect((await rpc(null, initializeBody, { origin: "http://evil.example.com" })).status).toBe(403);

    const own = await rpc(t.org.key, initializeBody, { origin: "http://localhost" });
    expect(own.status).toBe(200);
    expect(own.headers.get("access-control-allow-origin")).toBe("http://localhost");
    expect(own.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id");
    expect(own.headers.get("access-control-expose-headers")).toContain("WWW-Authenticate");

    const listed = await rpc(t.org.key, initializeBody, { origin: "https://claude.example" });
    expect(listed.status).toBe(200);
    // A 401 from an allowed origin carries CORS headers so the page can read the challenge.
    const challenge = await rpc(null, initializeBody, { origin: "https://claude.example" });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get("access-control-allow-origin")).toBe("https://claude.example");
    expect(challenge.headers.get("access-control-expose-headers")).toContain("WWW-Authenticate");
    // No Origin (a non-browser client) passes.
    expect((await rpc(t.org.key)).status).toBe(200);
  }, 60_000);

  test("CORS preflight", async () => {
    const pre = await t.app.handle(
      new Request("http://localhost/mcp", {
        method: "OPTIONS",
        headers: { origin: "https://claude.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, mcp-protocol-version" },
      }),
    );
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://claude.example");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    const allowed = pre.headers.get("access-control-allow-headers")!.toLowerCase();
    for (const h of ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id"]) expect(allowed).toContain(h);
    expect(pre.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id");

    const bad = await t.app.handle(new Request("http://localhost/mcp", { method: "OPTIONS", headers: { origin: "http://evil.example.com", "access-control-request-method": "POST" } }));
    expect(bad.status).toBe(403);
    expect(bad.headers.get("access-control-allow-origin")).toBeNull();

    const meta = await t.app.handle(new Request(PRM, { method: "OPTIONS", headers: { origin: "https://claude.example", "access-control-request-method": "GET" } }));
    expect(meta.status).toBe(204);
    expect(meta.headers.get("access-control-allow-origin")).toBe("*");
  }, 60_000);

  test("the per-credential API rate limit applies to /mcp too (429 + Retry-After)", async () => {
    const s = createServices(t.s.handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { apiRateLimitPerMinute: 3, jobsEnabled: false, seedDemo: false }), createLogger("silent"));
    const app = createApp(s);
    const send = (key: string) => app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(key), body: JSON.stringify(initializeBody) }));
    const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] });
    for (let i = 0; i < 3; i++) expect((await send(k.key)).status).toBe(200);
    const limited = await send(k.key);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another credential is unaffected.
    const other = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["assistant:read"] });
    expect((await send(other.key)).status).toBe(200);
  }, 60_000);

  test("OAuth access tokens: audience-bound to /mcp, assistant:read required", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const good = await obtainTokens(t, user, t.org.id, { scope: "assistant:read", resource: MCP_RESOURCE });
    const ok = await rpc(good.access_token);
    expect(ok.status).toBe(200);
    const names = await toolNames(good.access_token);
    expect(names).toContain("list_commitments");
    // Only what was granted: no estimates tools with an assistant-only token.
    expect(names).not.toContain("price_cost_estimate");

    const rest = await obtainTokens(t, user, t.org.id, { scope: "assistant:read reports:read", resource: REST_RESOURCE });
    const wrongAud = await rpc(rest.access_token);
    expect(wrongAud.status).toBe(401);
    expect(wrongAud.headers.get("www-authenticate")).toContain('error="invalid_token"');

    const noScope = await obtainTokens(t, user, t.org.id, { scope: "reports:read", resource: MCP_RESOURCE });
    const r = await rpc(noScope.access_token);
    expect(r.status).toBe(403);
    expect(r.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  }, 60_000);
});
