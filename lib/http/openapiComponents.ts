import { t, type TSchema } from "elysia";

/** Marks a response schema to be published as `#/components/schemas/<name>` (see hoistComponents). */
const COMPONENT = "x-component";
/** Further media types of a response (see `servedAlsoAs`), moved into the response's `content`. */
const MEDIA_TYPES = "x-media-types";
/** The description of a `nullable()` use, kept apart from the description of the schema itself. */
const NULLABLE_DESCRIPTION = "x-nullable-description";
/** A query parameter the operation needs although its schema is optional (see `requiredParam`). */
const REQUIRED_PARAM = "x-required-param";

/**
 * Names a TypeBox schema as an OpenAPI component (DESIGN §12: every 2xx response is a named
 * component schema, so generated clients get named types). The mark is an extension keyword:
 * validation ignores it and `hoistComponents` replaces each marked node of the document by a
 * `$ref`.
 */
export function component<T extends TSchema>(name: string, schema: T): T {
  (schema as Record<string, unknown>)[COMPONENT] = name;
  return schema;
}

/**
 * `schema` or null. Use it rather than `t.Union([schema, t.Null()], { description })` for a
 * component: the OpenAPI plugin merges a nullable union into its member (`type: [object,
 * null]`, the union's description on it), which would publish one component under two shapes;
 * `hoistComponents` splits it again into `anyOf: [$ref, null]` with this use's description.
 */
export function nullable<T extends TSchema>(schema: T, description?: string) {
  return t.Union([schema, t.Null()], description === undefined ? {} : { [NULLABLE_DESCRIPTION]: description });
}

/**
 * A response schema that the operation also serves as other media types (the report fetch's
 * `text/csv` beside JSON): Elysia publishes a response under `application/json` only. The copy
 * validates as `schema` does; the component it may be stays untouched.
 */
export function servedAlsoAs<T extends TSchema>(schema: T, content: Record<string, Record<string, unknown>>): T {
  return { ...schema, [MEDIA_TYPES]: content };
}

/**
 * `detail.responses` of an operation that answers 204 without a body. Elysia would publish a
 * `t.Null()` response as a malformed `content`, and validating it would reject handlers that
 * return nothing at all.
 */
export const NO_CONTENT = { 204: { description: "No content" } };

/**
 * The JSON type of a number schema of Elysia's: `t.Integer()` / `t.Numeric()` also accept a
 * numeric string (for query strings) and are published as `anyOf: [numeric string, number]`;
 * a client sends and receives JSON numbers.
 */
function numberOf(node: Record<string, unknown>): Record<string, unknown> {
  const anyOf = node.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return node;
  const [text, number] = anyOf as Record<string, unknown>[];
  const numeric = text?.type === "string" && (text.format === "integer" || text.format === "numeric");
  if (!numeric || (number?.type !== "integer" && number?.type !== "number")) return node;
  const { anyOf: _, ...rest } = node;
  return { ...rest, ...number };
}

/**
 * The plugin publishes `t.Union([t.String({ enum }), t.Null()])` as `type: [string, null]`
 * with the enum left without null, which refuses the null it means to allow.
 */
function nullInEnum(node: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(node.type) && node.type.includes("null") && Array.isArray(node.enum) && !node.enum.includes(null)) return { ...node, enum: [...node.enum, null] };
  return node;
}

/**
 * Publishes a query parameter as `required: true` while the route's schema keeps it optional,
 * for a parameter the service checks itself so that a missing one gets its own 400 message
 * (the report fetch's `year`/`month`): a generated client must still always send it.
 */
export function requiredParam<T extends Record<string, unknown>>(schema: T): T {
  return { ...schema, [REQUIRED_PARAM]: true };
}

function publishRequiredParams(paths: Record<string, any>): void {
  for (const item of Object.values(paths)) {
    for (const op of Object.values<any>(item ?? {})) {
      for (const param of Array.isArray(op?.parameters) ? op.parameters : []) {
        if (!param?.schema?.[REQUIRED_PARAM]) continue;
        delete param.schema[REQUIRED_PARAM];
        param.required = true;
      }
    }
  }
}

/** Moves every `servedAlsoAs` media type into its response's `content`. */
function spreadMediaTypes(paths: Record<string, any>): void {
  for (const item of Object.values(paths)) {
    for (const op of Object.values<any>(item ?? {})) {
      for (const response of Object.values<any>(op?.responses ?? {})) {
        for (const media of Object.values<any>({ ...response?.content })) {
          const extra = media?.schema?.[MEDIA_TYPES];
          if (!extra) continue;
          delete media.schema[MEDIA_TYPES];
          response.content = { ...response.content, ...extra };
        }
      }
    }
  }
}

/**
 * Moves every schema marked by `component()` into `components.schemas` and points its uses at
 * it, and publishes Elysia's number and nullable enum schemas as what they accept in JSON. Two
 * different schemas under one name are a programming error and fail the document.
 */
export function hoistComponents(doc: any): any {
  doc.components ??= {};
  const schemas: Record<string, unknown> = (doc.components.schemas ??= {});
  const seen = new Map<string, string>();
  spreadMediaTypes(doc.paths ?? {});
  publishRequiredParams(doc.paths ?? {});
  const visit = (node: any): any => {
    if (Array.isArray(node)) return node.map(visit);
    if (!node || typeof node !== "object") return node;
    const name = node[COMPONENT];
    const useDescription = node[NULLABLE_DESCRIPTION];
    let out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) if (k !== COMPONENT && k !== MEDIA_TYPES && k !== NULLABLE_DESCRIPTION) out[k] = visit(v);
    out = nullInEnum(numberOf(out));
    if (typeof name !== "string") return useDescription === undefined ? out : { ...out, description: useDescription };
    // A nullable use the plugin merged into the component (see `nullable`).
    const isNull = Array.isArray(out.type) && out.type.includes("null");
    if (isNull) {
      const types = (out.type as string[]).filter((x) => x !== "null");
      out.type = types.length === 1 ? types[0] : types;
    }
    const text = JSON.stringify(out);
    const before = seen.get(name);
    if (before !== undefined && before !== text) throw new Error(`Two different OpenAPI schemas are named ${name} (a description on a nullable use? see nullable())`);
    seen.set(name, text);
    schemas[name] = out;
    const ref = { $ref: `#/components/schemas/${name}` };
    if (!isNull) return ref;
    return { anyOf: [ref, { type: "null" }], ...(useDescription === undefined ? {} : { description: useDescription }) };
  };
  doc.paths = visit(doc.paths ?? {});
  return doc;
}
