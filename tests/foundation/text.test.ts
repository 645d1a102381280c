import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import fc from "fast-check";
import { codePointLength, hasLoneSurrogate, NullableText, NullableTextEnum, Text, TextEnum, textProblem } from "../../lib/http/text.ts";
import { fromElysiaValidation } from "../../lib/http/validation.ts";

describe("codePointLength", () => {
  test("counts code points, not UTF-16 units or graphemes", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("abc")).toBe(3);
    expect(codePointLength("😀")).toBe(1); // "😀".length === 2
    expect(codePointLength("e\u0301")).toBe(2); // one visible é, two code points
    expect(codePointLength("👩‍👩‍👧")).toBe(5); // 3 emoji + 2 zero-width joiners
    expect(codePointLength("\ud800")).toBe(1); // a lone surrogate is one code point
    expect(codePointLength("\udc00\ud800")).toBe(2);
  });

  test("agrees with the string iterator on arbitrary strings", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => codePointLength(s) === [...s].length));
    fc.assert(fc.property(fc.string({ unit: "grapheme-composite" }), (s) => codePointLength(s) === [...s].length));
  });
});

describe("hasLoneSurrogate", () => {
  test("finds unpaired halves only", () => {
    expect(hasLoneSurrogate("😀 ok")).toBe(false);
    expect(hasLoneSurrogate("a\ud800")).toBe(true);
    expect(hasLoneSurrogate("\udc00a")).toBe(true);
    expect(hasLoneSurrogate("\ud83d\ud83d\ude00")).toBe(true);
  });

  test("well-formed strings never have one", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (s) => !hasLoneSurrogate(s)));
  });
});

describe("textProblem", () => {
  test("boundaries in code points", () => {
    const limits = { minLength: 1, maxLength: 3 };
    expect(textProblem("", limits)).toBe("must not be empty");
    expect(textProblem("a", limits)).toBeNull();
    expect(textProblem("😀😀😀", limits)).toBeNull();
    expect(textProblem("😀😀😀😀", limits)).toMatch(/at most 3 characters long \(got 4/);
    expect(textProblem("ab", { minLength: 3 })).toMatch(/at least 3 characters long \(got 2\)/);
  });

  test("type, null and storability", () => {
    expect(textProblem(undefined, {})).toBe("is required");
    expect(textProblem(null, {})).toBe("must be a string, not null");
    expect(textProblem(null, {}, true)).toBeNull();
    expect(textProblem(5, {}, true)).toBe("must be a string or null");
    expect(textProblem("a\u0000", {})).toMatch(/NUL/);
    expect(textProblem("a\ud800", {})).toMatch(/unpaired surrogate/);
  });

  test("the builders refuse nonsensical limits", () => {
    expect(() => Text({ minLength: 3, maxLength: 2 })).toThrow();
    expect(() => Text({ maxLength: -1 })).toThrow();
    expect(() => NullableText({ maxLength: 1.5 })).toThrow();
  });
});

describe("schemas with the TypeBox compiler", () => {
  test("Text / NullableText check code points", () => {
    const c = TypeCompiler.Compile(t.Object({ a: Text({ minLength: 1, maxLength: 2 }), b: NullableText({ maxLength: 2 }) }));
    expect(c.Check({ a: "😀😀", b: "😀😀" })).toBe(true);
    expect(c.Check({ a: "😀😀", b: null })).toBe(true);
    expect(c.Check({ a: "😀😀😀", b: null })).toBe(false);
    expect(c.Check({ a: "", b: null })).toBe(false);
    expect(c.Check({ a: null, b: null })).toBe(false);
    expect(c.Check({ a: "x", b: "😀😀😀" })).toBe(false);
    expect(Value.Check(Text({ maxLength: 1 }), "😀")).toBe(true);
  });

  test("TextEnum / NullableTextEnum", () => {
    const c = TypeCompiler.Compile(t.Object({ p: TextEnum(["aws", "gcp"]), q: NullableTextEnum(["x"]) }));
    expect(c.Check({ p: "aws", q: null })).toBe(true);
    expect(c.Check({ p: "gcp", q: "x" })).toBe(true);
    expect(c.Check({ p: null, q: "x" })).toBe(false);
    expect(c.Check({ p: "AWS", q: "x" })).toBe(false);
    expect(c.Check({ p: "aws", q: "y" })).toBe(false);
  });

  test("other kinds keep TypeBox's own messages", () => {
    const [err] = [...TypeCompiler.Compile(t.Object({ n: t.Number() })).Errors({ n: "x" })];
    expect(err!.message).toBe("Expected number");
  });
});

describe("through Elysia: 422 field errors and the published schema", () => {
  const app = new Elysia({ normalize: false })
    .use(openapi({ path: "/docs", specPath: "/openapi.json" }))
    .onError(({ code, error }) => {
      if (code === "VALIDATION") {
        const e = fromElysiaValidation(error);
        return new Response(JSON.stringify({ status: e.status, message: e.message, errors: e.errors }), { status: e.status });
      }
      return new Response(String(code), { status: 500 });
    })
    .post("/x", ({ body }) => body, {
      body: t.Object(
        {
          name: Text({ minLength: 1, maxLength: 5 }),
          label: t.Optional(NullableText({ maxLength: 3, default: null })),
          kind: TextEnum(["a", "b"]),
          provider: t.Optional(NullableTextEnum(["aws", "azure", "gcp"], { default: null })),
        },
        { additionalProperties: false },
      ),
    });

  async function post(raw: string) {
    const r = await app.handle(new Request("http://localhost/x", { method: "POST", headers: { "content-type": "application/json" }, body: raw }));
    return { status: r.status, body: (await r.json()) as any };
  }

  test("valid bodies pass with defaults applied", async () => {
    const r = await post(JSON.stringify({ name: "😀😀😀😀😀", kind: "a" }));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ name: "😀😀😀😀😀", kind: "a", label: null, provider: null });
  });

  test("each failure names its field with a clear message", async () => {
    const r = await post(JSON.stringify({ name: "😀😀😀😀😀😀", label: "abcd", kind: "c", provider: "oci" }));
    expect(r.status).toBe(422);
    expect(r.body.errors).toEqual({
      name: ["must be 1 to 5 characters"],
      label: ["must be text of at most 3 characters or null"],
      kind: ["must be one of a, b"],
      provider: ["must be one of aws, azure, gcp or null"],
    });
    expect(r.body.message).toContain("name must be 1 to 5 characters");
  });

  test("missing, empty and a lone surrogate from JSON escapes", async () => {
    expect((await post("{}")).body.errors).toEqual({ name: ["is required"], kind: ["is required"] });
    expect((await post(JSON.stringify({ name: "", kind: "a" }))).body.errors).toEqual({ name: ["must be 1 to 5 characters"] });
    const lone = await post('{"name":"a\\ud800","kind":"a"}');
    expect(lone.status).toBe(422);
    expect(lone.body.errors.name[0]).toMatch(/unpaired surrogate/);
  });

  test("OpenAPI shows plain JSON Schema string lengths and a nullable enum that allows null", async () => {
    const doc = (await (await app.handle(new Request("http://localhost/openapi.json"))).json()) as any;
    const props = doc.paths["/x"].post.requestBody.content["application/json"].schema.properties;
    expect(props.name).toEqual({ type: "string", minLength: 1, maxLength: 5 });
    expect(props.label.maxLength).toBe(3);
    expect([props.label.type].flat().sort()).toEqual(["null", "string"]);
    expect(props.kind).toEqual({ type: "string", enum: ["a", "b"] });
    expect(props.provider.enum).toEqual(["aws", "azure", "gcp", null]);
  });
});
