// The authenticated request path after its performance work (issue 11): the cheap `uuid` format,
// the native key hash, prepared statements on both drivers, the lazy peer address and the
// compiled route patterns — each still behaving as before.
import { expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { FormatRegistry } from "@sinclair/typebox";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { registerFormats } from "../../lib/http/formats.ts";
import { UUID_PATTERN } from "../../lib/ids.ts";
import { hashSecret } from "../../lib/auth/tokens.ts";
import { executeArgument } from "../../lib/db/pglite.ts";
import { peerAddress, rememberPeerAddress } from "../../lib/oauth/peerAddress.ts";
import { compileRoutePattern, pathSegments, routePatternMatches } from "../../lib/http/routePattern.ts";
import { readOrganization } from "../../lib/orgs/service.ts";
import { canonicalRequest } from "../../lib/http/entry.ts";
import { revokeApiKey } from "../../lib/auth/apiKeys.ts";

test("the uuid format is the cheap canonical check, also after the OpenAPI plugin has loaded", async () => {
  await import("@elysiajs/openapi"); // its bundled TypeMap replaces the format when it loads
  registerFormats();
  const uuid = FormatRegistry.Get("uuid")!;
  for (const ok of ["4f9d9562-1234-4abc-9def-0123456789ab", "4F9D9562-1234-4ABC-9DEF-0123456789AB", "00000000-0000-0000-0000-000000000000", "12345678-1234-1234-1234-123456789abc"]) {
    expect(uuid(ok)).toBe(true);
  }
  for (const bad of ["not-a-uuid", "", "4f9d9562-1234-4abc-9def-0123456789a", "4f9d9562-1234-4abc-9def-0123456789abc", "4f9d95621234-4abc-9def-0123456789ab", "{4f9d9562-1234-4abc-9def-0123456789ab}", "urn:uuid:4f9d9562-1234-4abc-9def-0123456789ab", "4f9d9562-1234-4abc-9def-0123456789ag", " 4f9d9562-1234-4abc-9def-0123456789ab", "4f9d9562-1234-4abc-9def-0123456789ab\n"]) {
    expect(uuid(bad)).toBe(false);
  }
  expect(UUID_PATTERN.test("4f9d9562-1234-4abc-9def-0123456789ab")).toBe(true);
});

test("a uuid response field still rejects a non-UUID (the response is not sent as it is)", async () => {
  registerFormats();
  const app = new Elysia()
    .get("/ok", () => ({ id: "4f9d9562-1234-4abc-9def-0123456789ab" }), { response: { 200: t.Object({ id: t.String({ format: "uuid" }) }) } })
    .get("/bad", () => ({ id: "not-a-uuid" }), { response: { 200: t.Object({ id: t.String({ format: "uuid" }) }) } })
    .get("/p/:id", ({ params }) => params.id, { params: t.Object({ id: t.String({ format: "uuid" }) }) });
  expect((await app.handle(new Request("http://localhost/ok"))).status).toBe(200);
  expect((await app.handle(new Request("http://localhost/bad"))).status).not.toBe(200);
  expect((await app.handle(new Request("http://localhost/p/4f9d9562-1234-4abc-9def-0123456789ab"))).status).toBe(200);
  expect((await app.handle(new Request("http://localhost/p/nope"))).status).toBe(422);
});

test("hashSecret is SHA-256 hex of the UTF-8 bytes, as before (stored key hashes still match)", () => {
  expect(hashSecret("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect(hashSecret("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The pure-JS hash it replaces, on a key and on odd text (non-ASCII, a lone surrogate).
  for (const s of ["co_" + "A".repeat(43), "é😀", "a\ud800b", "\udc00", "x".repeat(5000)]) {
    expect(hashSecret(s)).toBe(bytesToHex(sha256(new TextEncoder().encode(s))));
  }
});

test("PGlite EXECUTE arguments: escape strings, fall back for what they cannot spell", () => {
  expect(executeArgument("abc")).toBe("E'abc'");
  expect(executeArgument("it's")).toBe("E'it''s'");
  expect(executeArgument("a\\'b")).toBe("E'a\\\\''b'");
  expect(executeArgument(null)).toBe("NULL");
  expect(executeArgument(12.5)).toBe("E'12.5'");
  expect(executeArgument(12n)).toBe("E'12'");
  for (const v of [undefined, "nul\u0000", Number.NaN, Infinity, true, new Date(), ["a"], { a: 1 }, new Uint8Array(1)]) expect(executeArgument(v)).toBeUndefined();
});

test("the peer address may be handed over as a function, asked only when read", () => {
  const r = new Request("http://localhost/");
  let asked = 0;
  rememberPeerAddress(r, () => (asked++, "10.0.0.1"));
  expect(asked).toBe(0);
  expect(peerAddress(r)).toBe("10.0.0.1");
  expect(peerAddress(r)).toBe("10.0.0.1");
  expect(asked).toBe(1);
  const gone = new Request("http://localhost/");
  rememberPeerAddress(gone, () => null);
  expect(peerAddress(gone)).toBeUndefined();
  const plain = new Request("http://localhost/");
  rememberPeerAddress(plain, "10.0.0.2");
  expect(peerAddress(plain)).toBe("10.0.0.2");
});

test("compiled route patterns: `:param` is one segment, a trailing `*` the rest, a trailing slash ignored", () => {
  const cases: [string, string, boolean][] = [
    ["/beta/v1/org/:org_id", "/beta/v1/org/abc", true],
    ["/beta/v1/org/:org_id", "/beta/v1/org/abc/", true],
    ["/beta/v1/org/:org_id/", "/beta/v1/org/abc", true],
    ["/beta/v1/org/:org_id", "/beta/v1/org/abc/x", false],
    ["/beta/v1/org/:org_id/cost-estimates/:id", "/beta/v1/org/a/cost-estimates/b", true],
    ["/beta/v1/org/:org_id/cost-estimates/:id", "/beta/v1/org/a/cost-estimate/b", false],
    ["/docs/*", "/docs", true],
    ["/docs/*", "/docs/a/b/c", true],
    ["/docs/*", "/doc", false], // matched before: a shorter path's segments went unchecked
    ["/docs/*", "/x/a/b", false],
    ["/", "/", true],
    ["/", "//", true],
  ];
  for (const [pattern, path, expected] of cases) {
    expect(routePatternMatches(pattern, path)).toBe(expected);
    expect(compileRoutePattern(pattern)(pathSegments(path))).toBe(expected);
  }
});

test("canonicalRequest keeps a URL on the last origin it found plain, and still rebuilds any other", () => {
  const plain = new Request("http://127.0.0.1:3000/beta/v1/org/x");
  expect(canonicalRequest(plain)).toBe(plain);
  const again = new Request("http://127.0.0.1:3000/healthz?x=1");
  expect(canonicalRequest(again)).toBe(again);
  // A short authority right after: Elysia's fixed path offset would misread it.
  expect(canonicalRequest(new Request("http://xx/a/beta/v1/org/x")).url).toBe("http://host.invalid/a/beta/v1/org/x");
  expect(canonicalRequest(new Request("http://127.0.0.1:30001/x")).url).toBe("http://127.0.0.1:30001/x");
  expect(canonicalRequest(new Request("http://xx/a/beta/v1/org/x")).url).toBe("http://host.invalid/a/beta/v1/org/x");
});

describeEachDb("prepared statements on the request path", (driver) => {
  const t = useTestApp(driver);

  test("query(…, { prepare: true }) answers as the plain query does, every time", async () => {
    const text = `SELECT $1::text AS s, $2::int AS n, $3::uuid AS u, $4::text AS missing`;
    const tricky = ["plain", "it's", "back\\slash", "\\'; SELECT 1; --", "é😀", "$1 $$ E'x'"];
    for (const s of tricky) {
      const params = [s, 42, t.org.id, null];
      const plain = await t.s.handle.query(text, params);
      for (let i = 0; i < 3; i++) expect(await t.s.handle.query(text, params, { prepare: true })).toEqual(plain);
    }
    // A value the PGlite path cannot spell as an EXECUTE argument runs as a plain query.
    expect(await t.s.handle.query(`SELECT $1::text[] AS a`, [["x", "y"]], { prepare: true })).toEqual([{ a: ["x", "y"] }]);
    // Errors are the plain query's: a malformed uuid is a data exception (→ 400 in the app).
    const err = await t.s.handle.query(text, ["x", 1, "not-a-uuid", null], { prepare: true }).catch((e) => e);
    expect(err?.code).toBe("22P02");
  });

  test("a prepared statement dropped behind the handle's back is prepared again", async () => {
    const text = `SELECT id, name FROM organizations WHERE id = $1`;
    const first = await t.s.handle.query(text, [t.org.id], { prepare: true });
    if (driver === "pglite") await t.s.handle.query(`DEALLOCATE ALL`);
    expect(await t.s.handle.query(text, [t.org.id], { prepare: true })).toEqual(first);
    expect(await t.s.handle.query(text, [t.org.id], { prepare: true })).toEqual(first);
  });

  test("readOrganization answers what GET /beta/v1/org/{id} always answered", async () => {
    const o = await readOrganization(t.s.handle, t.org.id);
    expect(o).toMatchObject({ id: t.org.id, name: "Test org", parent_id: null });
    expect(new Date(o.created_at).toISOString()).toBe(o.created_at);
    const r = await t.orgRequest("GET", "");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual(o);
    await expect(readOrganization(t.s.handle, "00000000-0000-0000-0000-000000000000")).rejects.toMatchObject({ status: 404 });
  });

  test("a revoked key fails on its very next request (nothing cached), many times over", async () => {
    const other = await t.newOrg("revoke me");
    for (let i = 0; i < 5; i++) expect((await t.request("GET", `/beta/v1/org/${other.id}`, { key: other.key })).status).toBe(200);
    const [{ id }] = await t.s.handle.query<{ id: string }>(`SELECT id FROM api_keys WHERE org_id = $1`, [other.id]);
    await revokeApiKey(t.s.db, id);
    for (let i = 0; i < 5; i++) expect((await t.request("GET", `/beta/v1/org/${other.id}`, { key: other.key })).status).toBe(401);
  });
});
