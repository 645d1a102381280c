import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { BUG_LIMITS, E_ACUTE, EMOJI, FEATURE_LIMITS, validBug, validFeature } from "./fixtures.ts";

const ENDPOINTS = [
  { path: "/support/bug-reports", valid: validBug, limits: BUG_LIMITS, kind: "bug" },
  { path: "/support/feature-requests", valid: validFeature, limits: FEATURE_LIMITS, kind: "feature" },
] as const;

describeEachDb("support: body validation", (driver) => {
  // A high cap: every accepted body here files a ticket.
  const t = useTestApp(driver, { config: { supportDailyCap: 10_000 } });

  async function file(path: string, body: unknown) {
    const r = await t.orgRequest("POST", path, { body });
    return { status: r.status, body: (await r.json()) as any };
  }

  async function stored(key: string) {
    const r = await t.orgRequest("GET", `/support/tickets/${key}`);
    expect(r.status).toBe(200);
    return (await r.json()) as any;
  }

  async function ticketCount(): Promise<number> {
    const [row] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets");
    return Number(row!.n);
  }

  function expectFieldError(res: { status: number; body: any }, field: string, pattern: RegExp) {
    expect(res.status).toBe(422);
    expect(res.body.type).toBe("validation_error");
    expect(res.body.code).toBe("validation_error");
    expect(Object.keys(res.body.errors)).toEqual([field]);
    expect(res.body.errors[field].join(" ")).toMatch(pattern);
    expect(res.body.message).toContain(field);
  }

  for (const ep of ENDPOINTS) {
    for (const [field, max] of Object.entries(ep.limits)) {
      test(`${ep.kind} ${field}: 0 → 422, 1 → created, ${max} → created, ${max + 1} → 422 (code points)`, async () => {
        const before = await ticketCount();
        const lengths = new RegExp(`^must be 1 to ${max} characters$`);
        expectFieldError(await file(ep.path, { ...ep.valid(), [field]: "" }), field, lengths);

        const one = await file(ep.path, { ...ep.valid(), [field]: "x" });
        expect(one.status).toBe(200);
        expect(one.body.status).toBe("created");
        expect((await stored(one.body.ticket_key))[field]).toBe("x");

        // max emojis: 2×max UTF-16 units, but max code points → accepted and stored intact.
        const atMax = EMOJI.repeat(max);
        const full = await file(ep.path, { ...ep.valid(), [field]: atMax });
        expect(full.status).toBe(200);
        expect(full.body.status).toBe("created");
        expect((await stored(full.body.ticket_key))[field]).toBe(atMax);

        expectFieldError(await file(ep.path, { ...ep.valid(), [field]: EMOJI.repeat(max + 1) }), field, lengths);
        expectFieldError(await file(ep.path, { ...ep.valid(), [field]: "a".repeat(max + 1) }), field, lengths);
        // Only the two valid bodies were stored.
        expect(await ticketCount()).toBe(before + 2);
      });
    }

    test(`${ep.kind}: a combining sequence counts each code point`, async () => {
      // "é" as e + U+0301 is 2 code points: 100 of them fill summary's 200 exactly…
      const ok = await file(ep.path, { ...ep.valid(), summary: E_ACUTE.repeat(100) });
      expect(ok.body.status).toBe("created");
      expect((await stored(ok.body.ticket_key)).summary).toBe(E_ACUTE.repeat(100));
      // …and one more accent makes 201.
      expectFieldError(await file(ep.path, { ...ep.valid(), summary: E_ACUTE.repeat(100) + "\u0301" }), "summary", /^must be 1 to 200 characters$/);
    });

    test(`${ep.kind}: each required field missing → 422 naming it`, async () => {
      for (const field of Object.keys(ep.limits)) {
        const body: Record<string, unknown> = ep.valid();
        delete body[field];
        expectFieldError(await file(ep.path, body), field, /is required/);
      }
    });

    test(`${ep.kind}: wrong types and null on required fields → 422`, async () => {
      for (const bad of [null, 42, true, ["a"], { a: 1 }]) {
        expectFieldError(await file(ep.path, { ...ep.valid(), summary: bad }), "summary", /^must be text of 1 to 200 characters$/);
      }
    });

    test(`${ep.kind}: unknown fields → 422 naming them, nothing stored`, async () => {
      const before = await ticketCount();
      const res = await file(ep.path, { ...ep.valid(), severity: "high" });
      expectFieldError(res, "severity", /not a known field/);
      expect(await ticketCount()).toBe(before);
    });

    test(`${ep.kind}: a NUL character → 422, not a database error`, async () => {
      expectFieldError(await file(ep.path, { ...ep.valid(), user_verbatim: "a\u0000b" }), "user_verbatim", /NUL/);
    });

    test(`${ep.kind}: body not an object, not JSON → 4xx error body`, async () => {
      const arr = await file(ep.path, [ep.valid()]);
      expect(arr.status).toBe(422);
      const r = await t.orgRequest("POST", ep.path, { rawBody: "{not json" });
      expect(r.status).toBe(400);
      expect((await r.json()).type).toBe("invalid_request");
    });
  }

  test("feature requests refuse the bug-only fields app_url and provider", async () => {
    const res = await file("/support/feature-requests", { ...validFeature(), app_url: "https://x", provider: "aws" });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual(["app_url", "provider"]);
  });

  test("bug app_url: default null, null, empty, 500 accepted; 501 → 422 (code points)", async () => {
    const omitted = await file("/support/bug-reports", validBug());
    expect(omitted.body.status).toBe("created");
    expect((await stored(omitted.body.ticket_key)).app_url).toBeNull();

    const explicitNull = await file("/support/bug-reports", { ...validBug(), app_url: null });
    expect((await stored(explicitNull.body.ticket_key)).app_url).toBeNull();

    const empty = await file("/support/bug-reports", { ...validBug(), app_url: "" });
    expect(empty.body.status).toBe("created");
    expect((await stored(empty.body.ticket_key)).app_url).toBe("");

    const url500 = "https://app.example.com/" + EMOJI.repeat(500 - 24);
    expect([...url500].length).toBe(500);
    const atMax = await file("/support/bug-reports", { ...validBug(), app_url: url500 });
    expect(atMax.body.status).toBe("created");
    expect((await stored(atMax.body.ticket_key)).app_url).toBe(url500);

    expectFieldError(await file("/support/bug-reports", { ...validBug(), app_url: url500 + "x" }), "app_url", /^must be text of at most 500 characters or null$/);
    expectFieldError(await file("/support/bug-reports", { ...validBug(), app_url: 5 }), "app_url", /^must be text of at most 500 characters or null$/);
  });

  test("bug provider: default null, null, aws/azure/gcp accepted; others → 422", async () => {
    const omitted = await file("/support/bug-reports", validBug());
    expect((await stored(omitted.body.ticket_key)).provider).toBeNull();
    const explicitNull = await file("/support/bug-reports", { ...validBug(), provider: null });
    expect((await stored(explicitNull.body.ticket_key)).provider).toBeNull();
    for (const p of ["aws", "azure", "gcp"]) {
      const r = await file("/support/bug-reports", { ...validBug(), provider: p });
      expect(r.body.status).toBe("created");
      expect((await stored(r.body.ticket_key)).provider).toBe(p);
    }
    for (const bad of ["AWS", "oci", "", 1]) {
      expectFieldError(await file("/support/bug-reports", { ...validBug(), provider: bad }), "provider", /^must be one of aws, azure, gcp or null$/);
    }
  });

  test("every field is stored as sent", async () => {
    const body = { ...validBug(), app_url: "https://app.example.com/reports?x=1", provider: "azure" };
    const r = await file("/support/bug-reports", body);
    const got = await stored(r.body.ticket_key);
    expect(got).toMatchObject({ ...body, kind: "bug", org_id: t.org.id });
    const f = validFeature();
    const r2 = await file("/support/feature-requests", f);
    expect(await stored(r2.body.ticket_key)).toMatchObject({ ...f, kind: "feature", org_id: t.org.id });
  });

  test("the OpenAPI document publishes the limits as JSON Schema string lengths", async () => {
    const doc = (await (await t.request("GET", "/openapi.json")).json()) as any;
    const path = Object.keys(doc.paths).find((p) => p.endsWith("/support/bug-reports"))!;
    const schema = doc.paths[path].post.requestBody.content["application/json"].schema;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required.sort()).toEqual(Object.keys(BUG_LIMITS).sort());
    expect(schema.properties.summary).toMatchObject({ type: "string", minLength: 1, maxLength: 200 });
    expect(schema.properties.user_verbatim).toMatchObject({ type: "string", minLength: 1, maxLength: 2000 });
    expect(schema.properties.what_happened).toMatchObject({ type: "string", minLength: 1, maxLength: 4000 });
    expect(schema.properties.app_url).toMatchObject({ maxLength: 500, default: null });
    expect(schema.properties.provider.enum).toEqual(["aws", "azure", "gcp", null]);
  });
});
