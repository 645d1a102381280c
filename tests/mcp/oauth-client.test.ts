// The SDK client's own OAuth flow against our authorization server: 401 → protected resource
// metadata → authorization server metadata → dynamic client registration → PKCE authorize
// (login form driven over plain HTTP) → token → tools/list → tools/call.
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { FORM, Jar, MCP_RESOURCE, REST_RESOURCE, csrfFrom, form, makeUser, obtainTokens, pkce, registerClient, send, authorizeQuery, REDIRECT as HELPER_REDIRECT } from "../oauth/helpers.ts";
import { MCP_SCOPES } from "../../lib/mcp/scopes.ts";
import { SCOPES } from "../../lib/auth/scopes.ts";
import { ALL_TOOLS } from "../../lib/mcp/server.ts";
import { NOW, seedOrgBilling } from "./fixtures.ts";

const REDIRECT = "http://127.0.0.1:8765/callback";

/** An in-memory OAuthClientProvider: what a desktop MCP client keeps in its settings. */
class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "SDK e2e client", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(c: OAuthClientInformationMixed) {
    this.client = c;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(u: URL) {
    this.authorizationUrl = u;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The user's browser: the login form, then the consent form for `orgId`; returns the code. */
async function browserLogin(t: TestContext, authorizationUrl: URL, user: { email: string; password: string }, orgId: string): Promise<string> {
  const jar = new Jar();
  const q = authorizationUrl.searchParams.toString();
  const page = await send(t, "GET", `/oauth/authorize?${q}`);
  expect(page.status).toBe(200);
  jar.store(page);
  const login = await send(t, "POST", "/oauth/authorize", {
    headers: { ...FORM, ...jar.header() },
    body: `${q}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: user.email, password: user.password })}`,
  });
  expect(login.status).toBe(303);
  jar.store(login);
  const consent = await send(t, "GET", login.headers.get("location")!, { headers: jar.header() });
  expect(consent.status).toBe(200);
  const approve = await send(t, "POST", "/oauth/authorize", {
    headers: { ...FORM, ...jar.header() },
    body: `${q}&${form({ action: "approve", csrf_token: csrfFrom(await consent.text()), org_id: orgId })}`,
  });
  expect(approve.status).toBe(303);
  const back = new URL(approve.headers.get("location")!);
  expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
  expect(back.searchParams.get("state")).toBe(authorizationUrl.searchParams.get("state"));
  return back.searchParams.get("code")!;
}

describeEachDb("mcp with the SDK client's OAuth flow", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("discovery → registration → PKCE login → token → tools/list → tools/call, org-scoped", async () => {
    const seeded = await seedOrgBilling(t.s.db, t.org.id, { scale: 1, tag: "777" });
    const other = await t.newOrg("Someone else");
    await seedOrgBilling(t.s.db, other.id, { scale: 2, tag: "888" });
    const user = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const provider = new MemoryProvider();
    const requests: string[] = [];
    const fetchApp = async (url: string | URL, init?: RequestInit) => {
      const u = new URL(String(url));
      requests.push(`${init?.method ?? "GET"} ${u.pathname}`);
      return t.app.handle(new Request(u, init));
    };
    const mcpUrl = new URL("http://localhost/mcp");

    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchApp });
    const unauth = new Client({ name: "e2e-oauth", version: "1.0.0" });
    await expect(unauth.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    // Discovery and dynamic registration happened; the client was sent to the login page.
    expect(requests).toContain("GET /.well-known/oauth-protected-resource/mcp");
    expect(requests).toContain("GET /.well-known/oauth-authorization-server");
    expect(requests).toContain("POST /oauth/register");
    expect(provider.client?.client_id).toBeTruthy();
    const authUrl = provider.authorizationUrl!;
    expect(authUrl.pathname).toBe("/oauth/authorize");
    expect(authUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authUrl.searchParams.get("resource")).toBe("http://localhost/mcp");

    const code = await browserLogin(t, authUrl, user, t.org.id);
    await first.finishAuth(code);
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.token_type.toLowerCase()).toBe("bearer");

    const client = new Client({ name: "e2e-oauth", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchApp }));
    const names = (await client.listTools()).tools.map((x) => x.name);
    expect(names).toContain("list_commitments");
    expect(names).toContain("get_organization");
    const org: any = await client.callTool({ name: "get_organization", arguments: {} });
    expect(org.structuredContent.organization.id).toBe(t.org.id);
    expect(org.structuredContent.access.credential).toBe("oauth");
    const c: any = await client.callTool({ name: "list_commitments", arguments: { status: "all" } });
    expect(c.structuredContent.commitments.map((x: any) => x.provider_commitment_id).sort()).toEqual([seeded.spArn, seeded.riId, seeded.expiredId].sort());
    await client.close();
  }, 60_000);

  test("an admin's SDK OAuth flow asks for the assistant's read scopes and gets every tool area, no write scope", async () => {
    const admin = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    const provider = new MemoryProvider();
    const fetchApp = async (url: string | URL, init?: RequestInit) => t.app.handle(new Request(new URL(String(url)), init));
    const mcpUrl = new URL("http://localhost/mcp");
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchApp });
    await expect(new Client({ name: "admin", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    // The SDK takes the scope from the 401 challenge (or scopes_supported): the read scopes the tools use.
    expect(provider.authorizationUrl!.searchParams.get("scope")!.split(" ").sort()).toEqual([...MCP_SCOPES].sort());
    await first.finishAuth(await browserLogin(t, provider.authorizationUrl!, admin, t.org.id));
    const granted = provider.saved!.scope!.split(" ");
    expect(granted.sort()).toEqual([...MCP_SCOPES].sort());
    expect(granted.some((sc) => sc.endsWith(":write"))).toBe(false);

    const client = new Client({ name: "admin", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchApp }));
    const names = (await client.listTools()).tools.map((x) => x.name);
    // Every registered tool is reachable: commitments, coverage, recommendations and planning,
    // spend and forecasting, accounts, plus reports, pricing and purchases.
    expect(names.sort()).toEqual(ALL_TOOLS.map((x) => x.name).sort());
    for (const n of ["list_commitments", "get_coverage_and_utilization", "get_recommendations", "get_spend", "forecast_spend", "list_linked_accounts"]) expect(names).toContain(n);
    const org: any = await client.callTool({ name: "get_organization", arguments: {} });
    expect(org.structuredContent.access.scopes.sort()).toEqual([...MCP_SCOPES].sort());
    await client.close();
  }, 60_000);

  test("a token for /mcp never carries a write scope; the REST resource still gets what was asked", async () => {
    const admin = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    // No scope parameter: the assistant's read scopes, not every scope the admin holds.
    const none = await obtainTokens(t, admin, t.org.id, { resource: MCP_RESOURCE });
    expect(none.scope.split(" ").sort()).toEqual([...MCP_SCOPES].sort());
    // Write scopes asked for the assistant are dropped (RFC 6749 §3.3: the server narrows the request).
    const mixed = await obtainTokens(t, admin, t.org.id, { resource: MCP_RESOURCE, scope: "assistant:read templates:write estimates:write purchases:write" });
    expect(mixed.scope).toBe("assistant:read");
    // Only write scopes: nothing the assistant can be given.
    const client = await registerClient(t);
    const { challenge } = pkce();
    const onlyWrite = await send(t, "GET", `/oauth/authorize?${authorizeQuery({ client_id: client.client_id, code_challenge: challenge, scope: "templates:write", resource: MCP_RESOURCE })}`);
    expect(onlyWrite.status).toBe(303);
    const back = new URL(onlyWrite.headers.get("location")!);
    expect(`${back.origin}${back.pathname}`).toBe(HELPER_REDIRECT);
    expect(back.searchParams.get("error")).toBe("invalid_scope");
    // The REST API's resource is unchanged: an admin's token without a scope parameter gets every scope.
    const rest = await obtainTokens(t, admin, t.org.id, { resource: REST_RESOURCE });
    expect(rest.scope.split(" ").sort()).toEqual([...SCOPES].sort());
  }, 60_000);

  test("the consent page describes what the assistant's scopes allow", async () => {
    const viewer = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const client = await registerClient(t);
    const { challenge } = pkce();
    const jar = new Jar();
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: challenge, resource: MCP_RESOURCE });
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    jar.store(page);
    const login = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: viewer.email, password: viewer.password })}` });
    jar.store(login);
    const consent = await (await send(t, "GET", login.headers.get("location")!, { headers: jar.header() })).text();
    expect(consent).toContain("never changes anything");
    expect(consent).toContain("purchase recommendations");
    expect(consent).not.toContain("templates:write");
    expect(consent).not.toContain("support:write");
  }, 60_000);
});
