import { describe, expect, test } from "bun:test";
import { t as tb } from "elysia";
import { Value } from "@sinclair/typebox/value";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { fieldErrorsOf } from "../../lib/http/validation.ts";
import { NullableText, Text, TextEnum, TextEnumSet } from "../../lib/http/text.ts";

/** TypeBox / Elysia wording and regex sources that must never reach a person. */
const JARGON = [/Expected/, /union/i, /should be/i, /should not/i, /Property '/, /'(string|boolean|integer|number|null|object|uuid)'/, /\/\^/, /\^\[/, /\\d/, /\[0-9/, /\{\d+\}\$?/, /anyOf/, /\bconst\b/, /format '/, /`/];

function jargonIn(text: string): RegExp | undefined {
  return JARGON.find((re) => re.test(text));
}

const SPEC = { commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "no_upfront" };
const TEMPLATE = { provider: "aws", name: "Plain words", configuration: { contract_specs: [SPEC] } };
const BUG = { summary: "s", user_verbatim: "u", what_happened: "w", steps_to_reproduce: "s", expected_behavior: "e" };
const A_UUID = "00000000-0000-4000-8000-000000000000";

describe("schema → words, without an app", () => {
  const errorsOf = (schema: any, value: unknown) => fieldErrorsOf({ all: [...Value.Errors(schema, value)] });

  test("numbers: whole numbers, bounds, exclusive bounds, multiples; huge guard bounds only when crossed", () => {
    const s = tb.Object({
      year: tb.Integer({ minimum: 2000, maximum: 2100 }),
      qty: tb.Number({ minimum: 0, maximum: 1e12 }),
      rate: tb.Number({ exclusiveMinimum: 0, maximum: 1 }),
      step: tb.Number({ minimum: 0, multipleOf: 0.5 }),
      n: tb.Integer({ minimum: 1 }),
    });
    expect(errorsOf(s, { year: 1999, qty: -1, rate: 0, step: 0.3, n: 0 })).toEqual({
      year: ["must be a whole number from 2000 to 2100"],
      qty: ["must be a number ≥ 0"],
      rate: ["must be a number > 0 and ≤ 1"],
      step: ["must be a number ≥ 0 that is a multiple of 0.5"],
      n: ["must be a whole number ≥ 1"],
    });
    expect(errorsOf(s, { year: "abc", qty: 2e12, rate: 0.5, step: 1, n: 1.5 })).toEqual({
      year: ["must be a whole number from 2000 to 2100"],
      qty: ["must be a number from 0 to 1,000,000,000,000"],
      n: ["must be a whole number ≥ 1"],
    });
  });

  test("strings: lengths, formats, known patterns, described and undescribed patterns", () => {
    const s = tb.Object({
      code: tb.String({ minLength: 3, maxLength: 3 }),
      note: tb.String({ maxLength: 10 }),
      at: tb.String({ format: "date-time" }),
      mail: tb.String({ format: "email", maxLength: 100 }),
      id: tb.String({ pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$" }),
      month: tb.String({ pattern: "^\\d{4}-\\d{2}$" }),
      arn: tb.String({ pattern: "^arn:aws:iam::\\d{12}:role/.+$", description: "an IAM role ARN" }),
      sku: tb.String({ pattern: "^[A-Z]{3}-\\d+$" }),
      custom: tb.String({ pattern: "^x+$", errorMessage: "must be one or more x" }),
    });
    expect(errorsOf(s, { code: "ab", note: 5, at: "yesterday", mail: "nope", id: "x", month: "2026-1", arn: "arn", sku: "abc", custom: "y" })).toEqual({
      code: ["must be exactly 3 characters"],
      note: ["must be text of at most 10 characters"],
      at: ["must be a date and time (ISO 8601, such as 2026-01-31T12:00:00Z)"],
      mail: ["must be an email address of at most 100 characters"],
      id: ["must be a UUID"],
      month: ["must be a month (YYYY-MM)"],
      arn: ["must be text in the form an IAM role ARN"],
      sku: ["must be text in the expected format"],
      custom: ["must be one or more x"],
    });
  });

  test("unions: literals, X or null, single literals, objects or null described field by field", () => {
    const s = tb.Object({
      one: tb.Literal("only"),
      two: tb.Union([tb.Literal("json"), tb.Literal("csv")]),
      maybe: tb.Union([tb.Literal("a"), tb.Literal("b"), tb.Literal("c"), tb.Null()]),
      flag: tb.Union([tb.Boolean(), tb.Null()]),
      mixed: tb.Union([tb.Integer({ minimum: 1 }), tb.String({ format: "uuid" })]),
      inner: tb.Union([tb.Object({ a: tb.Integer(), b: tb.Boolean() }), tb.Null()]),
      list: tb.Array(tb.String(), { minItems: 1, maxItems: 3, uniqueItems: true }),
      obj: tb.Object({}, { minProperties: 1 }),
    });
    expect(errorsOf(s, { one: "x", two: "xml", maybe: "d", flag: "yes", mixed: 0, inner: { a: "x" }, list: [], obj: {} })).toEqual({
      one: ["must be only"],
      two: ["must be one of json, csv"],
      maybe: ["must be one of a, b, c or null"],
      flag: ["must be true, false or null"],
      mixed: ["must be a whole number ≥ 1 or a UUID"],
      "inner.b": ["is required"],
      "inner.a": ["must be a whole number"],
      list: ["must be a list of 1 to 3 items without repeats"],
      obj: ["must be a JSON object with at least 1 field"],
    });
    expect(errorsOf(s.properties.inner, 5)).toEqual({ "(root)": ["must be a JSON object or null"] });
  });

  test("the text kinds: lengths in characters, nullable, enums, enum sets, storability", () => {
    const s = tb.Object({
      name: Text({ minLength: 1, maxLength: 5 }),
      label: NullableText({ maxLength: 3 }),
      kind: TextEnum(["a", "b", "c"]),
      scopes: TextEnumSet(["read", "write"], { minItems: 1 }),
    });
    expect(errorsOf(s, { name: "", label: "abcd", kind: "d", scopes: ["read", "read"] })).toEqual({
      name: ["must be 1 to 5 characters"],
      label: ["must be text of at most 3 characters or null"],
      kind: ["must be one of a, b, c"],
      scopes: ["must be a non-empty list of distinct values from read, write"],
    });
    expect(errorsOf(s, { name: 5, label: "a\u0000", kind: "a", scopes: ["read"] })).toEqual({
      name: ["must be text of 1 to 5 characters"],
      label: ["must not contain NUL (\\u0000) characters"],
    });
    expect(errorsOf(s, { label: null, kind: null })).toEqual({
      name: ["is required"],
      kind: ["must be one of a, b, c"],
      scopes: ["is required"],
    });
  });

  test("field names that look like JSON pointers or prototype keys stay as sent", () => {
    const s = tb.Object({}, { additionalProperties: false });
    expect(Object.keys(errorsOf(s, JSON.parse('{"a/b":1,"c~d":2,"__proto__":3,"constructor":4}')))).toEqual(["a/b", "c~d", "__proto__", "constructor"]);
  });
});

describeEachDb("validation messages through the app", (driver) => {
  const t = useTestApp(driver, { config: { supportDailyCap: 10_000 } });

  async function send(method: string, path: string, body?: unknown) {
    const r = await t.orgRequest(method, path, body === undefined ? undefined : { body });
    return { status: r.status, body: (await r.json()) as any };
  }

  async function bodyErrors(path: string, body: unknown, method = "POST") {
    const r = await send(method, path, body);
    expect(r.status).toBe(422);
    expect(r.body.type).toBe("validation_error");
    return r.body;
  }

  test("enum, required and unknown field, with the summary sentence", async () => {
    const b = await bodyErrors("/cost-estimates", { provider: "oci", bogus: 1 });
    expect(b.errors).toEqual({ bogus: ["is not a known field"], provider: ["must be one of aws, azure, gcp"] });
    expect(b.message).toBe("The request body is invalid: bogus is not a known field; provider must be one of aws, azure, gcp.");

    const missing = await bodyErrors("/cost-estimates", {});
    expect(missing.errors).toEqual({ provider: ["is required"] });
    expect(missing.message).toBe("The request body is invalid: provider is required.");
  });

  test("string lengths, nullable text, nullable UUID", async () => {
    const b = await bodyErrors("/cost-estimates", { provider: "aws", name: "", description: 5, source_draft_id: "x" });
    expect(b.errors).toEqual({
      name: ["must be 1 to 255 characters"],
      description: ["must be text of at most 4000 characters or null"],
      source_draft_id: ["must be a UUID or null"],
    });
    const long = await bodyErrors("/support/bug-reports", { ...BUG, summary: "x".repeat(201), user_verbatim: 42, provider: "oci" });
    expect(long.errors).toEqual({
      summary: ["must be 1 to 200 characters"],
      user_verbatim: ["must be text of 1 to 2000 characters"],
      provider: ["must be one of aws, azure, gcp or null"],
    });
  });

  test("nested paths in arrays: UUID, number ≥ 0, boolean, enum, and an object-or-null field by field", async () => {
    const b = await bodyErrors("/cost-estimates", {
      provider: "aws",
      line_items: [
        { catalog_sku_id: A_UUID, catalog_sku_org_id: "o" },
        { catalog_sku_id: "nope", catalog_sku_org_id: "o", quantity: -1, quantity_basis: "x", is_enabled: "yes", selected_commitment_option: { ...SPEC, lease_menu_item_id: A_UUID, offer_id: "x" } },
      ],
    });
    expect(b.errors).toEqual({
      "line_items.1.catalog_sku_id": ["must be a UUID"],
      "line_items.1.quantity": ["must be a number ≥ 0"],
      "line_items.1.quantity_basis": ["must be one of resource_count, usage_hours, usage_quantity"],
      "line_items.1.is_enabled": ["must be true or false"],
      "line_items.1.selected_commitment_option.offer_org_id": ["is required"],
      "line_items.1.selected_commitment_option.offer_id": ["must be a UUID"],
    });
  });

  test("templates: integer range, list size, pattern UUIDs, nested enums and required", async () => {
    const b = await bodyErrors("/commitment-plan-templates", {
      ...TEMPLATE,
      segment_id: "bad",
      configuration: { contract_specs: [{ commitment_type: "x", contract_term: "one_year" }], lookback_days: 0, max_upfront_cost: -1, renewal_commitment_ids: ["x"] },
    });
    expect(b.errors).toEqual({
      segment_id: ["must be a UUID or null"],
      "configuration.contract_specs.0.payment_option": ["is required"],
      "configuration.contract_specs.0.commitment_type": [expect.stringMatching(/^must be one of compute_savings_plan, .*, resource_cud$/)],
      "configuration.max_upfront_cost": ["must be a number ≥ 0"],
      "configuration.lookback_days": ["must be a whole number from 1 to 365"],
      "configuration.renewal_commitment_ids.0": ["must be a UUID"],
    });
    expect((await bodyErrors("/commitment-plan-templates", { ...TEMPLATE, configuration: { contract_specs: [] } })).errors).toEqual({
      "configuration.contract_specs": ["must be a list of 1 to 50 items"],
    });
  });

  test("an integer sent as a numeric string: named, and a body error (422), not a query one", async () => {
    const b = await bodyErrors("/commitment-plan-templates", { ...TEMPLATE, configuration: { contract_specs: [SPEC], lookback_days: "0" } });
    expect(b.errors).toEqual({ "configuration.lookback_days": ["must be a whole number from 1 to 365"] });
    expect(b.message).toBe("The request body is invalid: configuration.lookback_days must be a whole number from 1 to 365.");
  });

  test("auto_purchase, checked field by field: dates, date or null, boolean or null, number or null", async () => {
    const b = await bodyErrors("/commitment-plan-templates", {
      ...TEMPLATE,
      auto_purchase: { schedule: "hourly", start_date: "2026/01/01", end_date: "soon", enabled: 1, require_approval: "yes", auto_approve_max_upfront: -5 },
    });
    expect(b.errors).toEqual({
      "auto_purchase.schedule": ["must be one of daily, weekly, monthly"],
      "auto_purchase.enabled": ["must be true or false"],
      "auto_purchase.start_date": ["must be a date (YYYY-MM-DD)"],
      "auto_purchase.end_date": ["must be a date (YYYY-MM-DD) or null"],
      "auto_purchase.require_approval": ["must be true, false or null"],
      "auto_purchase.auto_approve_max_upfront": ["must be a number ≥ 0 or null"],
    });
    expect(b.message).toStartWith("The request body is invalid: auto_purchase.schedule must be one of daily, weekly, monthly; ");
  });

  test("query and path parameters stay 400 and read the same", async () => {
    const page = await send("GET", "/catalog-skus?provider=aws&page_size=500");
    expect(page.status).toBe(400);
    expect(page.body.errors).toEqual({ page_size: ["must be a whole number from 1 to 200"] });
    expect(page.body.message).toBe("Invalid query parameter: page_size must be a whole number from 1 to 200.");

    const two = await send("GET", "/catalog-skus?provider=oci&page_size=abc");
    expect(two.status).toBe(400);
    expect(two.body.errors).toEqual({ provider: ["must be one of aws, azure, gcp"], page_size: ["must be a whole number from 1 to 200"] });

    const flag = await send("GET", `/cost-estimates/${A_UUID}?include_pricing=maybe`);
    expect(flag.status).toBe(400);
    expect(flag.body.errors).toEqual({ include_pricing: ["must be true or false"] });

    const id = await send("GET", "/cost-estimates/not-a-uuid");
    expect(id.status).toBe(400);
    expect(id.body.errors).toEqual({ estimate_id: ["must be a UUID"] });
    expect(id.body.message).toBe("Invalid path parameter: estimate_id must be a UUID.");
  });

  test("a broad sweep of bad bodies and queries: one plain message per field, no jargon, no regex", async () => {
    const doc: any = await (await t.request("GET", "/openapi.json")).json();
    const BAD: unknown[] = [null, true, 0, -1, 1.5, 1e300, "", "x", "x".repeat(5000), "not-a-uuid", "2026-13-45x", "a\u0000b", [], [1], ["x"], {}, { zz: 1 }];
    const problems: string[] = [];
    let checked = 0;

    const inspect = (where: string, body: any) => {
      const errors = body?.errors ?? {};
      const message = String(body?.message ?? "");
      const bad = jargonIn(message);
      if (bad) problems.push(`${where}: message ${JSON.stringify(message)} has ${bad}`);
      for (const [field, list] of Object.entries<any>(errors)) {
        checked++;
        if (process.env.VM_SHOW) for (const m of list ?? []) console.log("MSG", field.replace(/\.\d+\./g, ".N."), "|", m);
        if (!Array.isArray(list) || list.length !== 1) problems.push(`${where}: ${field} has ${JSON.stringify(list)} (want exactly one message)`);
        for (const m of list ?? []) {
          const j = jargonIn(m);
          if (j) problems.push(`${where}: ${field} ${JSON.stringify(m)} has ${j}`);
          if (!/^(must|is) /.test(m)) problems.push(`${where}: ${field} ${JSON.stringify(m)} does not say what is allowed`);
        }
        if (!message.includes(field)) problems.push(`${where}: message ${JSON.stringify(message)} does not name ${field}`);
      }
    };

    for (const [rawPath, ops] of Object.entries<any>(doc.paths)) {
      if (!rawPath.startsWith("/beta/v1/org/{org_id}/")) continue;
      const path = rawPath.replace("/beta/v1/org/{org_id}", "").replace(/\{[^}]+\}/g, A_UUID);
      for (const [method, op] of Object.entries<any>(ops)) {
        const schema = op.requestBody?.content?.["application/json"]?.schema;
        // The unknown field keeps every body invalid, so nothing here reaches a handler.
        if (schema?.additionalProperties === false) {
          const targets: ((v: unknown) => Record<string, unknown>)[] = [];
          for (const [name, prop] of Object.entries<any>(schema.properties ?? {})) {
            targets.push((v) => ({ [name]: v }));
            const item = prop.type === "array" ? prop.items : undefined;
            for (const inner of Object.keys(item?.properties ?? {})) targets.push((v) => ({ [name]: [{ [inner]: v }] }));
            for (const inner of Object.keys(prop.properties ?? {})) targets.push((v) => ({ [name]: { [inner]: v } }));
          }
          for (const target of targets) {
            for (const v of BAD) {
              const body = { zz_not_a_field: 1, ...target(v) };
              const r = await send(method.toUpperCase(), path, body);
              const where = `${method.toUpperCase()} ${rawPath} ${JSON.stringify(body).slice(0, 120)}`;
              if (r.status !== 422) problems.push(`${where}: status ${r.status}`);
              else if (JSON.stringify(r.body.errors.zz_not_a_field) !== '["is not a known field"]') problems.push(`${where}: unknown field ${JSON.stringify(r.body.errors)}`);
              inspect(where, r.body);
            }
          }
        }
        if (method === "get") {
          for (const p of (op.parameters ?? []).filter((x: any) => x.in === "query")) {
            for (const v of ["abc", "-1", "0", "1.5", "", "x".repeat(300), "2026-13-45", "999999999"]) {
              const r = await send("GET", `${path}?${p.name}=${encodeURIComponent(v)}`);
              if (r.status === 400) inspect(`GET ${rawPath}?${p.name}=${v.slice(0, 20)}`, r.body);
            }
          }
        }
      }
    }
    expect(problems.slice(0, 40)).toEqual([]);
    expect(checked).toBeGreaterThan(500);
  });
});
