/**
 * JSON and form values for the fuzz suite: generation from a JSON Schema (the OpenAPI
 * document's), and mutations of a generated value or of its raw text — wrong types,
 * prototype-named keys, deep nesting, huge strings, NUL characters, lone surrogates, numbers at
 * the edges, non-object and malformed bodies.
 *
 * Values are plain JS values plus `Raw` tokens for JSON text JSON.stringify cannot produce
 * (`-0`, `1e-320`, 40-digit numbers, 5,000 levels of `[`, a pre-serialised 1.5 MB string);
 * `toJsonText` serialises both. Objects are built with own properties only (`obj`, `withKey`),
 * so a key named `__proto__` is an ordinary key of the JSON text, not a prototype change.
 */
import fc from "fast-check";

/** A piece of JSON text inserted verbatim by `toJsonText`; `label` is how a report shows it. */
export class Raw {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
  toJSON() {
    return `«${this.label}»`;
  }
}

export type JsonLike = null | boolean | number | string | Raw | JsonLike[] | { [k: string]: JsonLike };
export type Path = (string | number)[];

/** An object whose keys are all own, enumerable data properties (even `__proto__`). */
export function obj(entries: Iterable<[string, JsonLike]>): { [k: string]: JsonLike } {
  return Object.fromEntries(entries);
}

/** A copy of `o` with `key` set as an own property (`o[key] = v` would change the prototype for `__proto__`). */
export function withKey(o: { [k: string]: JsonLike }, key: string, v: JsonLike): { [k: string]: JsonLike } {
  const out = obj(Object.entries(o));
  Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
}

export function isPlainObject(v: unknown): v is { [k: string]: JsonLike } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Raw);
}

/** JSON text of a value; lone surrogates come out as `\ud800` escapes (well-formed JSON.stringify). */
export function toJsonText(v: JsonLike | undefined): string {
  if (v === undefined) return "";
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map((x) => toJsonText(x)).join(",")}]`;
  if (isPlainObject(v)) return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${toJsonText(v[k])}`).join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

/** Every location inside a value (root first), to aim a mutation at. */
export function pathsOf(v: JsonLike, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (out.length > 400) return out;
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...prefix, i], out));
  else if (isPlainObject(v)) for (const k of Object.keys(v)) pathsOf(v[k]!, [...prefix, k], out);
  return out;
}

export function getAt(v: JsonLike, path: Path): JsonLike {
  let cur: any = v;
  for (const p of path) cur = cur?.[p];
  return cur as JsonLike;
}

/** A copy of `v` with the value at `path` replaced (`undefined` deletes an object key / array item). */
export function setAt(v: JsonLike, path: Path, value: JsonLike | undefined): JsonLike | undefined {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (Array.isArray(v)) {
    const copy = [...v];
    const inner = setAt(copy[head as number]!, rest, value);
    if (inner === undefined) copy.splice(head as number, 1);
    else copy[head as number] = inner;
    return copy;
  }
  if (isPlainObject(v)) {
    const inner = setAt(v[head as string]!, rest, value);
    const entries = Object.entries(v).filter(([k]) => k !== head);
    if (inner === undefined) return obj(entries);
    return obj(Object.entries(v).map(([k, x]) => [k, k === head ? inner : x]));
  }
  return v;
}

/** Nesting depth of JSON text (brackets outside strings), the quantity DESIGN §12 limits to 32.
 * Written apart from lib/http/jsonBody.ts on purpose: the oracle must not share the code it checks. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) max = Math.max(max, ++depth);
    else if (c === 93 || c === 125) depth--;
  }
  return max;
}

export function isValidJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Generation from a JSON Schema

/** Real values by field (or path parameter) name, so generated requests reach the handlers. */
export type Hints = Record<string, readonly string[]>;

function isUuidSchema(s: any): boolean {
  return s?.format === "uuid" || (typeof s?.pattern === "string" && s.pattern.includes("{8}-"));
}

function isDateSchema(s: any): boolean {
  return typeof s?.pattern === "string" && s.pattern.includes("\\d{4}-\\d{2}-\\d{2}");
}

/** Odd but pattern-conforming dates: the database, not the schema, must refuse 2026-02-30. */
const dateArb = fc.oneof(
  { weight: 3, arbitrary: fc.date({ min: new Date("2020-01-01"), max: new Date("2030-12-31"), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)) },
  { weight: 1, arbitrary: fc.constantFrom("2026-02-30", "0000-00-00", "9999-99-99", "2026-13-01", "1900-01-01", "2100-12-31") },
);

const uuidArb = fc.oneof(
  { weight: 4, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.constantFrom("00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF") },
);

function stringArb(s: any): fc.Arbitrary<string> {
  const minLength = s?.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(s?.maxLength ?? 24, 24));
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength, maxLength, unit: "grapheme-ascii" }) },
    { weight: 1, arbitrary: fc.string({ minLength, maxLength, unit: "grapheme" }) },
  );
}

function numberArb(s: any, integer: boolean): fc.Arbitrary<number> {
  const min = typeof s?.minimum === "number" ? s.minimum : -1e6;
  const max = typeof s?.maximum === "number" ? s.maximum : 1e6;
  if (integer) return fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) });
  return fc.oneof(fc.integer({ min: Math.ceil(Math.max(min, -1e6)), max: Math.floor(Math.min(max, 1e6)) }), fc.double({ min, max, noNaN: true, noDefaultInfinity: true }));
}

/**
 * Values conforming to `schema` (as far as a generator can tell: real ids come from `hints` by
 * field name, which makes them right for the handler too). Optional properties appear half the
 * time; strings stay short (the huge ones are mutations).
 */
export function fromSchema(schema: any, hints: Hints = {}, name?: string, depth = 0): fc.Arbitrary<JsonLike> {
  const real = name !== undefined ? hints[name] : undefined;
  if (!schema || typeof schema !== "object" || depth > 6) return fc.constant(null);
  // A scalar with real values: mostly those (they reach the handler), sometimes anything the schema allows.
  if (real?.length && schema.type !== "array" && schema.type !== "object")
    return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...real) }, { weight: 1, arbitrary: fromSchema(schema, hints, undefined, depth) });
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts) && alts.length) return fc.oneof(...alts.map((a: any) => fromSchema({ ...schema, anyOf: undefined, oneOf: undefined, ...a }, hints, name, depth + 1)));
  if (Array.isArray(schema.enum) && schema.enum.length) return fc.constantFrom(...(schema.enum as JsonLike[]));
  if (schema.const !== undefined) return fc.constant(schema.const as JsonLike);
  const type = schema.type;
  if (Array.isArray(type)) return fc.oneof(...type.map((ty: string) => fromSchema({ ...schema, type: ty }, hints, name, depth)));
  switch (type) {
    case "string":
      if (isUuidSchema(schema)) return uuidArb;
      if (isDateSchema(schema)) return dateArb;
      if (schema.format === "integer") return fc.integer({ min: 0, max: 400 }).map(String);
      return stringArb(schema);
    case "integer":
      return numberArb(schema, true);
    case "number":
      return numberArb(schema, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, minLength + 3));
      const items = fromSchema(schema.items ?? {}, hints, name, depth + 1);
      return fc.array(items, { minLength, maxLength });
    }
    case "object":
    case undefined: {
      const props: Record<string, any> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const keys = Object.keys(props);
      if (!keys.length) return type === "object" ? fc.constant(obj([])) : fc.oneof(fc.constant(null), fc.integer(), fc.string({ maxLength: 8 }));
      return fc
        .tuple(
          ...keys.map((k) =>
            required.has(k)
              ? fromSchema(props[k], hints, k, depth + 1).map((v) => [k, v] as [string, JsonLike])
              : fc.option(fromSchema(props[k], hints, k, depth + 1).map((v) => [k, v] as [string, JsonLike]), { freq: 2 }),
          ),
        )
        .map((entries) => obj(entries.filter((e): e is [string, JsonLike] => e !== null)));
    }
    default:
      return fc.constant(null);
  }
}

// ---------------------------------------------------------------------------------------------
// Mutations of a JSON value (one per case, aimed at one location)

export const PROTOTYPE_KEYS = ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__"] as const;

/** Numbers JSON can spell and a double cannot hold exactly (or at all). */
export const EDGE_NUMBERS = ["1e308", "-1e308", "1e309", "-0", "-0.0", "1e-320", "4.9e-324", "9007199254740993", "-9007199254740993", "123456789012345678901234567890123456789", "0.1e-999999", "1E+2", "100000000000000000000000", "-1", "0.5", "1.0000000000000002"];

const LONE_SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "x\ud83d", "\ude00y"];

/** Strings a database or a length check may trip on. */
const ODD_STRINGS = ["", " ", "\u0000", "a\u0000b", "\u202e\u0644\u0627", "e\u0301\u0301\u0301", "\ufeffbom", "😀".repeat(300), "\u{10FFFF}", "%00", "'; DROP TABLE x; --", "${jndi:x}", "{{7*7}}", "\\", "\r\n\t", "null", "NaN"];

const WRONG_VALUES: JsonLike[] = [1, -1, 0, 1.5, "x", "", "1", "true", "null", true, false, null, [], [1], {}, { a: 1 }, [[[]]], [null], "2026-01-01"];

const HUGE_SIZES = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(256, 4_001, 4_097) },
  { weight: 2, arbitrary: fc.constantFrom(65_537, 262_145) },
  { weight: 2, arbitrary: fc.constantFrom(1_000_000, 1_048_577, 1_500_000) },
);

export type JsonMutation =
  | { kind: "wrong type"; pick: number; value: JsonLike }
  | { kind: "prototype key"; pick: number; key: string; value: JsonLike }
  | { kind: "unknown field"; pick: number }
  | { kind: "drop key"; pick: number }
  | { kind: "deep nesting"; pick: number; depth: number; style: "[" | '{"a":' | "[ unclosed" | '{"a": unclosed' }
  | { kind: "huge string"; pick: number; size: number; char: string }
  | { kind: "NUL"; pick: number; inKey: boolean }
  | { kind: "lone surrogate"; pick: number; s: string; inKey: boolean }
  | { kind: "edge number"; pick: number; token: string }
  | { kind: "odd string"; pick: number; s: string }
  | { kind: "many fields"; pick: number; count: number }
  | { kind: "long array"; pick: number; count: number; item: JsonLike };

export const jsonMutationArb: fc.Arbitrary<JsonMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("wrong type" as const), pick: fc.nat(999), value: fc.constantFrom(...WRONG_VALUES) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("prototype key" as const),
      pick: fc.oneof(fc.constant(0), fc.nat(999)),
      key: fc.constantFrom(...PROTOTYPE_KEYS),
      value: fc.constantFrom<JsonLike>(1, "x", null, {}, [], { a: 1 }, true),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("unknown field" as const), pick: fc.nat(999) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop key" as const), pick: fc.nat(999) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("deep nesting" as const),
      pick: fc.nat(999),
      depth: fc.oneof(fc.constantFrom(33, 40, 64, 500, 5000), fc.integer({ min: 40, max: 5000 })),
      style: fc.constantFrom("[" as const, '{"a":' as const, "[ unclosed" as const, '{"a": unclosed' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("huge string" as const), pick: fc.nat(999), size: HUGE_SIZES, char: fc.constantFrom("x", "x", "é", "😀", "\u0000", '"') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("NUL" as const), pick: fc.nat(999), inKey: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("lone surrogate" as const), pick: fc.nat(999), s: fc.constantFrom(...LONE_SURROGATES), inKey: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("edge number" as const), pick: fc.nat(999), token: fc.constantFrom(...EDGE_NUMBERS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("odd string" as const), pick: fc.nat(999), s: fc.constantFrom(...ODD_STRINGS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("many fields" as const), pick: fc.nat(999), count: fc.constantFrom(300, 5_000, 40_000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("long array" as const), pick: fc.nat(999), count: fc.constantFrom(5_001, 60_000), item: fc.constantFrom<JsonLike>({}, 1, "x", null, [], "00000000-0000-0000-0000-000000000000") }) },
);

function choose<T>(list: T[], pick: number): T | undefined {
  return list.length ? list[pick % list.length] : undefined;
}

function nestText(depth: number, style: string, inner: string): string {
  switch (style) {
    case "[":
      return "[".repeat(depth) + inner + "]".repeat(depth);
    case '{"a":':
      return '{"a":'.repeat(depth) + inner + "}".repeat(depth);
    case "[ unclosed":
      return "[".repeat(depth);
    default:
      return '{"a":'.repeat(depth);
  }
}

/** Applies one mutation; returns the new value and a one-line description of what was done where. */
export function applyJsonMutation(v: JsonLike, m: JsonMutation): { value: JsonLike; label: string } {
  const paths = pathsOf(v);
  const at = (p: Path) => (p.length ? p.join(".") : "(root)");
  const objectPaths = paths.filter((p) => isPlainObject(getAt(v, p)));
  const stringPaths = paths.filter((p) => typeof getAt(v, p) === "string");
  const leafPaths = paths.filter((p) => p.length > 0 && !isPlainObject(getAt(v, p)) && !Array.isArray(getAt(v, p)));
  const keyPaths = paths.filter((p) => p.length > 0 && typeof p[p.length - 1] === "string");
  switch (m.kind) {
    case "wrong type": {
      const p = choose(paths.length > 1 ? paths.slice(1) : paths, m.pick)!;
      return { value: setAt(v, p, m.value) ?? null, label: `wrong type at ${at(p)}: ${JSON.stringify(m.value)}` };
    }
    case "prototype key": {
      // pick 0 is the root object: a prototype-named key at the top level.
      const p = m.pick === 0 || !objectPaths.length ? [] : choose(objectPaths, m.pick)!;
      const target = getAt(v, p);
      if (!isPlainObject(target)) return { value: obj([[m.key, m.value]]), label: `body replaced by {${JSON.stringify(m.key)}: …}` };
      return { value: setAt(v, p, withKey(target, m.key, m.value)) ?? null, label: `prototype key ${JSON.stringify(m.key)} at ${at(p)}` };
    }
    case "unknown field": {
      const p = choose(objectPaths, m.pick) ?? [];
      const target = getAt(v, p);
      if (!isPlainObject(target)) return { value: v, label: "unknown field (no object)" };
      return { value: setAt(v, p, withKey(target, "fuzz_unknown_field", 1)) ?? null, label: `unknown field at ${at(p)}` };
    }
    case "drop key": {
      const p = choose(keyPaths, m.pick);
      if (!p) return { value: v, label: "drop key (none)" };
      return { value: setAt(v, p, undefined) ?? null, label: `dropped ${at(p)}` };
    }
    case "deep nesting": {
      const p = choose(paths, m.pick)!;
      const raw = new Raw(nestText(m.depth, m.style, "1"), `${m.style}×${m.depth}`);
      return { value: setAt(v, p, raw) ?? raw, label: `${m.depth} levels of ${m.style} at ${at(p)}` };
    }
    case "huge string": {
      // `size` is the size of the JSON text in bytes: é takes 2, 😀 4, an escaped " 2, \u0000 6.
      const p = choose(stringPaths.length ? stringPaths : leafPaths.length ? leafPaths : [[]], m.pick)!;
      const count = Math.floor(m.size / (JSON.stringify(m.char).length - 2 + new TextEncoder().encode(m.char).length - m.char.length));
      const raw = new Raw(JSON.stringify(m.char.repeat(count)), `${JSON.stringify(m.char)}×${count}`);
      return { value: setAt(v, p, raw) ?? raw, label: `string of ${count} × ${JSON.stringify(m.char)} (~${m.size} bytes) at ${at(p)}` };
    }
    case "NUL":
    case "lone surrogate": {
      const s = m.kind === "NUL" ? "\u0000" : m.s;
      if (m.inKey) {
        const p = choose(objectPaths, m.pick) ?? [];
        const target = getAt(v, p);
        if (isPlainObject(target)) return { value: setAt(v, p, withKey(target, `k${s}`, 1)) ?? null, label: `${m.kind} ${JSON.stringify(s)} in a key at ${at(p)}` };
      }
      const p = choose(stringPaths.length ? stringPaths : leafPaths.length ? leafPaths : [[]], m.pick)!;
      const cur = getAt(v, p);
      const str = typeof cur === "string" ? cur : "";
      const i = m.pick % (str.length + 1);
      return { value: setAt(v, p, str.slice(0, i) + s + str.slice(i)) ?? null, label: `${m.kind} ${JSON.stringify(s)} in the string at ${at(p)}` };
    }
    case "edge number": {
      const p = choose(leafPaths.length ? leafPaths : [[]], m.pick)!;
      return { value: setAt(v, p, new Raw(m.token, m.token)) ?? null, label: `number ${m.token} at ${at(p)}` };
    }
    case "many fields": {
      // Thousands of unknown fields: each may cost a validation error and a line in the answer.
      const p = choose(objectPaths, m.pick) ?? [];
      const target = getAt(v, p);
      const base = isPlainObject(target) ? Object.entries(target) : [];
      const extra = Array.from({ length: m.count }, (_, i) => [`f${i}`, i] as [string, JsonLike]);
      return { value: setAt(v, p, obj([...base, ...extra])) ?? null, label: `${m.count} unknown fields at ${at(p)}` };
    }
    case "long array": {
      // Arrays prefer array locations (line_items, scopes, contract_specs …); any leaf otherwise.
      const arrayPaths = paths.filter((x) => Array.isArray(getAt(v, x)));
      const p = choose(arrayPaths.length ? arrayPaths : leafPaths.length ? leafPaths : [[]], m.pick)!;
      const raw = new Raw(`[${Array.from({ length: m.count }, () => toJsonText(m.item)).join(",")}]`, `[${toJsonText(m.item)} ×${m.count}]`);
      return { value: setAt(v, p, raw) ?? raw, label: `array of ${m.count} × ${toJsonText(m.item)} at ${at(p)}` };
    }
    case "odd string": {
      const p = choose(stringPaths.length ? stringPaths : leafPaths.length ? leafPaths : [[]], m.pick)!;
      return { value: setAt(v, p, m.s) ?? null, label: `string ${JSON.stringify(m.s.length > 20 ? m.s.slice(0, 20) + "…" : m.s)} at ${at(p)}` };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Whole-body replacements: non-object JSON and malformed JSON

/** Valid JSON that is not an object (the brief's 123, null, [], true, empty and friends). */
export const NON_OBJECT_BODIES = ["123", "null", "[]", "true", "", "false", '"x"', "0", "-0", "1e999", "[{}]", "[null]", " ", '"\\u0000"', '"\\ud800"'];

export type RawMutation =
  | { kind: "non-object body"; text: string }
  | { kind: "truncated"; at: number }
  | { kind: "malformed"; variant: string }
  | { kind: "invalid UTF-8"; bytes: readonly number[] };

const MALFORMED_VARIANTS = [
  "trailing comma",
  "single quotes",
  "NaN literal",
  "comment",
  "BOM",
  "raw control character",
  "bad escape",
  "bad unicode escape",
  "duplicate key",
  "two documents",
  "leading garbage",
  "unbalanced close",
  "50,000 × [ unclosed",
  '5,000 × {"a": unclosed',
] as const;

export const rawMutationArb: fc.Arbitrary<RawMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("non-object body" as const), text: fc.constantFrom(...NON_OBJECT_BODIES) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("truncated" as const), at: fc.double({ min: 0, max: 0.99, noNaN: true }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("malformed" as const), variant: fc.constantFrom(...MALFORMED_VARIANTS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("invalid UTF-8" as const), bytes: fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]) }) },
);

/** The raw body text (or bytes) a raw mutation makes of a valid JSON text. */
export function applyRawMutation(text: string, m: RawMutation): { body: string | Uint8Array; label: string } {
  switch (m.kind) {
    case "non-object body":
      return { body: m.text, label: `body ${JSON.stringify(m.text)}` };
    case "truncated": {
      const cut = Math.max(1, Math.floor(text.length * m.at));
      const body = text.slice(0, cut);
      return { body, label: `JSON truncated after ${cut} of ${text.length} characters` };
    }
    case "invalid UTF-8": {
      const enc = new TextEncoder();
      const i = Math.max(1, text.indexOf('"') + 1);
      const body = new Uint8Array([...enc.encode(text.slice(0, i)), ...m.bytes, ...enc.encode(text.slice(i))]);
      return { body, label: `invalid UTF-8 bytes ${m.bytes.map((b) => b.toString(16)).join(" ")} at offset ${i}` };
    }
    case "malformed": {
      const inner = text.startsWith("{") && text.length > 2 ? text.slice(1, -1) : '"a":1';
      const variants: Record<string, string> = {
        "trailing comma": `{${inner},}`,
        "single quotes": `{'a': 'b'}`,
        "NaN literal": `{"a": NaN}`,
        comment: `{/* c */${inner}}`,
        BOM: `\ufeff${text}`,
        "raw control character": `{"a": "x\ny\u0001"}`,
        "bad escape": `{"a": "\\x41"}`,
        "bad unicode escape": `{"a": "\\ud8"}`,
        "duplicate key": `{${inner},${inner}}`,
        "two documents": `${text}${text}`,
        "leading garbage": `)]}'\n${text}`,
        "unbalanced close": `${text}]}`,
        "50,000 × [ unclosed": "[".repeat(50_000),
        '5,000 × {"a": unclosed': '{"a":'.repeat(5_000),
      };
      const body = variants[m.variant]!;
      return { body, label: `malformed JSON: ${m.variant}` };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Form and query strings

export type FormMutation =
  | { kind: "prototype key"; key: string }
  | { kind: "repeated key"; pick: number }
  | { kind: "NUL"; pick: number }
  | { kind: "huge value"; pick: number; size: number }
  | { kind: "raw value"; pick: number; raw: string }
  | { kind: "wrong value"; pick: number; value: string }
  | { kind: "bracket key"; key: string }
  | { kind: "dropped"; pick: number }
  | { kind: "many parameters"; count: number };

/** Percent-encoded text that is not UTF-8, half an escape, a CESU surrogate, deep brackets. */
const RAW_QUERY_VALUES = ["%ZZ", "%", "%E0%A4", "%ED%A0%80", "%C0%AF", "%FF", "%00", "%0A%0D", "%2F..%2F..", "[".repeat(40), "%5B".repeat(200), "1e308", "-0", "1e-320", "9007199254740993", "0x10", "Infinity", "NaN", "-1", "true", "null", "%EF%BF%BF", "%F0%9F%98%80"];

const WRONG_FORM_VALUES = ["", "perhaps", "-1", "0", "1.5", "1e308", "99999999999999999999", "true", "[]", "{}", "null", "undefined", "aws,gcp", " aws"];

export function formMutationArb(maxHuge: number): fc.Arbitrary<FormMutation> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("prototype key" as const), key: fc.constantFrom(...PROTOTYPE_KEYS) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("repeated key" as const), pick: fc.nat(99) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("NUL" as const), pick: fc.nat(99) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("huge value" as const), pick: fc.nat(99), size: fc.constantFrom(...[257, 2_001, 8_000, 70_000, 1_100_000].filter((n) => n <= maxHuge)) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("raw value" as const), pick: fc.nat(99), raw: fc.constantFrom(...RAW_QUERY_VALUES) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("wrong value" as const), pick: fc.nat(99), value: fc.constantFrom(...WRONG_FORM_VALUES) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("bracket key" as const), key: fc.constantFrom("a[b]", "a[]", "a[__proto__]", "__proto__[x]", "constructor[prototype][x]", "a.b") }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("dropped" as const), pick: fc.nat(99) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("many parameters" as const), count: fc.constantFrom(100, 1_000) }) },
  );
}

const enc = encodeURIComponent;

/** `k=v&…` (values already strings); `raw` entries are inserted without encoding. */
export function formText(entries: [string, string, boolean?][]): string {
  return entries.map(([k, v, raw]) => `${enc(k)}=${raw ? v : enc(v)}`).join("&");
}

export function applyFormMutation(entries: [string, string][], m: FormMutation): { entries: [string, string, boolean?][]; label: string } {
  const pickKey = (pick: number) => (entries.length ? entries[pick % entries.length]![0] : "q");
  const replace = (key: string, v: string, raw = false): [string, string, boolean?][] => {
    const out: [string, string, boolean?][] = entries.map(([k, x]) => (k === key ? [k, v, raw] : [k, x]));
    if (!entries.some(([k]) => k === key)) out.push([key, v, raw]);
    return out;
  };
  switch (m.kind) {
    case "prototype key":
      return { entries: [...entries, [m.key, "1"]], label: `prototype-named parameter ${m.key}=1` };
    case "bracket key":
      return { entries: [...entries, [m.key, "1"]], label: `parameter ${m.key}=1` };
    case "repeated key": {
      const k = pickKey(m.pick);
      const first = entries.find(([x]) => x === k)?.[1] ?? "1";
      return { entries: [...entries, [k, first]], label: `parameter ${k} repeated` };
    }
    case "NUL": {
      const k = pickKey(m.pick);
      return { entries: replace(k, `a\u0000b`), label: `NUL in ${k}` };
    }
    case "huge value": {
      const k = pickKey(m.pick);
      return { entries: replace(k, "x".repeat(m.size)), label: `${k} of ${m.size} characters` };
    }
    case "raw value": {
      const k = pickKey(m.pick);
      return { entries: replace(k, m.raw, true), label: `${k}=${m.raw.length > 30 ? m.raw.slice(0, 30) + "…" : m.raw} (raw)` };
    }
    case "wrong value": {
      const k = pickKey(m.pick);
      return { entries: replace(k, m.value), label: `${k}=${JSON.stringify(m.value)}` };
    }
    case "dropped": {
      const k = pickKey(m.pick);
      return { entries: entries.filter(([x]) => x !== k), label: `parameter ${k} left out` };
    }
    case "many parameters":
      return { entries: [...entries, ...Array.from({ length: m.count }, (_, i) => [`p${i}`, "1"] as [string, string])], label: `${m.count} unknown parameters` };
  }
}

/** Form/query values of a generated object: strings as they are, everything else as JSON. */
export function toFormEntries(v: JsonLike): [string, string][] {
  if (!isPlainObject(v)) return [];
  const out: [string, string][] = [];
  for (const [k, x] of Object.entries(v)) {
    if (x === null) continue;
    if (Array.isArray(x)) for (const item of x) out.push([k, typeof item === "string" ? item : toJsonText(item)]);
    else out.push([k, typeof x === "string" ? x : toJsonText(x)]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Showing a request in a failure message

/** Text for a report: runs of one repeated unit (≥ 16 times) shown as «unit»×n, the rest cut at `max`. */
export function compact(text: string, max = 600): string {
  let out = "";
  let i = 0;
  while (i < text.length && out.length < max) {
    let done = false;
    for (const len of [1, 2, 3, 4, 5, 6]) {
      const unit = text.slice(i, i + len);
      if (unit.length < len) break;
      let n = 1;
      while (text.startsWith(unit, i + n * len)) n++;
      if (n >= 16) {
        out += `«${unit}»×${n}`;
        i += n * len;
        done = true;
        break;
      }
    }
    if (!done) out += text[i++];
  }
  if (i < text.length) out += `… (${text.length} characters in all)`;
  return out;
}
