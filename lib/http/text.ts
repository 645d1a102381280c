import { Kind, Type, TypeRegistry, type SchemaOptions, type TUnsafe } from "@sinclair/typebox";
import { GetErrorFunction, SetErrorFunction } from "@sinclair/typebox/errors";

/**
 * Text fields whose length limits count Unicode code points, as JSON Schema (and the spec) do.
 *
 * TypeBox's own `minLength`/`maxLength` count UTF-16 code units (an emoji counts 2), so these
 * schemas are a custom TypeBox kind: Elysia's TypeBox compiler calls the check registered below
 * instead of its UTF-16 keywords, while the published OpenAPI schema still reads
 * `{ type: "string", minLength, maxLength }`, which JSON Schema already counts in code points.
 *
 * Besides the length, a text value must be storable: no NUL character (PostgreSQL `text` cannot
 * hold one) and no lone UTF-16 surrogate (it has no UTF-8 form and would be silently replaced).
 */

/** TypeBox kind of the schemas built here. */
export const TEXT_KIND = "CodePointText";

export interface TextLimits {
  minLength?: number;
  maxLength?: number;
}

/** Number of Unicode code points in `s` (an emoji is 1, a letter + combining accent is 2). */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** True when `s` contains a UTF-16 surrogate that is not half of a pair. */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return true;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

function plural(n: number): string {
  return `${n} character${n === 1 ? "" : "s"}`;
}

/**
 * Why `value` is not acceptable text within `limits`, as a message that follows the field name
 * ("must be at most 200 characters…"), or null when it is fine.
 */
export function textProblem(value: unknown, limits: TextLimits, nullable = false): string | null {
  if (value === undefined) return "is required";
  if (value === null) return nullable ? null : "must be a string, not null";
  if (typeof value !== "string") return nullable ? "must be a string or null" : "must be a string";
  if (value.includes("\u0000")) return "must not contain NUL (\\u0000) characters";
  if (hasLoneSurrogate(value)) return "must be valid Unicode text (it contains an unpaired surrogate)";
  const n = codePointLength(value);
  const { minLength, maxLength } = limits;
  if (minLength !== undefined && n < minLength) {
    return minLength === 1 ? "must not be empty" : `must be at least ${plural(minLength)} long (got ${n})`;
  }
  if (maxLength !== undefined && n > maxLength) {
    return `must be at most ${plural(maxLength)} long (got ${n}; characters are counted as Unicode code points)`;
  }
  return null;
}

interface TextSchemaFields {
  minLength?: number;
  maxLength?: number;
  /** Present on the nullable variant: `anyOf: [{ type: string, … }, { type: null }]`. */
  anyOf?: [{ type: "string"; minLength?: number; maxLength?: number }, { type: "null" }];
}

function limitsOf(schema: TextSchemaFields): { limits: TextLimits; nullable: boolean } {
  if (schema.anyOf) return { limits: { minLength: schema.anyOf[0].minLength, maxLength: schema.anyOf[0].maxLength }, nullable: true };
  return { limits: { minLength: schema.minLength, maxLength: schema.maxLength }, nullable: false };
}

/**
 * Registers a custom TypeBox kind checked by `problem` (null: valid). Elysia turns TypeBox's
 * error messages into the field errors of the 422 body, so the kind's message is `problem`'s
 * text instead of TypeBox's generic "Expected kind '…'".
 */
function registerKind<S>(kind: string, problem: (schema: S, value: unknown) => string | null): void {
  if (TypeRegistry.Has(kind)) return;
  TypeRegistry.Set<S>(kind, (schema, value) => problem(schema, value) === null);
  const fallback = GetErrorFunction();
  SetErrorFunction((param) => {
    if ((param.schema as any)?.[Kind] === kind) return problem(param.schema as unknown as S, param.value) ?? "is invalid";
    return fallback(param);
  });
}

registerKind<TextSchemaFields>(TEXT_KIND, (schema, value) => {
  const { limits, nullable } = limitsOf(schema);
  return textProblem(value, limits, nullable);
});

function checkLimits({ minLength, maxLength }: TextLimits): void {
  for (const v of [minLength, maxLength]) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new TypeError(`text length limits must be non-negative integers, got ${v}`);
  }
  if (minLength !== undefined && maxLength !== undefined && minLength > maxLength) throw new TypeError("minLength > maxLength");
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A string schema limited in Unicode code points: `Text({ minLength: 1, maxLength: 200 })`.
 * Other options (description, examples, default…) pass through to the published schema.
 */
export function Text(opts: TextLimits & SchemaOptions = {}): TUnsafe<string> {
  const { minLength, maxLength, ...rest } = opts;
  checkLimits({ minLength, maxLength });
  return Type.Unsafe<string>({ ...rest, ...defined({ minLength, maxLength }), type: "string", [Kind]: TEXT_KIND });
}

/**
 * The same, also accepting null: published as `anyOf: [{ type: string, minLength, maxLength },
 * { type: null }]`. Combine with `t.Optional` and a `default: null` for "string or null,
 * default null" fields (and apply the default in code: the app does not normalize bodies).
 */
export function NullableText(opts: TextLimits & SchemaOptions = {}): TUnsafe<string | null> {
  const { minLength, maxLength, ...rest } = opts;
  checkLimits({ minLength, maxLength });
  return Type.Unsafe<string | null>({
    ...rest,
    anyOf: [{ type: "string", ...defined({ minLength, maxLength }) }, { type: "null" }],
    [Kind]: TEXT_KIND,
  });
}

/** TypeBox kind of the enum schemas built here. */
export const TEXT_ENUM_KIND = "TextEnum";

interface TextEnumSchemaFields {
  enum: (string | null)[];
}

function enumProblem(schema: TextEnumSchemaFields, value: unknown): string | null {
  if (schema.enum.includes(value as string | null)) return null;
  if (value === undefined) return "is required";
  const names = schema.enum.filter((v): v is string => v !== null);
  const nullable = schema.enum.includes(null);
  return `must be one of ${names.map((v) => `\`${v}\``).join(", ")}${nullable ? " or null" : ""}`;
}

registerKind<TextEnumSchemaFields>(TEXT_ENUM_KIND, enumProblem);

/**
 * One of a fixed set of strings, with a field error naming the allowed values (TypeBox's
 * union of literals reports only "should be one of: 'string', 'string'…").
 * Published as `{ type: string, enum: [...] }`.
 */
export function TextEnum<const V extends readonly string[]>(values: V, opts: SchemaOptions = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ ...opts, type: "string", enum: [...values], [Kind]: TEXT_ENUM_KIND });
}

/** The same, also accepting null: published as `{ type: [string, null], enum: [..., null] }`. */
export function NullableTextEnum<const V extends readonly string[]>(values: V, opts: SchemaOptions = {}): TUnsafe<V[number] | null> {
  return Type.Unsafe<V[number] | null>({ ...opts, type: ["string", "null"], enum: [...values, null], [Kind]: TEXT_ENUM_KIND });
}

/** TypeBox kind of the enum-set schemas built here. */
export const TEXT_ENUM_SET_KIND = "TextEnumSet";

interface TextEnumSetSchemaFields {
  items: { enum: string[] };
  minItems?: number;
}

/**
 * Checked in one cheap pass: TypeBox's own `uniqueItems` hashes every element byte by byte
 * (BigInt FNV) while it builds the error list, so a body of megabyte-long "scopes" held the
 * event loop for hundreds of milliseconds.
 */
function enumSetProblem(schema: TextEnumSetSchemaFields, value: unknown): string | null {
  if (value === undefined) return "is required";
  if (!Array.isArray(value)) return "must be an array";
  const allowed = schema.items.enum;
  if (schema.minItems !== undefined && value.length < schema.minItems) return `must hold at least ${schema.minItems} value${schema.minItems === 1 ? "" : "s"}`;
  if (value.length > allowed.length) return `must hold at most ${allowed.length} values (each one once)`;
  const seen = new Set<string>();
  for (const v of value) {
    if (typeof v !== "string" || !allowed.includes(v)) return `must hold only ${allowed.map((a) => `\`${a}\``).join(", ")}`;
    if (seen.has(v)) return `must not repeat \`${v}\``;
    seen.add(v);
  }
  return null;
}

registerKind<TextEnumSetSchemaFields>(TEXT_ENUM_SET_KIND, enumSetProblem);

/**
 * A set of values from a fixed list, as a JSON array without repeats: published as
 * `{ type: array, items: { type: string, enum }, minItems, maxItems, uniqueItems: true }`.
 */
export function TextEnumSet<const V extends readonly string[]>(values: V, opts: SchemaOptions & { minItems?: number } = {}): TUnsafe<V[number][]> {
  return Type.Unsafe<V[number][]>({ ...opts, type: "array", items: { type: "string", enum: [...values] }, maxItems: values.length, uniqueItems: true, [Kind]: TEXT_ENUM_SET_KIND });
}
