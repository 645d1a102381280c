import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { createServices } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { idempotencyCleanupJob } from "../../jobs/idempotency-cleanup.ts";
import { openResponseBody, sealResponseBody, storedKeyOf } from "../../lib/idempotency/seal.ts";
import { claimIdempotencyKey, completeIdempotencyKey, holdIdempotencyKey, releaseIdempotencyKey } from "../../lib/idempotency/store.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { pageHeaders, pageRequest } from "../../lib/http/paging.ts";
import { REPORTS } from "../../lib/reports/catalog.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";
import { line, seedCatalog as seedEstimateCatalog } from "../estimates/helpers.ts";

/** DESIGN §12: ETags and preconditions, Idempotency-Key, RateLimit headers. */
const TEMPLATE = {
  provider: "aws",
  name: "Compute nightly",
  description: "Our plan",
  configuration: { max_upfront_cost: 1000, lookback_days: 14, contract_specs: [{ commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "no_upfront" }], resource_ids: [], renewal_commitment_ids: [] },
  auto_purchase: null,
};

describeEachDb("ETag, If-Match and If-None-Match on estimates and templates", (driver) => {
  const t = useTestApp(driver);

  async function newEstimate(name = "Basket") {
    const r = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name } });
    expect(r.status).toBe(200);
    return { body: (await r.json()) as any, etag: r.headers.get("etag")! };
  }

  test("every single-resource response carries a strong ETag; If-None-Match answers 304 until the estimate changes", async () => {
    const { body, etag } = await newEstimate();
    expect(etag).toMatch(/^"\d+-[\w-]+"$/);
    const get = await t.orgRequest("GET", `/cost-estimates/${body.id}`);
    const tag = get.headers.get("etag")!;
    expect(tag).toBe(etag); // the POST answered the same representation as the default GET
    const notModified = await t.orgRequest("GET", `/cost-estimates/${body.id}`, { headers: { "if-none-match": tag } });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe("");
    expect(notModified.headers.get("etag")).toBe(tag);
    // Another representation (no pricing) has another tag: the old one does not match it.
    const variant = await t.orgRequest("GET", `/cost-estimates/${body.id}?include_pricing=false`, { headers: { "if-none-match": tag } });
    expect(variant.status).toBe(200);
    expect(variant.headers.get("etag")).not.toBe(tag);
    const patched = await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Renamed" } });
    expect(patched.status).toBe(200);
    const after = await t.orgRequest("GET", `/cost-estimates/${body.id}`, { headers: { "if-none-match": tag } });
    expect(after.status).toBe(200);
    expect(((await after.json()) as any).name).toBe("Renamed");
    expect(after.headers.get("etag")).toBe(patched.headers.get("etag"));
  });

  test("If-Match with a stale ETag → 412 precondition_failed and nothing changes; the current one (or *) passes", async () => {
    const { body, etag } = await newEstimate("Original");
    const first = await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "First" }, headers: { "if-match": etag } });
    expect(first.status).toBe(200);
    const stale = await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Lost update" }, headers: { "if-match": etag } });
    expect(stale.status).toBe(412);
    const err = (await stale.json()) as any;
    expect(err.code).toBe("precondition_failed");
    expect(err.status).toBe("PRECONDITION_FAILED");
    expect(((await (await t.orgRequest("GET", `/cost-estimates/${body.id}`)).json()) as any).name).toBe("First");
    // A tag of another representation of the current version is the current version too.
    const variantTag = (await t.orgRequest("GET", `/cost-estimates/${body.id}?include_pricing=false`)).headers.get("etag")!;
    expect((await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Second" }, headers: { "if-match": variantTag } })).status).toBe(200);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Third" }, headers: { "if-match": "*" } })).status).toBe(200);
    // Weak tags never satisfy If-Match (strong comparison); a tag list passes when one matches.
    const current = (await t.orgRequest("GET", `/cost-estimates/${body.id}`)).headers.get("etag")!;
    expect((await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Weak" }, headers: { "if-match": `W/${current}` } })).status).toBe(412);
    expect((await t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name: "Listed" }, headers: { "if-match": `"garbage", ${current}` } })).status).toBe(200);
    // Line changes move the estimate's version: a stale tag cannot add lines or delete.
    expect((await t.orgRequest("POST", `/cost-estimates/${body.id}/line-items`, { body: { line_items: [] }, headers: { "if-match": etag } })).status).toBe(412);
    expect((await t.orgRequest("DELETE", `/cost-estimates/${body.id}`, { headers: { "if-match": etag } })).status).toBe(412);
    const now = (await t.orgRequest("GET", `/cost-estimates/${body.id}`)).headers.get("etag")!;
    expect((await t.orgRequest("DELETE", `/cost-estimates/${body.id}`, { headers: { "if-match": now } })).status).toBe(204);
  });

  test("line items: GET with If-None-Match → 304 (HEAD too); PATCH/DELETE with a stale estimate ETag → 412, nothing changes", async () => {
    const sku = await seedEstimateCatalog(t.s);
    const { body } = await newEstimate("Lines");
    const added = await t.orgRequest("POST", `/cost-estimates/${body.id}/line-items`, { body: { line_items: [line(sku.awsM5, { quantity: 2 })] } });
    expect(added.status).toBe(200);
    const afterAdd = added.headers.get("etag")!;
    const lineId = ((await added.json()) as any).line_items[0].id;
    const read = await t.orgRequest("GET", `/cost-estimates/${body.id}/line-items/${lineId}`);
    expect(read.status).toBe(200);
    const lineTag = read.headers.get("etag")!;
    expect(lineTag).toMatch(/^"\d+-/);
    expect((await t.orgRequest("GET", `/cost-estimates/${body.id}/line-items/${lineId}`, { headers: { "if-none-match": lineTag } })).status).toBe(304);
    const head = await t.orgRequest("HEAD", `/cost-estimates/${body.id}/line-items/${lineId}`, { headers: { "if-none-match": lineTag } });
    expect(head.status).toBe(304);
    const patched = await t.orgRequest("PATCH", `/cost-estimates/${body.id}/line-items/${lineId}`, { body: { quantity: 3 }, headers: { "if-match": afterAdd } });
    expect(patched.status).toBe(200);
    // The estimate moved on: the tag from before the PATCH is stale for every write of it.
    const stalePatch = await t.orgRequest("PATCH", `/cost-estimates/${body.id}/line-items/${lineId}`, { body: { quantity: 99 }, headers: { "if-match": afterAdd } });
    expect(stalePatch.status).toBe(412);
    const staleDelete = await t.orgRequest("DELETE", `/cost-estimates/${body.id}/line-items/${lineId}`, { headers: { "if-match": afterAdd } });
    expect(staleDelete.status).toBe(412);
    const now = await t.orgRequest("GET", `/cost-estimates/${body.id}/line-items/${lineId}`, { headers: { "if-none-match": lineTag } });
    expect(now.status).toBe(200);
    expect(((await now.json()) as any).line_item.quantity).toBe(3);
    const current = now.headers.get("etag")!;
    expect((await t.orgRequest("DELETE", `/cost-estimates/${body.id}/line-items/${lineId}`, { headers: { "if-match": current } })).status).toBe(204);
  });

  test("templates: four writers holding one ETag, exactly one PUT wins; the list has no ETag and ignores If-None-Match", async () => {
    const created = await t.orgRequest("POST", "/commitment-plan-templates", { body: TEMPLATE });
    const { id } = (await created.json()) as any;
    const etag = created.headers.get("etag")!;
    const results = await Promise.all(
      ["A", "B", "C", "D"].map((name) => t.orgRequest("PUT", `/commitment-plan-templates/${id}`, { body: { name }, headers: { "if-match": etag } }).then((r) => r.status)),
    );
    expect(results.sort()).toEqual([200, 412, 412, 412]);
    const list = await t.orgRequest("GET", "/commitment-plan-templates?provider=aws", { headers: { "if-none-match": etag } });
    expect(list.status).toBe(200);
    expect(list.headers.get("etag")).toBeNull();
  });

  test("two writers holding the same ETag: exactly one wins, the other gets 412", async () => {
    const { body, etag } = await newEstimate();
    const results = await Promise.all(
      ["A", "B", "C", "D"].map((name) => t.orgRequest("PATCH", `/cost-estimates/${body.id}`, { body: { name }, headers: { "if-match": etag } }).then((r) => r.status)),
    );
    expect(results.filter((s) => s === 200).length).toBe(1);
    expect(results.filter((s) => s === 412).length).toBe(3);
  });

  test("templates: ETag on POST/GET/PUT, 304, stale If-Match on PUT and DELETE → 412", async () => {
    const created = await t.orgRequest("POST", "/commitment-plan-templates", { body: TEMPLATE });
    expect(created.status).toBe(200);
    const tpl = (await created.json()) as any;
    const etag = created.headers.get("etag")!;
    expect(etag).toMatch(/^"\d+-/);
    expect((await t.orgRequest("GET", `/commitment-plan-templates/${tpl.id}`, { headers: { "if-none-match": etag } })).status).toBe(304);
    const put = await t.orgRequest("PUT", `/commitment-plan-templates/${tpl.id}`, { body: { name: "v2" }, headers: { "if-match": etag } });
    expect(put.status).toBe(200);
    expect(put.headers.get("etag")).not.toBe(etag);
    const stalePut = await t.orgRequest("PUT", `/commitment-plan-templates/${tpl.id}`, { body: { name: "v3" }, headers: { "if-match": etag } });
    expect(stalePut.status).toBe(412);
    expect((await t.orgRequest("DELETE", `/commitment-plan-templates/${tpl.id}`, { headers: { "if-match": etag } })).status).toBe(412);
    expect(((await (await t.orgRequest("GET", `/commitment-plan-templates/${tpl.id}`)).json()) as any).name).toBe("v2");
    expect((await t.orgRequest("DELETE", `/commitment-plan-templates/${tpl.id}`, { headers: { "if-match": put.headers.get("etag")! } })).status).toBe(204);
  });
});

describeEachDb("Idempotency-Key on POST", (driver) => {
  const t = useTestApp(driver, { extras: { idempotencyWaitMs: 1_500 } });
  const extraHandles: DatabaseHandle[] = [];
  afterAll(async () => {
    for (const h of extraHandles) await h.close();
  });
  const count = async (orgId: string) =>
    Number((await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM cost_estimates WHERE org_id = $1", [orgId]))[0]!.n);

  test("a replay returns the first response (status, body, ETag) and creates nothing", async () => {
    const org = await t.newOrg("replay");
    const send = (body: unknown, key = "create-basket-1") => t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": key } });
    const first = await send({ provider: "aws", name: "Once" });
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const again = await send({ provider: "aws", name: "Once" });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(await count(org.id)).toBe(1);
    // The same key with another body, or on another path, is refused.
    const reused = await send({ provider: "aws", name: "Twice" });
    expect(reused.status).toBe(422);
    expect(((await reused.json()) as any).code).toBe("idempotency_key_reused");
    const otherPath = await t.request("POST", `/beta/v1/org/${org.id}/support/bug-reports`, {
      key: org.key,
      headers: { "idempotency-key": "create-basket-1" },
      body: { summary: "s", user_verbatim: "u", what_happened: "w", steps_to_reproduce: "s", expected_behavior: "e" },
    });
    expect(otherPath.status).toBe(422);
    expect(await count(org.id)).toBe(1);
    // Without a key every POST creates.
    await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body: { provider: "aws", name: "Once" } });
    expect(await count(org.id)).toBe(2);
  });

  test("keys belong to one organization", async () => {
    const a = await t.newOrg("a");
    const b = await t.newOrg("b");
    for (const o of [a, b]) {
      const r = await t.request("POST", `/beta/v1/org/${o.id}/cost-estimates`, { key: o.key, body: { provider: "aws", name: "Mine" }, headers: { "idempotency-key": "shared-key" } });
      expect(r.status).toBe(200);
      expect(r.headers.get("idempotency-replayed")).toBeNull();
      expect(await count(o.id)).toBe(1);
    }
  });

  test("20 concurrent duplicates execute once and all answer the same estimate", async () => {
    const org = await t.newOrg("burst");
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        t
          .request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body: { provider: "gcp", name: "Burst" }, headers: { "idempotency-key": "burst" } })
          .then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(await count(org.id)).toBe(1);
  });

  if (driver === "postgres") {
    test("two replicas (separate pools) racing with one key → one execution", async () => {
      const org = await t.newOrg("replicas");
      const apps = [t.app];
      const h = await openDb({ url: t.db.url, migrate: false });
      extraHandles.push(h);
      apps.push(createApp(createServices(h, t.s.config, createLogger("silent"))));
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          apps[i % 2]!
            .handle(
              new Request(`http://localhost/beta/v1/org/${org.id}/cost-estimates`, {
                method: "POST",
                headers: { authorization: `Bearer ${org.key}`, "content-type": "application/json", "idempotency-key": "replicas" },
                body: JSON.stringify({ provider: "azure", name: "Replicated" }),
              }),
            )
            .then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
        ),
      );
      expect(results.every((r) => r.status === 200)).toBe(true);
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      expect(await count(org.id)).toBe(1);
    });
  }

  /** A completed claim turned back into a live one (its own fingerprint kept), its lease ending `lease` from now. */
  const reopenClaim = (orgId: string, lease: string, marker: "keep" | null | string = "keep") =>
    t.s.handle.query(
      `UPDATE idempotency_keys SET status = 'in_progress', response_status = NULL, response_headers = NULL, response_body = NULL, locked_until = now() + $2::interval${marker === "keep" ? "" : ", commit_marker = $3"} WHERE org_id = $1`,
      marker === "keep" ? [orgId, lease] : [orgId, lease, marker],
    );

  test("a failed request frees its key; a running one answers 409 after the wait; a crashed claim is taken over", async () => {
    const org = await t.newOrg("failures");
    const missing = "00000000-0000-4000-8000-000000000000";
    const failed = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates/${missing}/line-items`, { key: org.key, body: { line_items: [] }, headers: { "idempotency-key": "k-fail" } });
    expect(failed.status).toBe(404);
    const rows = await t.s.handle.query("SELECT 1 FROM idempotency_keys WHERE org_id = $1", [org.id]);
    expect(rows.length).toBe(0);

    // A request still running elsewhere: a completed claim turned back into a live one (its own fingerprint kept).
    const body = { provider: "aws", name: "Running" };
    const probe = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-running" } });
    expect(probe.status).toBe(200);
    await reopenClaim(org.id, "1 hour");
    const before = await count(org.id);
    const busy = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-running" } });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as any).code).toBe("idempotency_key_in_progress");
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(await count(org.id)).toBe(before);
    // Its process died before its write committed: once the lease lapses the next retry runs it, once.
    await reopenClaim(org.id, "-1 second", null);
    const taken = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-running" } });
    expect(taken.status).toBe(200);
    expect(await count(org.id)).toBe(before + 1);
    const replay = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-running" } });
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(await count(org.id)).toBe(before + 1);
  });

  test("a crashed claim whose write had committed is never run again: 409 idempotency_key_committed", async () => {
    const org = await t.newOrg("committed");
    const body = { provider: "aws", name: "Committed" };
    const first = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-committed" } });
    expect(first.status).toBe(200);
    // The request's transaction recorded its commit marker on the claim (both drivers).
    const [claim] = await t.s.handle.query<{ commit_marker: string | null }>("SELECT commit_marker FROM idempotency_keys WHERE org_id = $1", [org.id]);
    expect(claim?.commit_marker).toMatch(/^[0-9a-f-]{36}$/);
    // Its process died after the COMMIT, before the answer was stored, and the lease lapsed.
    await reopenClaim(org.id, "-1 second");
    const before = await count(org.id);
    const retry = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body, headers: { "idempotency-key": "k-committed" } });
    expect(retry.status).toBe(409);
    expect(((await retry.json()) as any).code).toBe("idempotency_key_committed");
    expect(await count(org.id)).toBe(before);
  });

  test("a key older than 24 h is forgotten; a malformed key → 400", async () => {
    const org = await t.newOrg("ttl");
    const send = () => t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body: { provider: "aws" }, headers: { "idempotency-key": "daily" } });
    expect((await send()).status).toBe(200);
    await t.s.handle.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1", [org.id]);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotency-replayed")).toBeNull();
    expect(await count(org.id)).toBe(2);
    const tooLong = await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body: { provider: "aws" }, headers: { "idempotency-key": "k".repeat(256) } });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as any).errors["Idempotency-Key"]).toBeDefined();
    expect(await count(org.id)).toBe(2);
    // The hourly job forgets what is past the TTL and keeps the rest.
    await t.s.handle.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1", [org.id]);
    await send();
    const [daily] = await t.s.handle.query<{ key: string }>("SELECT key FROM idempotency_keys WHERE org_id = $1", [org.id]);
    await t.s.handle.query("INSERT INTO idempotency_keys (org_id, key, fingerprint, status, locked_until, created_at) VALUES ($1, 'old', 'f', 'completed', now(), now() - interval '2 days')", [org.id]);
    await idempotencyCleanupJob.run(t.s);
    const left = await t.s.handle.query<{ key: string }>("SELECT key FROM idempotency_keys WHERE org_id = $1", [org.id]);
    expect(left.map((r) => r.key)).toEqual([daily!.key]);
  });

  test("a replayed answer holding a secret (a new API key) is stored sealed: the table shows neither the key nor the secret", async () => {
    const org = await t.newOrg("sealed");
    const idempotencyKey = "new-ci-key-7f3a";
    const send = () => t.request("POST", `/beta/v1/org/${org.id}/api-keys`, { key: org.key, body: { name: "CI", scopes: ["reports:read"] }, headers: { "idempotency-key": idempotencyKey } });
    const first = await send();
    expect(first.status).toBe(200);
    const created = (await first.json()) as any;
    expect(created.api_key).toBeString();
    const again = await send();
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(((await again.json()) as any).api_key).toBe(created.api_key);
    const keys = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys WHERE org_id = $1 AND name = 'CI'", [org.id]);
    expect(Number(keys[0]!.n)).toBe(1);
    const stored = await t.s.handle.query<Record<string, unknown>>("SELECT * FROM idempotency_keys WHERE org_id = $1", [org.id]);
    expect(stored.length).toBe(1);
    const row = JSON.stringify(stored[0]);
    expect(row).not.toContain(created.api_key);
    expect(row).not.toContain(created.api_key.slice(-16));
    expect(row).not.toContain(idempotencyKey);
    // Only the client's key opens it, and only for its org and its owner (the credential that sent it).
    const [admin] = await t.s.handle.query<{ id: string }>("SELECT id FROM api_keys WHERE org_id = $1 AND name <> 'CI'", [org.id]);
    const mine = { orgId: org.id, owner: `api_key:${admin!.id}`, key: idempotencyKey };
    expect(stored[0]!.key).toBe(storedKeyOf(mine));
    const body = String(stored[0]!.response_body);
    expect(JSON.parse(openResponseBody(mine, body)).api_key).toBe(created.api_key);
    expect(() => openResponseBody({ ...mine, key: "another-key" }, body)).toThrow();
    expect(() => openResponseBody({ ...mine, owner: "api_key:someone-else" }, body)).toThrow();
    const other = await t.newOrg("sealed-other");
    expect(() => openResponseBody({ ...mine, orgId: other.id }, body)).toThrow();
    expect(() => openResponseBody(mine, sealResponseBody({ ...mine, orgId: other.id }, "x"))).toThrow();
  });

  test("a key is its sender's: another admin of the org sending the same key and body runs its own request and never sees the first answer", async () => {
    const org = await t.newOrg("two admins");
    const second = await createApiKey(t.s.db, { orgId: org.id });
    const send = (bearer: string) =>
      t.request("POST", `/beta/v1/org/${org.id}/api-keys`, { key: bearer, body: { name: "deploy", scopes: ["reports:read"] }, headers: { "idempotency-key": "deploy-key" } });
    const a = (await (await send(org.key)).json()) as any;
    const bResponse = await send(second.key);
    expect(bResponse.status).toBe(200);
    expect(bResponse.headers.get("idempotency-replayed")).toBeNull();
    const b = (await bResponse.json()) as any;
    expect(b.api_key).not.toBe(a.api_key);
    // Each one's retry replays its own answer.
    expect(((await (await send(org.key)).json()) as any).api_key).toBe(a.api_key);
    expect(((await (await send(second.key)).json()) as any).api_key).toBe(b.api_key);
    const keys = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys WHERE org_id = $1 AND name = 'deploy'", [org.id]);
    expect(Number(keys[0]!.n)).toBe(2);
  });

  test("only the holder of a claim completes or releases it: a request whose claim was taken over leaves the new holder's row alone", async () => {
    const org = await t.newOrg("takeover");
    const claimA = await claimIdempotencyKey(t.s.db, org.id, "k", "fp", 300);
    expect(claimA.kind).toBe("claimed");
    await t.s.handle.query("UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE org_id = $1", [org.id]);
    const claimB = await claimIdempotencyKey(t.s.db, org.id, "k", "fp", 300);
    expect(claimB.kind).toBe("claimed");
    const tokenA = (claimA as { token: string }).token;
    const tokenB = (claimB as { token: string }).token;
    expect(tokenB).not.toBe(tokenA);
    // A, back from the dead, can neither release nor complete B's claim.
    await releaseIdempotencyKey(t.s.db, org.id, "k", tokenA);
    expect(await completeIdempotencyKey(t.s.db, org.id, "k", tokenA, { status: 200, headers: {}, body: "A" })).toBe(false);
    expect(await claimIdempotencyKey(t.s.db, org.id, "k", "fp", 300)).toEqual({ kind: "in_progress" });
    expect(await completeIdempotencyKey(t.s.db, org.id, "k", tokenB, { status: 200, headers: {}, body: "B" })).toBe(true);
    expect(await claimIdempotencyKey(t.s.db, org.id, "k", "fp", 300)).toEqual({ kind: "replay", response: { status: 200, headers: {}, body: "B" } });
  });

  test("an answer that cannot be stored holds the key: the client gets its answer, a retry gets 409, nothing runs twice", async () => {
    const org = await t.newOrg("hold");
    const claim = (await claimIdempotencyKey(t.s.db, org.id, "h", "fp", 300)) as { kind: "claimed"; token: string };
    await holdIdempotencyKey(t.s.db, org.id, "h", claim.token);
    const [row] = await t.s.handle.query<{ held: boolean }>("SELECT locked_until >= created_at + interval '24 hours' AS held FROM idempotency_keys WHERE org_id = $1", [org.id]);
    expect(row!.held).toBe(true);
    expect(await claimIdempotencyKey(t.s.db, org.id, "h", "fp", 300)).toEqual({ kind: "in_progress" });
  });
});

describeEachDb("Idempotency-Key on the other POSTs: 201 and 202 answers, bodiless actions, a refused write", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true } });
  const connection = (name: string) => ({
    name,
    kind: "aws_data_exports",
    // Nothing listens on port 9: the connection's test and sync fail fast, which is all these need.
    config: { bucket: "focus-bucket", export_name: "focus", region: "us-east-1", access_key_id: "AKIAIDEMPOTENCY00001", endpoint_url: "http://127.0.0.1:9" },
    secrets: { secret_access_key: "not-a-real-secret" },
  });
  const post = (path: string, key: string, body?: unknown) => t.orgRequest("POST", path, { body, headers: { "idempotency-key": key } });
  const count = async (table: string) => Number((await t.s.handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE org_id = $1`, [t.org.id]))[0]!.n);

  test("a 201 (connection created) and a 202 (sync queued) replay with their status and body; nothing runs twice", async () => {
    const created = await post("/billing-connections", "create-conn", connection("Payer"));
    expect(created.status).toBe(201);
    const body = await created.text();
    const again = await post("/billing-connections", "create-conn", connection("Payer"));
    expect([again.status, again.headers.get("idempotency-replayed"), await again.text()]).toEqual([201, "true", body]);
    expect(await count("billing_connections")).toBe(1);

    const id = JSON.parse(body).id;
    const queued = await post(`/billing-connections/${id}/sync`, "sync-1");
    expect(queued.status).toBe(202);
    const run = await queued.text();
    const replayed = await post(`/billing-connections/${id}/sync`, "sync-1");
    expect([replayed.status, await replayed.text()]).toEqual([202, run]);
    expect(replayed.headers.get("idempotency-replayed")).toBe("true");
    expect(await count("billing_connection_runs")).toBe(1);
  });

  test("a bodiless action replays for no body and for {}, and refuses the same key with a body", async () => {
    const { id } = (await (await post("/billing-connections", "create-for-test", connection("Tested"))).json()) as any;
    const first = await post(`/billing-connections/${id}/test`, "probe-1");
    expect(first.status).toBe(200);
    const answer = await first.text();
    const empty = await post(`/billing-connections/${id}/test`, "probe-1", {});
    expect([empty.status, empty.headers.get("idempotency-replayed"), await empty.text()]).toEqual([200, "true", answer]);
    const other = await post(`/billing-connections/${id}/test`, "probe-1", { anything: 1 });
    expect(other.status).toBe(422);
  });

  test("a write refused with 412 frees its key: the retry with a fresh ETag and the same key runs once, then replays", async () => {
    const created = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Lines" } });
    const { id } = (await created.json()) as any;
    const stale = created.headers.get("etag")!;
    expect((await t.orgRequest("PATCH", `/cost-estimates/${id}`, { body: { name: "moved on" } })).status).toBe(200);
    const refused = await t.orgRequest("POST", `/cost-estimates/${id}/line-items`, { body: { line_items: [] }, headers: { "idempotency-key": "add-lines", "if-match": stale } });
    expect(refused.status).toBe(412);
    const fresh = (await t.orgRequest("GET", `/cost-estimates/${id}`)).headers.get("etag")!;
    const ran = await t.orgRequest("POST", `/cost-estimates/${id}/line-items`, { body: { line_items: [] }, headers: { "idempotency-key": "add-lines", "if-match": fresh } });
    expect([ran.status, ran.headers.get("idempotency-replayed")]).toEqual([200, null]);
    const replay = await t.orgRequest("POST", `/cost-estimates/${id}/line-items`, { body: { line_items: [] }, headers: { "idempotency-key": "add-lines", "if-match": fresh } });
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
  });
});

describe("RateLimit headers", () => {
  describeEachDb("on every Beta response", (driver) => {
    const t = useTestApp(driver, { config: { apiRateLimitPerMinute: 5 } });
    test("RateLimit-Limit/Remaining/Reset count down, errors carry them, the 429 says 0", async () => {
      const org = await t.newOrg("limited");
      const seen: number[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws`, { key: org.key });
        expect(r.status).toBe(200);
        expect(r.headers.get("ratelimit-limit")).toBe("5");
        const reset = Number(r.headers.get("ratelimit-reset"));
        expect(reset).toBeGreaterThanOrEqual(1);
        expect(reset).toBeLessThanOrEqual(60);
        seen.push(Number(r.headers.get("ratelimit-remaining")));
      }
      expect(seen).toEqual([4, 3, 2, 1]);
      const notFound = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates/00000000-0000-4000-8000-000000000000`, { key: org.key });
      expect(notFound.status).toBe(404);
      expect(notFound.headers.get("ratelimit-limit")).toBe("5");
      const limited = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws`, { key: org.key });
      expect(limited.status).toBe(429);
      // A credential used on another organization's path is counted too: its 403 carries the headers.
      const other = await t.newOrg("other");
      const foreign = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws`, { key: other.key });
      expect(foreign.status).toBe(403);
      expect([foreign.headers.get("ratelimit-limit"), foreign.headers.get("ratelimit-remaining")]).toEqual(["5", "4"]);
      const own = await t.request("GET", `/beta/v1/org/${other.id}/cost-estimates?provider=aws`, { key: other.key });
      expect(own.headers.get("ratelimit-remaining")).toBe("3");
      expect(limited.headers.get("ratelimit-remaining")).toBe("0");
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    });
  });
});

describeEachDb("paging of lists (page, page_size, X-Pagination, Link)", (driver) => {
  const t = useTestApp(driver);
  const nextLink = (r: Response) => /<([^>]+)>; rel="next"/.exec(r.headers.get("link") ?? "")?.[1];

  test("estimates page in SQL: every estimate once across pages, Link next until the last page", async () => {
    const org = await t.newOrg("paged");
    for (let i = 0; i < 5; i++) await t.request("POST", `/beta/v1/org/${org.id}/cost-estimates`, { key: org.key, body: { provider: "aws", name: `E${i}` } });
    let url: string | undefined = `/beta/v1/org/${org.id}/cost-estimates?provider=aws&page_size=2`;
    const seen: string[] = [];
    const pages: any[] = [];
    while (url) {
      const r = await t.request("GET", url, { key: org.key });
      expect(r.status).toBe(200);
      pages.push(JSON.parse(r.headers.get("x-pagination")!));
      seen.push(...((await r.json()) as any[]).map((e) => e.name));
      const next = nextLink(r);
      url = next && next.replace("http://localhost", "");
      expect(pages.length).toBeLessThan(5);
    }
    expect(seen).toEqual(["E4", "E3", "E2", "E1", "E0"]); // most recently updated first, no repeats
    expect(pages.map((p) => p.page)).toEqual([1, 2, 3]);
    expect(pages[0]).toEqual({ page: 1, page_size: 2, total_count: 5, total_pages: 3 });
    const last = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws&page_size=2&page=3`, { key: org.key });
    expect(last.headers.get("link")).toContain('rel="prev"');
    expect(last.headers.get("link")).toContain('rel="first"');
    expect(nextLink(last)).toBeUndefined();
    const beyond = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws&page=9`, { key: org.key });
    expect(await beyond.json()).toEqual([]);
    // The default page is 100 rows; page_size is 1–500.
    expect(JSON.parse((await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws`, { key: org.key })).headers.get("x-pagination")!).page_size).toBe(100);
    for (const bad of ["page_size=0", "page_size=501", "page=0", "page=x"]) {
      const r = await t.request("GET", `/beta/v1/org/${org.id}/cost-estimates?provider=aws&${bad}`, { key: org.key });
      expect(r.status).toBe(400);
    }
  });

  test("the other lists page too: templates, reports, report periods, API keys, connections", async () => {
    const templates = await t.orgRequest("GET", "/commitment-plan-templates?provider=aws&page_size=2");
    expect(templates.status).toBe(200);
    expect(((await templates.json()) as any[]).length).toBe(2);
    expect(JSON.parse(templates.headers.get("x-pagination")!)).toEqual({ page: 1, page_size: 2, total_count: 3, total_pages: 2 });
    expect(nextLink(templates)).toContain("page=2");
    const page2 = await t.request("GET", nextLink(templates)!.replace("http://localhost", ""));
    expect(((await page2.json()) as any[]).length).toBe(1);

    const reports = await t.orgRequest("GET", "/allocation-reports?page_size=3");
    expect(((await reports.json()) as any[]).length).toBe(3);
    expect(JSON.parse(reports.headers.get("x-pagination")!)).toEqual({ page: 1, page_size: 3, total_count: REPORTS.length, total_pages: Math.ceil(REPORTS.length / 3) });

    // Report periods: three months of data and the current month, three to a page.
    const withData = await t.newOrg("periods");
    const month = (m: string, next: string) => ({ BillingPeriodStart: `${m}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`, ChargePeriodStart: `${m}-02T00:00:00Z`, ChargePeriodEnd: `${m}-02T01:00:00Z`, BilledCost: 1, EffectiveCost: 1, ListCost: 1, ContractedCost: 1 });
    await importCsvText(t, withData.id, focusCsv([month("2023-01", "2023-02"), month("2023-02", "2023-03"), month("2023-03", "2023-04")]));
    const periodsPage = (page: number) => t.request("GET", `/beta/v1/org/${withData.id}/allocation-reports/cloud_bill_by_service/periods?page_size=3&page=${page}`, { key: withData.key });
    const first = await periodsPage(1);
    expect(JSON.parse(first.headers.get("x-pagination")!)).toEqual({ page: 1, page_size: 3, total_count: 4, total_pages: 2 });
    const firstRows = (await first.json()) as any[];
    expect(firstRows.length).toBe(3);
    expect(nextLink(first)).toContain("page=2");
    const second = await periodsPage(2);
    expect(((await second.json()) as any[]).map((p) => [p.year, p.month])).toEqual([[2023, 1]]);
    expect(nextLink(second)).toBeUndefined();
    expect((await t.orgRequest("GET", "/allocation-reports/cloud_bill_by_account/periods?page_size=999")).status).toBe(400);

    // Keys made in the same instant still page without a repeat or a gap (a unique tiebreaker behind created_at).
    const org = await t.newOrg("many keys");
    for (let i = 0; i < 6; i++) await createApiKey(t.s.db, { orgId: org.id, name: `k${i}` });
    await t.s.handle.query("UPDATE api_keys SET created_at = '2026-01-01T00:00:00Z' WHERE org_id = $1", [org.id]);
    const keyIds: string[] = [];
    for (let page = 1; page <= 4; page++) {
      const r = await t.request("GET", `/beta/v1/org/${org.id}/api-keys?page_size=2&page=${page}`, { key: org.key });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.headers.get("x-pagination")!)).toMatchObject({ total_count: 7, total_pages: 4 });
      keyIds.push(...((await r.json()) as any[]).map((k) => k.id));
      if (page < 4) expect(nextLink(r)).toContain(`page=${page + 1}`);
      else expect(nextLink(r)).toBeUndefined();
    }
    expect(keyIds.length).toBe(7);
    expect(new Set(keyIds).size).toBe(7);

    for (const path of ["/api-keys", "/billing-connections", "/purchasing-connections", "/catalog-skus?provider=aws&page_size=5"]) {
      const r = await t.orgRequest("GET", path);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.headers.get("x-pagination")!).page).toBe(1);
      expect(r.headers.get("link")).toContain('rel="first"');
    }
  });
});

describe("Link URLs", () => {
  test("are built under PUBLIC_URL, its path included, never from the request's host", () => {
    const p = pageRequest({ page: 2, page_size: 10 });
    const h = pageHeaders("http://evil.example/beta/v1/org/x/segments?provider=aws&page=2&page_size=10", "https://api.example.com/commitops/", p, 35);
    const links = h.link!.split(", ");
    expect(links).toEqual([
      '<https://api.example.com/commitops/beta/v1/org/x/segments?provider=aws&page=1&page_size=10>; rel="first"',
      '<https://api.example.com/commitops/beta/v1/org/x/segments?provider=aws&page=1&page_size=10>; rel="prev"',
      '<https://api.example.com/commitops/beta/v1/org/x/segments?provider=aws&page=3&page_size=10>; rel="next"',
      '<https://api.example.com/commitops/beta/v1/org/x/segments?provider=aws&page=4&page_size=10>; rel="last"',
    ]);
    expect(JSON.parse(h["x-pagination"]!)).toEqual({ page: 2, page_size: 10, total_count: 35, total_pages: 4 });
  });

  test("first, last, past the end and empty lists: prev and next only where they lead somewhere", () => {
    const rels = (page: number, total: number) => {
      const link = pageHeaders("http://localhost/beta/v1/org/x/segments", "http://localhost", pageRequest({ page, page_size: 10 }), total).link!;
      return Object.fromEntries([...link.matchAll(/<[^>]*[?&]page=(\d+)[^>]*>; rel="(\w+)"/g)].map((m) => [m[2], Number(m[1])]));
    };
    expect(rels(1, 35)).toEqual({ first: 1, next: 2, last: 4 });
    expect(rels(4, 35)).toEqual({ first: 1, prev: 3, last: 4 });
    expect(rels(9, 35)).toEqual({ first: 1, prev: 4, last: 4 });
    expect(rels(1, 0)).toEqual({ first: 1, last: 1 });
  });
});
