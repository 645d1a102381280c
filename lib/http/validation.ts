import { Kind } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { TransformDecodeError } from "@sinclair/typebox/value";
import { BadRequestError, ValidationError, type FieldErrors } from "../errors.ts";
import { hasLoneSurrogate, TEXT_ENUM_KIND, TEXT_ENUM_SET_KIND, TEXT_KIND } from "./text.ts";

/**
 * Field errors for people: one message per field path that says what the field accepts
 * ("must be one of aws, azure, gcp", "must be a whole number from 1 to 200"), worded from the
 * failing schema rather than from TypeBox's messages (regex sources, "Expected union value",
 * one line per union branch).
 */

const REQUIRED = "is required";
const UNKNOWN = "is not a known field";

/**
 * Elysia decodes coerced query values (`?page_size=500` → 500) in a TypeBox transform and, when
 * the number is out of range, rethrows only the inner error, which has lost the field's path.
 * TypeBox's TransformDecodeError still knows it: copy it onto the inner error as it is wrapped.
 */
const DECODE_PATH = Symbol("decodePath");
if (!Object.getOwnPropertyDescriptor(TransformDecodeError.prototype, "error")) {
  Object.defineProperty(TransformDecodeError.prototype, "error", {
    configurable: true,
    get: () => undefined,
    set(this: { path?: unknown }, inner: unknown) {
      Object.defineProperty(this, "error", { value: inner, writable: true, enumerable: true, configurable: true });
      if (inner && typeof inner === "object" && typeof this.path === "string" && !(DECODE_PATH in inner)) {
        (inner as Record<symbol, string>)[DECODE_PATH] = this.path;
      }
    },
  });
}

function decodeSegments(err: any): string[] {
  const p = err && typeof err === "object" ? err[DECODE_PATH] : undefined;
  return typeof p === "string" ? p.split("/").filter(Boolean) : [];
}

/** TypeBox paths are RFC 6901 pointers. */
function pointerSegments(path: unknown): string[] {
  if (typeof path !== "string" || path === "") return [];
  return path
    .replace(/^\//, "")
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

// ---------------------------------------------------------------------------------------------
// Schema → words
// ---------------------------------------------------------------------------------------------

function num(n: number): string {
  return Number.isInteger(n) && Math.abs(n) >= 1e4 ? n.toLocaleString("en-US") : String(n);
}

function characters(n: number): string {
  return `${num(n)} character${n === 1 ? "" : "s"}`;
}

function items(n: number): string {
  return `${num(n)} item${n === 1 ? "" : "s"}`;
}

/** "a, b or c" */
function orList(parts: string[]): string {
  return parts.length <= 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} or ${parts.at(-1)}`;
}

function literal(v: unknown): string {
  if (typeof v === "string") return /^[\w.:/@+-]+$/.test(v) ? v : JSON.stringify(v);
  return String(v);
}

/** The allowed values of an enum, a union of literals or a boolean, null last. */
function choices(values: unknown[]): string {
  const nullable = values.includes(null);
  const names = [...new Set(values.filter((v) => v !== null))].map(literal);
  if (!names.length) return "null";
  if (names.length === 1) return nullable ? `${names[0]} or null` : names[0]!;
  if (names.length === 2 && names.includes("true") && names.includes("false")) return nullable ? "true, false or null" : "true or false";
  return `one of ${names.join(", ")}${nullable ? " or null" : ""}`;
}

function lengthPhrase(min: unknown, max: unknown): string | null {
  const lo = typeof min === "number" && min > 0 ? min : undefined;
  const hi = typeof max === "number" ? max : undefined;
  if (lo !== undefined && hi !== undefined) return lo === hi ? `exactly ${characters(lo)}` : `${num(lo)} to ${characters(hi)}`;
  if (hi !== undefined) return `at most ${characters(hi)}`;
  if (lo !== undefined) return `at least ${characters(lo)}`;
  return null;
}

/** Formats with a fixed shape say it all; the others can still carry a length limit. */
const FORMATS: Record<string, { noun: string; fixed: boolean }> = {
  uuid: { noun: "a UUID", fixed: true },
  date: { noun: "a date (YYYY-MM-DD)", fixed: true },
  "date-time": { noun: "a date and time (ISO 8601, such as 2026-01-31T12:00:00Z)", fixed: true },
  time: { noun: "a time (HH:MM:SS)", fixed: true },
  email: { noun: "an email address", fixed: false },
  uri: { noun: "a URL", fixed: false },
  url: { noun: "a URL", fixed: false },
  "uri-reference": { noun: "a URL", fixed: false },
  hostname: { noun: "a host name", fixed: false },
  ipv4: { noun: "an IPv4 address", fixed: true },
  ipv6: { noun: "an IPv6 address", fixed: true },
  // Elysia's coercion of query strings and numeric body strings.
  integer: { noun: "a whole number", fixed: true },
  numeric: { noun: "a number", fixed: true },
  boolean: { noun: "true or false", fixed: true },
};

/** Patterns recognised by what they accept, so that variants of the same regex read the same. */
const KNOWN_PATTERNS: { noun: string; accepts: string[]; rejects: string[] }[] = [
  {
    noun: "a UUID",
    accepts: ["123e4567-e89b-12d3-a456-426614174000"],
    rejects: ["123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456-4266141740000", "x"],
  },
  { noun: "a date (YYYY-MM-DD)", accepts: ["2026-01-31"], rejects: ["2026/01/31", "2026-01-31T00:00:00Z", "26-01-31", "2026-1-31", "x"] },
  { noun: "a month (YYYY-MM)", accepts: ["2026-01"], rejects: ["2026/01", "2026-01-31", "2026-1", "x"] },
];
const patternNouns = new Map<string, string | null>();

function knownPattern(pattern: string): string | null {
  let noun = patternNouns.get(pattern);
  if (noun === undefined) {
    noun = null;
    try {
      const re = new RegExp(pattern, "u");
      noun = KNOWN_PATTERNS.find((k) => k.accepts.every((s) => re.test(s)) && !k.rejects.some((s) => re.test(s)))?.noun ?? null;
    } catch {}
    patternNouns.set(pattern, noun);
  }
  return noun;
}

function stringPhrase(s: any, value: unknown, standalone: boolean): string {
  const length = lengthPhrase(s.minLength, s.maxLength);
  const format = typeof s.format === "string" ? FORMATS[s.format] : undefined;
  let noun: string | null = format?.noun ?? null;
  let fixed = format?.fixed ?? false;
  if (!noun && typeof s.format === "string") noun = `text in ${s.format} format`;
  if (!noun && typeof s.pattern === "string") {
    noun = knownPattern(s.pattern);
    fixed = noun !== null;
    if (!noun) {
      const described = typeof s.description === "string" && s.description.trim() ? s.description.trim().replace(/\.$/, "") : null;
      noun = described ? `text in the form ${described}` : "text in the expected format";
    }
  }
  if (noun) return length && !fixed ? `${noun} of ${length}` : noun;
  if (!length) return "text";
  // "name: must be 1 to 255 characters" for a string of the wrong length; a number sent for a
  // text field reads better as "must be text of 1 to 255 characters".
  return standalone && typeof value === "string" ? length : `text of ${length}`;
}

/** Bounds this large only keep sums finite; naming them is noise unless the value crossed one. */
const NOTABLE_BOUND = 1e9;

function numberPhrase(s: any, value: unknown): string {
  const base = s.type === "integer" ? "a whole number" : "a number";
  const n = typeof value === "number" ? value : undefined;
  const loExclusive = typeof s.exclusiveMinimum === "number";
  const hiExclusive = typeof s.exclusiveMaximum === "number";
  const lo: number | undefined = loExclusive ? s.exclusiveMinimum : typeof s.minimum === "number" ? s.minimum : undefined;
  const hi: number | undefined = hiExclusive ? s.exclusiveMaximum : typeof s.maximum === "number" ? s.maximum : undefined;
  const loCrossed = lo !== undefined && n !== undefined && (loExclusive ? n <= lo : n < lo);
  const hiCrossed = hi !== undefined && n !== undefined && (hiExclusive ? n >= hi : n > hi);
  const showLo = lo !== undefined && (Math.abs(lo) < NOTABLE_BOUND || loCrossed);
  const showHi = hi !== undefined && (Math.abs(hi) < NOTABLE_BOUND || hiCrossed);
  let out = base;
  if (showLo && showHi && !loExclusive && !hiExclusive) out += ` from ${num(lo!)} to ${num(hi!)}`;
  else {
    const parts: string[] = [];
    if (showLo) parts.push(`${loExclusive ? ">" : "≥"} ${num(lo!)}`);
    if (showHi) parts.push(`${hiExclusive ? "<" : "≤"} ${num(hi!)}`);
    if (parts.length) out += ` ${parts.join(" and ")}`;
  }
  if (typeof s.multipleOf === "number" && !(s.type === "integer" && s.multipleOf === 1)) out += ` that is a multiple of ${num(s.multipleOf)}`;
  return out;
}

function arrayPhrase(s: any): string {
  const lo = typeof s.minItems === "number" && s.minItems > 0 ? s.minItems : undefined;
  const hi = typeof s.maxItems === "number" ? s.maxItems : undefined;
  let out = "a list";
  if (lo !== undefined && hi !== undefined) out += lo === hi ? ` of exactly ${items(lo)}` : ` of ${num(lo)} to ${items(hi)}`;
  else if (hi !== undefined) out += ` of at most ${items(hi)}`;
  else if (lo !== undefined) out += ` of at least ${items(lo)}`;
  if (s.uniqueItems === true) out += " without repeats";
  return out;
}

function objectPhrase(s: any): string {
  const lo = typeof s.minProperties === "number" && s.minProperties > 0 ? s.minProperties : undefined;
  const hi = typeof s.maxProperties === "number" ? s.maxProperties : undefined;
  if (lo !== undefined && hi !== undefined) return `a JSON object with ${num(lo)} to ${num(hi)} fields`;
  if (hi !== undefined) return `a JSON object with at most ${num(hi)} field${hi === 1 ? "" : "s"}`;
  if (lo !== undefined) return `a JSON object with at least ${num(lo)} field${lo === 1 ? "" : "s"}`;
  return "a JSON object";
}

const isNull = (s: any) => s?.type === "null";
const isChoice = (s: any) => s?.const !== undefined || Array.isArray(s?.enum) || (s?.type === "boolean" && s.anyOf === undefined);
const COERCED_FORMATS = new Set(["integer", "numeric", "boolean", "ObjectString", "ArrayString"]);
/** Elysia's `{ type: string, format: integer }` branch that accepts "42" for an integer: not a separate choice. */
const isCoercion = (s: any) => s?.type === "string" && COERCED_FORMATS.has(s.format);

function unionPhrase(branches: any[], value: unknown): string | null {
  let bs = branches.length > 1 ? branches.filter((b) => !isCoercion(b)) : branches;
  if (!bs.length) bs = branches;
  const nullable = bs.some(isNull);
  bs = bs.filter((b) => !isNull(b));
  if (bs.length && bs.every(isChoice)) {
    const values = bs.flatMap((b) => (b.const !== undefined ? [b.const] : Array.isArray(b.enum) ? b.enum : [true, false]));
    return choices(nullable ? [...values, null] : values);
  }
  const parts = [...new Set(bs.map((b) => phrase(b, value, false)))];
  if (parts.some((p) => p === null)) return null;
  const out = orList(parts as string[]);
  if (!nullable) return out || null;
  return out ? `${out} or null` : "null";
}

function enumSetPhrase(s: any): string {
  const allowed: unknown[] = Array.isArray(s.items?.enum) ? s.items.enum : [];
  const list = `a ${typeof s.minItems === "number" && s.minItems > 0 ? "non-empty " : ""}list of distinct values`;
  return allowed.length ? `${list} from ${allowed.map(literal).join(", ")}` : list;
}

/**
 * What `s` accepts, as words that follow "must be" ("one of aws, azure, gcp", "a UUID or null"),
 * or null when it has no plain description. `standalone`: not a branch of a union.
 */
function phrase(s: any, value: unknown, standalone: boolean): string | null {
  if (!s || typeof s !== "object") return null;
  if (s[Kind] === TEXT_ENUM_SET_KIND) return enumSetPhrase(s);
  if (s.const !== undefined) return literal(s.const);
  if (Array.isArray(s.enum)) return choices(s.enum);
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches)) return unionPhrase(branches, value);
  if (Array.isArray(s.type)) return unionPhrase(s.type.map((type: string) => ({ ...s, type })), value);
  switch (s.type) {
    case "string":
      return stringPhrase(s, value, standalone);
    case "number":
    case "integer":
      return numberPhrase(s, value);
    case "boolean":
      return "true or false";
    case "null":
      return "null";
    case "object":
      return objectPhrase(s);
    case "array":
      return arrayPhrase(s);
  }
  return null;
}

/** A message written for the schema (`errorMessage`, or Elysia's string `error`) wins. */
function customMessage(s: any): string | null {
  for (const m of [s?.errorMessage, s?.error]) if (typeof m === "string" && m.trim()) return m.trim();
  return null;
}

/** The message for a value that `s` refused, without the field name. */
function describeFailure(s: any, value: unknown): string {
  const custom = customMessage(s);
  if (custom) return custom;
  if ((s?.[Kind] === TEXT_KIND || s?.[Kind] === TEXT_ENUM_KIND) && value === undefined) return REQUIRED;
  if (s?.[Kind] === TEXT_KIND && typeof value === "string") {
    // Refused whatever the length: say so rather than repeat limits the value may well meet.
    if (value.includes("\u0000")) return "must not contain NUL (\\u0000) characters";
    if (hasLoneSurrogate(value)) return "must be valid Unicode text (it contains an unpaired surrogate)";
  }
  const p = phrase(s, value, true);
  return p ? `must be ${p}` : "is not valid";
}

// ---------------------------------------------------------------------------------------------
// TypeBox errors → field errors
// ---------------------------------------------------------------------------------------------

/** Lower wins when several failures land on one path. */
const Rank = { Required: 0, Unknown: 1, Described: 2 } as const;
type Rank = (typeof Rank)[keyof typeof Rank];

function jsonKind(v: unknown): "object" | "array" | "other" {
  return Array.isArray(v) ? "array" : v !== null && typeof v === "object" ? "object" : "other";
}

/**
 * The one branch of a failed union worth reporting field by field: the value is an object (or
 * array) and exactly one branch is an object (array) schema, as in "object or null".
 */
function branchFor(schema: any, value: unknown): number {
  const kind = jsonKind(value);
  const branches: any[] | undefined = schema?.anyOf ?? schema?.oneOf;
  if (kind === "other" || !Array.isArray(branches)) return -1;
  const matching = branches.flatMap((b, i) => ((b?.type ?? (b?.properties ? "object" : undefined)) === kind ? [i] : []));
  return matching.length === 1 ? matching[0]! : -1;
}

/** Converts a TypeBox/Elysia validation failure into field errors keyed by dotted path. */
export function fieldErrorsOf(err: any): FieldErrors {
  let all: any[] = [];
  try {
    all = [...(err?.all ?? [])];
  } catch {}
  const base = decodeSegments(err);
  const found = new Map<string, { rank: Rank; message: string }>();

  const note = (path: string, rank: Rank, message: string) => {
    const seen = found.get(path);
    if (!seen || rank < seen.rank) found.set(path, { rank, message });
  };

  const visit = (e: any, depth: number) => {
    if (!e || typeof e !== "object") return;
    const segments = [...base, ...pointerSegments(e.path)];
    const path = segments.join(".") || "(root)";
    if (e.type === ValueErrorType.ObjectAdditionalProperties) return note(path, Rank.Unknown, UNKNOWN);
    if (e.type === ValueErrorType.ObjectRequiredProperty || (e.value === undefined && segments.length > 0)) return note(path, Rank.Required, REQUIRED);
    if (e.type === ValueErrorType.Union && depth < 32 && Array.isArray(e.errors)) {
      const i = branchFor(e.schema, e.value);
      const inner = i >= 0 ? [...(e.errors[i] ?? [])] : [];
      if (inner.length) {
        for (const x of inner) visit(x, depth + 1);
        return;
      }
    }
    note(path, Rank.Described, describeFailure(e.schema, e.value));
  };

  for (const e of all) visit(e, 0);
  // Field names come from the request: `constructor` or `__proto__` must be ordinary keys.
  const out: FieldErrors = Object.create(null);
  for (const [path, { message }] of found) out[path] = [message];
  return out;
}

const PART_NAMES: Record<string, string> = { params: "path", query: "query", headers: "header", cookie: "cookie" };

/** Body errors are 422 (the request was understood but is not acceptable); query/path 400. */
export function fromElysiaValidation(err: any): BadRequestError | ValidationError {
  const errors = fieldErrorsOf(err);
  const fields = Object.keys(errors);
  const where = fields.length ? `: ${fields.map((f) => `${f} ${errors[f]![0]}`).join("; ")}` : "";
  // A decoded value (Elysia's "property" error) nested below the top level can only be in a body.
  const inBody = err?.type === "body" || (err?.type === "property" && decodeSegments(err).length > 1);
  if (inBody) return new ValidationError(`The request body is invalid${where}.`, errors);
  return new BadRequestError(`Invalid ${PART_NAMES[err?.type] ?? "query"} parameter${where}.`, errors);
}
