/**
 * /webhook-endpoints through the real app: create (the secret in that answer only), list, get,
 * update, delete, rotate-secret; every input's limits (URL, description, event types, the 50 per
 * org cap); https and the SSRF rule at create; admins only (a member's key → 403); org isolation
 * (another org's endpoint → 404); secrets never in a read, sealed at rest and resealed by
 * `secrets rotate`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { makeUser } from "../oauth/helpers.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { setHostResolver } from "../../lib/hosts.ts";
import { MAX_ENDPOINTS_PER_ORG } from "../../lib/webhooks/endpoints.ts";
import { EVENT_TYPES } from "../../lib/events/catalog.ts";
import { SecretBox } from "../../lib/secrets/index.ts";
import { rotateSecrets } from "../../lib/secrets/rotate.ts";
import { openEndpointSecret } from "../../lib/webhooks/secrets.ts";

const SECRET_KEY = randomBytes(32).toString("base64");
const PUBLIC = "93.184.216.34";

beforeAll(() => {
  // Names resolve here, never through the machine's DNS.
  setHostResolver(async (host) => {
    if (host === "hooks.example.com" || host === "hooks.slack.com") return [{ address: PUBLIC, family: 4 }];
    if (host === "internal.example.com") return [{ address: "10.1.2.3", family: 4 }];
    if (host === "mixed.example.com") return [{ address: PUBLIC, family: 4 }, { address: "127.0.0.1", family: 4 }];
    throw Object.assign(new Error(`${host} not found`), { code: "ENOTFOUND" });
  });
});
afterAll(() => setHostResolver(null));

describeEachDb("webhooks: endpoints API", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: SECRET_KEY } });
  const json = async (r: Response) => {
    const text = await r.text();
    return text ? JSON.parse(text) : null;
  };
  const post = (body: unknown, key?: string) => t.orgRequest("POST", "/webhook-endpoints", { body, key });
  const valid = { url: "https://hooks.example.com/commitops", event_types: ["purchase.pending_approval", "support.ticket_created"], description: "Ops channel" };

  test("create: 201 with the whsec_ secret once, a Location, the endpoint's state; list and get never show a secret", async () => {
    const r = await post(valid);
    expect(r.status).toBe(201);
    const created = await json(r);
    expect(created).toMatchObject({
      kind: "webhook",
      url: valid.url,
      event_types: ["purchase.pending_approval", "support.ticket_created"],
      description: "Ops channel",
      enabled: true,
      disabled_reason: null,
      signed: true,
      previous_secret_expires_at: null,
      consecutive_failures: 0,
      failing_since: null,
      next_attempt_at: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The Standard Webhooks library takes it as it is (24 to 64 bytes of key).
    expect(Buffer.from(created.secret.slice(6), "base64").length).toBe(32);
    expect(() => new Webhook(created.secret)).not.toThrow();
    expect(r.headers.get("location")).toBe(`/beta/v1/org/${t.org.id}/webhook-endpoints/${created.id}`);

    const got = await json(await t.orgRequest("GET", `/webhook-endpoints/${created.id}`));
    const listed = await json(await t.orgRequest("GET", "/webhook-endpoints"));
    for (const view of [got, listed.find((e: any) => e.id === created.id)]) {
      expect(view).not.toHaveProperty("secret");
      expect(JSON.stringify(view)).not.toContain(created.secret.slice(6));
      expect(view).toEqual({ ...created, secret: undefined });
    }
    // Sealed at rest: the column holds no plaintext.
    const [row] = await t.s.handle.query<any>("SELECT * FROM webhook_endpoints WHERE id = $1", [created.id]);
    expect(JSON.stringify(row)).not.toContain(created.secret.slice(6));
    expect(row.secret_key_id).toMatch(/^k[0-9a-f]{12}$/);
  });

  test("`*` subscribes to every type and stands alone; repeats and unknown types are refused", async () => {
    const all = await json(await post({ ...valid, event_types: ["*", "purchase.failed"] }));
    expect(all.event_types).toEqual(["*"]);
    for (const event_types of [[], ["purchase.nope"], ["purchase.failed", "purchase.failed"], "purchase.failed", [1]]) {
      const r = await post({ ...valid, event_types });
      expect(r.status).toBe(422);
      const b = await json(r);
      expect(b.type).toBe("validation_error");
      expect(Object.keys(b.errors)).toContain("event_types");
    }
    // Every catalog type at once is fine.
    expect((await post({ ...valid, event_types: [...EVENT_TYPES] })).status).toBe(201);
  });

  test("input limits: URL length and scheme, description length, unknown fields, kind", async () => {
    const long = `https://hooks.example.com/${"a".repeat(2048)}`;
    const cases: [unknown, string][] = [
      [{ ...valid, url: long }, "url"],
      [{ ...valid, url: "http://hooks.example.com/plain" }, "url"],
      [{ ...valid, url: "ftp://hooks.example.com/x" }, "url"],
      [{ ...valid, url: "not a url" }, "url"],
      [{ ...valid, url: "https://user:pw@hooks.example.com/x" }, "url"],
      [{ ...valid, description: "é".repeat(1001) }, "description"],
      [{ ...valid, kind: "email" }, "kind"],
      [{ ...valid, secret: "whsec_mine" }, "secret"],
      [{ ...valid, enabled: "yes" }, "enabled"],
      [{ event_types: valid.event_types }, "url"],
    ];
    for (const [body, field] of cases) {
      const r = await post(body);
      expect(r.status).toBe(422);
      expect(Object.keys((await json(r)).errors)).toContain(field);
    }
    expect((await post({ ...valid, description: "é".repeat(1000) })).status).toBe(201);
    expect((await t.orgRequest("POST", "/webhook-endpoints", { rawBody: "{" })).status).toBe(400);
  });

  test("SSRF at create: loopback, private, link-local, internal names and names resolving to any private address are refused", async () => {
    for (const url of [
      "https://127.0.0.1/x",
      "https://10.0.0.8/x",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/x",
      "https://localhost/x",
      "https://metadata.google.internal/x",
      "https://internal.example.com/x",
      "https://mixed.example.com/x",
    ]) {
      const r = await post({ ...valid, url });
      expect(r.status).toBe(422);
      const b = await json(r);
      expect(b.errors.url[0]).toContain("non-public address");
    }
    const [{ n }] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_endpoints WHERE url LIKE '%internal%' OR url LIKE '%127.0.0.1%'");
    expect(Number(n)).toBe(0);
  });

  test("update: URL re-checked, event types, description, disable and re-enable (which resets the failure state)", async () => {
    const created = await json(await post(valid));
    const path = `/webhook-endpoints/${created.id}`;
    const patched = await json(await t.orgRequest("PATCH", path, { body: { event_types: ["purchase.failed"], description: null } }));
    expect(patched).toMatchObject({ event_types: ["purchase.failed"], description: null, url: valid.url });
    expect((await t.orgRequest("PATCH", path, { body: { url: "https://10.0.0.1/x" } })).status).toBe(422);
    expect((await t.orgRequest("PATCH", path, { body: { kind: "slack" } })).status).toBe(422);

    // As the worker leaves a failing endpoint it disabled.
    await t.s.handle.query(
      "UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', disabled_at = now(), consecutive_failures = 40, failing_since = now() - interval '3 days', next_attempt_at = now() + interval '1 hour' WHERE id = $1",
      [created.id],
    );
    const disabled = await json(await t.orgRequest("GET", path));
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: "failing", consecutive_failures: 40 });
    const enabled = await json(await t.orgRequest("PATCH", path, { body: { enabled: true } }));
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null, consecutive_failures: 0, failing_since: null, next_attempt_at: null });
    const [row] = await t.s.handle.query<any>("SELECT next_attempt_at FROM webhook_endpoints WHERE id = $1", [created.id]);
    expect(new Date(row.next_attempt_at).getTime()).toBeLessThanOrEqual(t.s.now().getTime());

    const off = await json(await t.orgRequest("PATCH", path, { body: { enabled: false } }));
    expect(off).toMatchObject({ enabled: false, disabled_reason: "Disabled through the API." });
    expect((await t.orgRequest("PATCH", `/webhook-endpoints/${crypto.randomUUID()}`, { body: { enabled: true } })).status).toBe(404);
  });

  test("rotate-secret: a new secret in the answer only; the old one signs on through the overlap; limits on overlap_hours", async () => {
    const created = await json(await post(valid));
    const path = `/webhook-endpoints/${created.id}/rotate-secret`;
    const r = await t.orgRequest("POST", path, { body: { overlap_hours: 48 } });
    expect(r.status).toBe(200);
    const rotated = await json(r);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(new Date(rotated.previous_secret_expires_at).getTime() - t.s.now().getTime()).toBeGreaterThan(47.9 * 3_600_000);
    expect(await json(await t.orgRequest("GET", `/webhook-endpoints/${created.id}`))).not.toHaveProperty("secret");
    // Without a body: the default overlap of 24 h.
    const again = await json(await t.orgRequest("POST", path));
    expect(new Date(again.previous_secret_expires_at).getTime() - t.s.now().getTime()).toBeGreaterThan(23.9 * 3_600_000);
    const now0 = await json(await t.orgRequest("POST", path, { body: { overlap_hours: 0 } }));
    expect(now0.previous_secret_expires_at).toBeNull();
    for (const overlap_hours of [-1, 169, 1.5, null, true]) expect((await t.orgRequest("POST", path, { body: { overlap_hours } })).status).toBe(422);
    expect((await t.orgRequest("POST", `/webhook-endpoints/${crypto.randomUUID()}/rotate-secret`)).status).toBe(404);
  });

  test("slack endpoints: no signing secret; the URL (the credential) is sealed and shown redacted", async () => {
    const url = "https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnopqrstWXYZ";
    const r = await post({ url, event_types: ["purchase.pending_approval"], kind: "slack" });
    expect(r.status).toBe(201);
    const created = await json(r);
    expect(created).toMatchObject({ kind: "slack", signed: false, url: "https://hooks.slack.com/…WXYZ" });
    expect(created).not.toHaveProperty("secret");
    const [row] = await t.s.handle.query<any>("SELECT * FROM webhook_endpoints WHERE id = $1", [created.id]);
    expect(JSON.stringify(row)).not.toContain("abcdefghijklmnopqrst");
    const rot = await t.orgRequest("POST", `/webhook-endpoints/${created.id}/rotate-secret`);
    expect(rot.status).toBe(409);
    expect((await json(rot)).code).toBe("webhook_endpoint_unsigned");
  });

  test("delete: 204, then 404; its delivery log goes with it", async () => {
    const created = await json(await post(valid));
    expect((await t.orgRequest("DELETE", `/webhook-endpoints/${created.id}`)).status).toBe(204);
    expect((await t.orgRequest("GET", `/webhook-endpoints/${created.id}`)).status).toBe(404);
    expect((await t.orgRequest("DELETE", `/webhook-endpoints/${created.id}`)).status).toBe(404);
    expect((await t.orgRequest("GET", "/webhook-endpoints/not-a-uuid")).status).toBe(400);
  });

  test("org isolation: another org's endpoint is 404 on every route; another org's path is 403", async () => {
    const theirs = await t.newOrg("theirs");
    const r = await t.request("POST", `/beta/v1/org/${theirs.id}/webhook-endpoints`, { key: theirs.key, body: valid });
    const id = (await json(r)).id;
    const delivery = crypto.randomUUID();
    for (const [method, path, body] of [
      ["GET", `/webhook-endpoints/${id}`],
      ["PATCH", `/webhook-endpoints/${id}`, { enabled: false }],
      ["DELETE", `/webhook-endpoints/${id}`],
      ["POST", `/webhook-endpoints/${id}/rotate-secret`],
      ["POST", `/webhook-endpoints/${id}/test`],
      ["GET", `/webhook-endpoints/${id}/deliveries`],
      ["GET", `/webhook-endpoints/${id}/deliveries/${delivery}/attempts`],
      ["POST", `/webhook-endpoints/${id}/deliveries/${delivery}/redeliver`],
    ] as [string, string, unknown?][]) {
      expect([method, path, (await t.orgRequest(method, path, { body })).status]).toEqual([method, path, 404]);
    }
    expect((await json(await t.orgRequest("GET", "/webhook-endpoints"))).map((e: any) => e.id)).not.toContain(id);
    expect((await t.request("GET", `/beta/v1/org/${theirs.id}/webhook-endpoints`)).status).toBe(403);
    expect((await json(await t.request("GET", `/beta/v1/org/${theirs.id}/webhook-endpoints/${id}`, { key: theirs.key }))).enabled).toBe(true);
  });

  test("admins only: a member's key, a viewer's, and a key without webhooks:write get 403 on every route", async () => {
    const member = await makeUser(t, [{ orgId: t.org.id, role: "member" }]);
    const memberKey = (await createApiKey(t.s.db, { orgId: t.org.id, createdBy: member.id })).key;
    const viewer = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const viewerKey = (await createApiKey(t.s.db, { orgId: t.org.id, createdBy: viewer.id })).key;
    const narrow = (await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["events:read", "purchases:write"] })).key;
    const id = (await json(await post(valid))).id;
    for (const key of [memberKey, viewerKey, narrow]) {
      for (const [method, path, body] of [
        ["GET", "/webhook-endpoints"],
        ["POST", "/webhook-endpoints", valid],
        ["GET", `/webhook-endpoints/${id}`],
        ["PATCH", `/webhook-endpoints/${id}`, { enabled: false }],
        ["DELETE", `/webhook-endpoints/${id}`],
        ["POST", `/webhook-endpoints/${id}/rotate-secret`],
        ["GET", `/webhook-endpoints/${id}/deliveries`],
      ] as [string, string, unknown?][]) {
        const r = await t.orgRequest(method, path, { body, key });
        expect(r.status).toBe(403);
        expect((await json(r)).code).toBe("insufficient_scope");
      }
    }
    // An admin's own key works.
    const admin = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    const adminKey = (await createApiKey(t.s.db, { orgId: t.org.id, createdBy: admin.id })).key;
    expect((await t.orgRequest("GET", `/webhook-endpoints/${id}`, { key: adminKey })).status).toBe(200);
  });

  test(`at most ${MAX_ENDPOINTS_PER_ORG} endpoints per org, exact under concurrency`, async () => {
    const org = await t.newOrg("capped");
    const results = await Promise.all(
      Array.from({ length: MAX_ENDPOINTS_PER_ORG + 8 }, () => t.request("POST", `/beta/v1/org/${org.id}/webhook-endpoints`, { key: org.key, body: valid }).then((r) => r.status)),
    );
    expect(results.filter((s) => s === 201).length).toBe(MAX_ENDPOINTS_PER_ORG);
    expect(results.filter((s) => s === 409).length).toBe(8);
    const listed = await t.request("GET", `/beta/v1/org/${org.id}/webhook-endpoints?page_size=10`, { key: org.key });
    expect(JSON.parse(listed.headers.get("x-pagination")!)).toMatchObject({ total_count: MAX_ENDPOINTS_PER_ORG, total_pages: 5 });
  });

  test("`secrets rotate` reseals current and previous secrets under the new key; they still open", async () => {
    const created = await json(await post(valid));
    const rotated = await json(await t.orgRequest("POST", `/webhook-endpoints/${created.id}/rotate-secret`, { body: { overlap_hours: 24 } }));
    const newKey = randomBytes(32).toString("base64");
    const box = new SecretBox(newKey, [SECRET_KEY]);
    const result = await rotateSecrets(t.s.db, box);
    expect(result.resealed).toBeGreaterThan(0);
    const [row] = await t.s.handle.query<any>("SELECT * FROM webhook_endpoints WHERE id = $1", [created.id]);
    expect(row.secret_key_id).toBe(box.currentKeyId);
    expect(row.previous_secret_key_id).toBe(box.currentKeyId);
    const onlyNew = new SecretBox(newKey);
    expect(openEndpointSecret(onlyNew, { id: row.id, secretCiphertext: row.secret_ciphertext, secretKeyId: row.secret_key_id })).toBe(rotated.secret);
    expect(openEndpointSecret(onlyNew, { id: row.id, secretCiphertext: row.previous_secret_ciphertext, secretKeyId: row.previous_secret_key_id })).toBe(created.secret);
    // Run again: nothing left to reseal.
    expect((await rotateSecrets(t.s.db, box)).resealed).toBe(0);
  });
});

describeEachDb("webhooks: endpoints need COMMITOPS_SECRET_KEY", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: undefined } });
  test("503 secret_key_missing, nothing stored", async () => {
    const r = await t.orgRequest("POST", "/webhook-endpoints", { body: { url: "https://hooks.example.com/x", event_types: ["*"] } });
    expect(r.status).toBe(503);
    expect((await r.json()).code).toBe("secret_key_missing");
    const [{ n }] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_endpoints");
    expect(Number(n)).toBe(0);
  });
});
