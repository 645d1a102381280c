/**
 * Members and roles on the Beta API (/members) and the caller's role + child orgs on
 * GET /beta/v1/org/{id}: list/add/change/remove, the last-admin rule (also under concurrent
 * demotions), admin-only access, org isolation, and a removed or demoted member's credentials
 * losing their power on the very next request.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { addMember, createOrganization, createUser, findUserByEmail } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { SCOPES } from "../../lib/auth/scopes.ts";
import { REST_RESOURCE, makeUser, obtainTokens, token } from "../oauth/helpers.ts";

describeEachDb("orgs: members API", (driver) => {
  const t = useTestApp(driver);
  let seq = 0;
  const email = (tag: string) => `${tag}.${driver}.${++seq}.${Math.random().toString(36).slice(2, 7)}@example.com`;

  const call = async (method: string, orgId: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await t.request(method, `/beta/v1/org/${orgId}${path}`, { key, body, headers });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null };
  };

  /** A fresh org with a CLI admin key (no user) and `admins` admin users. */
  async function orgWith(admins: number) {
    const o = await createOrganization(t.s.db, { name: `Org ${driver} ${++seq}` });
    const key = (await createApiKey(t.s.db, { orgId: o.id })).key;
    const ids: string[] = [];
    for (let i = 0; i < admins; i++) {
      const u = await createUser(t.s.db, { email: email("admin") });
      await addMember(t.s.db, { orgId: o.id, userId: u.id, role: "admin" });
      ids.push(u.id);
    }
    return { id: o.id, key, admins: ids };
  }

  test("add by email, list (paged), change the role, remove", async () => {
    const org = await orgWith(1);
    const existing = await createUser(t.s.db, { email: email("Existing"), name: "Ex Isting", password: "correct horse battery" });

    // An existing user, found case-insensitively.
    const added = await call("POST", org.id, "/members", org.key, { email: existing.email.toUpperCase(), role: "member" });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ user_id: existing.id, email: existing.email, name: "Ex Isting", role: "member", created_at: expect.any(String) });
    expect(added.headers.get("location")).toBe(`/beta/v1/org/${org.id}/members/${existing.id}`);

    // An unknown email becomes a user without a password.
    const newcomer = email("newcomer");
    const invited = await call("POST", org.id, "/members", org.key, { email: newcomer, role: "viewer" });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({ email: newcomer, name: null, role: "viewer" });
    const u = await findUserByEmail(t.s.db, newcomer);
    expect(u?.id).toBe(invited.body.user_id);
    expect(u?.passwordHash).toBeNull();

    // Already a member (any role) → 409.
    const again = await call("POST", org.id, "/members", org.key, { email: existing.email, role: "admin" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("already_member");

    const list = await call("GET", org.id, "/members", org.key);
    expect(list.status).toBe(200);
    expect(list.body.map((m: any) => m.user_id)).toEqual([org.admins[0], existing.id, invited.body.user_id]);
    expect(list.body[0]).toEqual({ user_id: org.admins[0], email: expect.any(String), name: null, role: "admin", created_at: expect.any(String) });
    expect(JSON.parse(list.headers.get("x-pagination")!)).toMatchObject({ total_count: 3 });
    const page2 = await call("GET", org.id, "/members?page=2&page_size=2", org.key);
    expect(page2.body.map((m: any) => m.user_id)).toEqual([invited.body.user_id]);
    expect(JSON.parse(page2.headers.get("x-pagination")!)).toEqual({ page: 2, page_size: 2, total_count: 3, total_pages: 2 });

    const changed = await call("PATCH", org.id, `/members/${existing.id}`, org.key, { role: "admin" });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ user_id: existing.id, role: "admin" });

    const removed = await call("DELETE", org.id, `/members/${invited.body.user_id}`, org.key);
    expect(removed.status).toBe(204);
    expect((await call("GET", org.id, "/members", org.key)).body.map((m: any) => m.role)).toEqual(["admin", "admin"]);
    expect((await call("DELETE", org.id, `/members/${invited.body.user_id}`, org.key)).status).toBe(404);
    expect((await call("PATCH", org.id, `/members/${invited.body.user_id}`, org.key, { role: "viewer" })).status).toBe(404);
  });

  test("bad input: unknown role or field 422, malformed email 422, malformed user id 400", async () => {
    const org = await orgWith(1);
    for (const body of [{ email: email("x"), role: "owner" }, { email: email("x") }, { email: email("x"), role: "viewer", extra: 1 }, { email: "not an email", role: "viewer" }]) {
      const r = await call("POST", org.id, "/members", org.key, body);
      expect(r.status).toBe(422);
    }
    expect((await call("PATCH", org.id, `/members/${org.admins[0]}`, org.key, { role: "root" })).status).toBe(422);
    expect((await call("PATCH", org.id, "/members/nope", org.key, { role: "viewer" })).status).toBe(400);
    expect((await call("DELETE", org.id, "/members/nope", org.key)).status).toBe(400);
  });

  test("POST honours Idempotency-Key: a retry replays the 201 instead of answering 409", async () => {
    const org = await orgWith(1);
    const body = { email: email("idem"), role: "member" };
    const headers = { "idempotency-key": `members-${driver}-${seq}` };
    const first = await call("POST", org.id, "/members", org.key, body, headers);
    const retry = await call("POST", org.id, "/members", org.key, body, headers);
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    const other = await call("POST", org.id, "/members", org.key, { ...body, role: "viewer" }, headers);
    expect(other.status).toBe(422);
    expect(other.body.code).toBe("idempotency_key_reused");
  });

  test("the last admin can be neither demoted nor removed (409 last_admin); with two admins one can go", async () => {
    const org = await orgWith(1);
    const [only] = org.admins;
    for (const role of ["member", "viewer"]) {
      const r = await call("PATCH", org.id, `/members/${only}`, org.key, { role });
      expect(r.status).toBe(409);
      expect(r.body.code).toBe("last_admin");
    }
    const del = await call("DELETE", org.id, `/members/${only}`, org.key);
    expect(del.status).toBe(409);
    expect(del.body.code).toBe("last_admin");
    // Re-asserting admin is fine.
    expect((await call("PATCH", org.id, `/members/${only}`, org.key, { role: "admin" })).status).toBe(200);

    const second = await createUser(t.s.db, { email: email("second") });
    await addMember(t.s.db, { orgId: org.id, userId: second.id, role: "admin" });
    expect((await call("PATCH", org.id, `/members/${only}`, org.key, { role: "viewer" })).status).toBe(200);
    expect((await call("DELETE", org.id, `/members/${second.id}`, org.key)).body.code).toBe("last_admin");
    expect((await call("GET", org.id, "/members", org.key)).body.filter((m: any) => m.role === "admin").map((m: any) => m.user_id)).toEqual([second.id]);
  });

  test("two concurrent demotions (or removals) of the last two admins: exactly one succeeds", async () => {
    for (let round = 0; round < 6; round++) {
      const org = await orgWith(2);
      const [a, b] = org.admins as [string, string];
      const act = (id: string, i: number) =>
        round % 3 === 2 && i === 1 ? call("DELETE", org.id, `/members/${id}`, org.key) : call("PATCH", org.id, `/members/${id}`, org.key, { role: round % 3 === 1 ? "viewer" : "member" });
      const results = await Promise.all([act(a, 0), act(b, 1)]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses[0]).toBeLessThan(300);
      expect(statuses[1]).toBe(409);
      expect(results.find((r) => r.status === 409)!.body.code).toBe("last_admin");
      const admins = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM memberships WHERE org_id = $1 AND role = 'admin'", [org.id]);
      expect(admins[0]!.n).toBe(1);
    }
  });

  test("non-admins are refused (403) on every members route; GET /org tells them their role", async () => {
    const org = await orgWith(1);
    for (const role of ["viewer", "member"] as const) {
      const user = await createUser(t.s.db, { email: email(role) });
      await addMember(t.s.db, { orgId: org.id, userId: user.id, role });
      // A key with every scope, bounded by its creator's role.
      const key = (await createApiKey(t.s.db, { orgId: org.id, createdBy: user.id })).key;
      const reqs: [string, string, unknown?][] = [
        ["GET", "/members"],
        ["POST", "/members", { email: email("x"), role: "admin" }],
        ["PATCH", `/members/${user.id}`, { role: "admin" }],
        ["DELETE", `/members/${org.admins[0]}`],
      ];
      for (const [method, path, body] of reqs) {
        const r = await call(method, org.id, path, key, body);
        expect(r.status).toBe(403);
        expect(r.body.code).toBe("insufficient_scope");
      }
      const me = await call("GET", org.id, "", key);
      expect(me.status).toBe(200);
      expect(me.body.role).toBe(role);
    }
    // A CLI key narrower than every scope is no admin either.
    const narrow = (await createApiKey(t.s.db, { orgId: org.id, scopes: [...SCOPES].filter((s) => s !== "purchases:write") })).key;
    expect((await call("GET", org.id, "/members", narrow)).status).toBe(403);
    expect((await call("GET", org.id, "", narrow)).body.role).toBeNull();
  });

  test("org isolation: another org's members are neither listed nor changeable (404), its key is refused (403)", async () => {
    const mine = await orgWith(1);
    const theirs = await orgWith(2);
    const list = await call("GET", mine.id, "/members", mine.key);
    expect(list.body.map((m: any) => m.user_id)).toEqual(mine.admins);
    expect((await call("PATCH", mine.id, `/members/${theirs.admins[0]}`, mine.key, { role: "viewer" })).status).toBe(404);
    expect((await call("DELETE", mine.id, `/members/${theirs.admins[0]}`, mine.key)).status).toBe(404);
    expect((await call("GET", theirs.id, "/members", mine.key)).status).toBe(403);
    expect((await call("DELETE", theirs.id, `/members/${theirs.admins[0]}`, mine.key)).status).toBe(403);
    // Being a member elsewhere is no membership here: adding them here works.
    const u = (await call("GET", theirs.id, "/members", theirs.key)).body[0];
    expect((await call("POST", mine.id, "/members", mine.key, { email: u.email, role: "viewer" })).status).toBe(201);
    expect((await call("GET", theirs.id, "/members", theirs.key)).body.map((m: any) => m.role)).toEqual(["admin", "admin"]);
  });

  test("a removed member's OAuth token is refused at once (401), its refresh too; a demoted admin loses admin at once", async () => {
    const org = await orgWith(1);
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const tok = await obtainTokens(t, user, org.id, { scope: SCOPES.join(" "), resource: REST_RESOURCE });
    const userKey = (await createApiKey(t.s.db, { orgId: org.id, createdBy: user.id })).key;
    const get = (path: string) => call("GET", org.id, path, tok.access_token);
    expect((await get("/members")).status).toBe(200);
    expect((await get("")).body.role).toBe("admin");

    expect((await call("PATCH", org.id, `/members/${user.id}`, org.key, { role: "member" })).status).toBe(200);
    const refused = await get("/members");
    expect(refused.status).toBe(403);
    expect((await get("")).body.role).toBe("member");
    expect((await get("/commitment-plans")).status).toBe(200); // templates:read is still a member's

    expect((await call("DELETE", org.id, `/members/${user.id}`, org.key)).status).toBe(204);
    const gone = await get("");
    expect(gone.status).toBe(401);
    const refreshed = await token(t, { grant_type: "refresh_token", client_id: tok.client_id, refresh_token: tok.refresh_token });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe("invalid_grant");
    expect((await call("GET", org.id, "", userKey)).status).toBe(401); // and an API key the user made
  });

  test("GET /org: the caller's role and the child organizations", async () => {
    const parent = await orgWith(1);
    const b = await createOrganization(t.s.db, { name: "Beta child", parentId: parent.id });
    const a = await createOrganization(t.s.db, { name: "Alpha child", parentId: parent.id });
    await createOrganization(t.s.db, { name: "Elsewhere" });
    const r = await call("GET", parent.id, "", parent.key);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: parent.id,
      name: expect.any(String),
      parent_id: null,
      created_at: expect.any(String),
      role: null,
      child_orgs: [
        { id: a.id, name: "Alpha child" },
        { id: b.id, name: "Beta child" },
      ],
    });
    const adminKey = (await createApiKey(t.s.db, { orgId: parent.id, createdBy: parent.admins[0] })).key;
    expect((await call("GET", parent.id, "", adminKey)).body.role).toBe("admin");
    const childKey = (await createApiKey(t.s.db, { orgId: a.id })).key;
    expect((await call("GET", a.id, "", childKey)).body).toMatchObject({ parent_id: parent.id, child_orgs: [] });
  });
});
