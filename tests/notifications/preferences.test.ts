/**
 * GET/PUT /notification-preferences through the real app: the calling person's own choice in
 * this organization, role defaults, validation (422 per DESIGN §4), limits, a key without a
 * person (403), the scope, and org isolation.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { EVENT_TYPES } from "../../lib/events/catalog.ts";
import { ADMIN_DEFAULT_EMAIL_EVENTS } from "../../lib/notifications/preferences.ts";
import { addTestMember, orgWithMembers } from "./fixtures.ts";

describeEachDb("notifications: preferences API", (driver) => {
  let clock = new Date("2025-05-01T12:00:00Z");
  const t = useTestApp(driver, { now: () => clock });
  let seq = 0;

  const call = (method: string, orgId: string, key: string | null, body?: unknown, rawBody?: string) =>
    t.request(method, `/beta/v1/org/${orgId}/notification-preferences`, { key, body, rawBody });

  test("defaults until a member chooses: admins the four that need an admin, viewers and members nothing", async () => {
    const org = await orgWithMembers(t.s, `defaults ${++seq}`, { admin: "admin", member: "member", viewer: "viewer" });
    const admin = await (await call("GET", org.id, org.members.admin!.key)).json();
    expect(admin).toEqual({
      email_event_types: [...ADMIN_DEFAULT_EMAIL_EVENTS].sort(),
      is_default: true,
      always_emailed: ["webhook_endpoint.disabled"],
      email_enabled: false,
      updated_at: null,
    });
    for (const who of ["member", "viewer"] as const) {
      const r = await call("GET", org.id, org.members[who]!.key);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ email_event_types: [], is_default: true, always_emailed: [], email_enabled: false, updated_at: null });
    }
  });

  test("any member sets their own choice (a viewer included); another member's stays as it was", async () => {
    const org = await orgWithMembers(t.s, `own ${++seq}`, { admin: "admin", viewer: "viewer" });
    const r = await call("PUT", org.id, org.members.viewer!.key, { email_event_types: ["period.finalized", "anomaly.detected"] });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toEqual({ email_event_types: ["anomaly.detected", "period.finalized"], is_default: false, always_emailed: [], email_enabled: false, updated_at: clock.toISOString() });
    expect(await (await call("GET", org.id, org.members.viewer!.key)).json()).toEqual(body);
    expect((await (await call("GET", org.id, org.members.admin!.key)).json()).is_default).toBe(true);

    // Replaced as a whole, [] included; an admin who chose nothing is still always told of a disabled endpoint.
    clock = new Date(clock.getTime() + 60_000);
    const none = await (await call("PUT", org.id, org.members.admin!.key, { email_event_types: [] })).json();
    expect(none).toEqual({ email_event_types: [], is_default: false, always_emailed: ["webhook_endpoint.disabled"], email_enabled: false, updated_at: clock.toISOString() });
    const every = await (await call("PUT", org.id, org.members.admin!.key, { email_event_types: EVENT_TYPES })).json();
    expect(every.email_event_types).toEqual([...EVENT_TYPES].sort());
  });

  test("email_enabled says whether a mail server is configured", async () => {
    const org = await orgWithMembers(t.s, `enabled ${++seq}`, { admin: "admin" });
    t.s.config.smtpUrl = "smtp://127.0.0.1:1";
    try {
      expect((await (await call("GET", org.id, org.members.admin!.key)).json()).email_enabled).toBe(true);
    } finally {
      t.s.config.smtpUrl = undefined;
    }
  });

  test("bad input is 422 validation_error with the field named: unknown type, repeats, wrong types, unknown fields, too many", async () => {
    const org = await orgWithMembers(t.s, `invalid ${++seq}`, { member: "member" });
    const key = org.members.member!.key;
    const bodies: unknown[] = [
      { email_event_types: ["purchase.pending_approval", "purchase.exploded"] },
      { email_event_types: ["*"] },
      { email_event_types: ["anomaly.detected", "anomaly.detected"] },
      { email_event_types: "anomaly.detected" },
      { email_event_types: [42] },
      { email_event_types: null },
      {},
      { email_event_types: [], extra: true },
      '{"email_event_types": [], "__proto__": {"x": 1}}',
      '{"email_event_types": [], "constructor": 1}',
      { email_event_types: Array.from({ length: EVENT_TYPES.length + 1 }, (_, i) => EVENT_TYPES[i % EVENT_TYPES.length]) },
      { email_event_types: ["x".repeat(100_000)] },
    ];
    for (const body of bodies) {
      const r = await call("PUT", org.id, key, undefined, typeof body === "string" ? body : JSON.stringify(body));
      const b = await r.json();
      expect({ body, status: r.status, type: b.type }).toEqual({ body, status: 422, type: "validation_error" });
      expect(Object.keys(b.errors).length).toBeGreaterThan(0);
    }
    const unknown = await (await call("PUT", org.id, key, { email_event_types: ["purchase.exploded"] })).json();
    expect(unknown.errors.email_event_types[0]).toContain("purchase.pending_approval");
    // Not JSON: 400; nothing was stored.
    expect((await call("PUT", org.id, key, undefined, "{")).status).toBe(400);
    expect((await (await call("GET", org.id, key)).json()).is_default).toBe(true);
  });

  test("an API key without a person is 403 user_required; a key without events:read is 403; no key is 401", async () => {
    const org = await orgWithMembers(t.s, `keys ${++seq}`, { admin: "admin" });
    const cliKey = (await createApiKey(t.s.db, { orgId: org.id })).key;
    for (const method of ["GET", "PUT"]) {
      const r = await call(method, org.id, cliKey, method === "PUT" ? { email_event_types: [] } : undefined);
      expect(r.status).toBe(403);
      const b = await r.json();
      expect(b.code).toBe("user_required");
      expect(b.message).toContain("OAuth token");
    }
    const narrow = (await createApiKey(t.s.db, { orgId: org.id, createdBy: org.members.admin!.userId, scopes: ["reports:read"] })).key;
    expect((await call("GET", org.id, narrow)).status).toBe(403);
    // Auth first: the scope is refused before the body is read.
    expect((await call("PUT", org.id, narrow, undefined, "{")).status).toBe(403);
    const minimal = (await createApiKey(t.s.db, { orgId: org.id, createdBy: org.members.admin!.userId, scopes: ["events:read"] })).key;
    expect((await call("GET", org.id, minimal)).status).toBe(200);
    expect((await call("GET", org.id, null)).status).toBe(401);
  });

  test("org isolation: each organization has its own choice; another org's path is 403", async () => {
    const a = await orgWithMembers(t.s, `iso a ${++seq}`, { admin: "admin" });
    const b = await orgWithMembers(t.s, `iso b ${seq}`, { viewer: "viewer" });
    const inB = await addTestMember(t.s, b.id, "same", "admin", a.members.admin!);
    expect((await call("PUT", a.id, a.members.admin!.key, { email_event_types: ["anomaly.detected"] })).status).toBe(200);
    const seenInB = await (await call("GET", b.id, inB.key)).json();
    expect(seenInB.is_default).toBe(true);
    expect(seenInB.email_event_types).toEqual([...ADMIN_DEFAULT_EMAIL_EVENTS].sort());
    expect((await (await call("GET", a.id, a.members.admin!.key)).json()).email_event_types).toEqual(["anomaly.detected"]);
    // A key of org A on org B's path, even of a person who is a member of both.
    expect((await call("GET", b.id, a.members.admin!.key)).status).toBe(403);
    expect((await call("PUT", b.id, a.members.admin!.key, { email_event_types: [] })).status).toBe(403);
    expect((await (await call("GET", b.id, inB.key)).json()).is_default).toBe(true);
  });
});
