import { AppError, BadRequestError, PayloadTooLargeError, ValidationError } from "../errors.ts";

/** DESIGN §12: JSON nesting deeper than this is refused before any parsing or validation. */
export const MAX_JSON_DEPTH = 32;

/**
 * Reads a request body into bytes, refusing (413) as soon as it passes `maxBytes`: a declared
 * Content-Length over the limit is refused without reading, a chunked body is cut off there.
 */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw new PayloadTooLargeError(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      void reader.cancel().catch(() => {});
      throw new PayloadTooLargeError(maxBytes);
    }
    chunks.push(value as Uint8Array<ArrayBuffer>);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * The body as text (invalid UTF-8 replaced, as `request.text()` does), or null when it is
 * larger than `maxBytes`: for endpoints that answer an over-limit body in their own format.
 */
export async function readBodyTextWithin(request: Request, maxBytes: number): Promise<string | null> {
  try {
    return new TextDecoder().decode(await readBodyBytes(request, maxBytes));
  } catch (e) {
    if (e instanceof PayloadTooLargeError) return null;
    throw e;
  }
}

/**
 * True when `text` opens more than `max` arrays/objects inside one another (strings skipped).
 * One pass over the characters, so a hostile `[[[[…` costs microseconds per kilobyte instead of
 * a deep recursion in the parser and the validator.
 */
export function jsonNestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/** 400 when a JSON body nests deeper than MAX_JSON_DEPTH (checked before anything parses it). */
export function refuseDeepJson(text: string): void {
  if (jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
    throw new BadRequestError(`The request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`, {}, "invalid_request");
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * The JSON body of a Beta API request, decided in this order: size (413), encoding and nesting
 * (400), syntax (400), then shape: every Beta body is a JSON object, so an empty body, `null`,
 * an array or a scalar is a 422 on the body as a whole.
 */
export async function readJsonObjectBody(request: Request, maxBytes: number): Promise<Record<string, unknown>> {
  const bytes = await readBodyBytes(request, maxBytes);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new BadRequestError("The request body is not valid UTF-8.", {}, "invalid_request");
  }
  if (text.trim() === "") throw new ValidationError("The request body is invalid: (root) must be a JSON object.", { "(root)": ["must be a JSON object"] });
  refuseDeepJson(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BadRequestError("The request body is not valid JSON.", {}, "invalid_request");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ValidationError("The request body is invalid: (root) must be a JSON object.", { "(root)": ["must be a JSON object"] });
  }
  const problem = bodyProblem(value, "");
  if (problem !== null) throw new ValidationError(`The request body is invalid: ${problem.path} ${problem.message}.`, { [problem.path]: [problem.message] });
  return value as Record<string, unknown>;
}

/**
 * Longest string a Beta body may hold anywhere (no field allows more than 16,384 characters).
 * Refused here, before schema validation: Elysia's validation error would print the whole value
 * (tens of milliseconds on the event loop for a 1 MB string).
 */
export const MAX_JSON_STRING = 65_536;

/**
 * The first thing no Beta body may hold, with its dotted path, or null: a `__proto__` key
 * (JSON.parse keeps it as an own key, but the first `obj[key] = …` copy turns it into a
 * prototype change and the field silently disappears), or a string or key longer than
 * MAX_JSON_STRING.
 */
function bodyProblem(value: unknown, path: string): { path: string; message: string } | null {
  // A list of strings is named by its field (`scopes`), as the schema validation names it.
  if (typeof value === "string") return value.length > MAX_JSON_STRING ? { path: path.replace(/(\.\d+)+$/, "") || "(root)", message: `must hold strings of at most ${MAX_JSON_STRING} characters` } : null;
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = bodyProblem(value[i], path ? `${path}.${i}` : String(i));
      if (found !== null) return found;
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    if (key.length > MAX_JSON_STRING) return { path: path || "(root)", message: `has a field name longer than ${MAX_JSON_STRING} characters` };
    const at = path ? `${path}.${key}` : key;
    if (key === "__proto__") return { path: at, message: "is not a known field" };
    const found = bodyProblem((value as Record<string, unknown>)[key], at);
    if (found !== null) return found;
  }
  return null;
}

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;

/**
 * The parse step of every Beta route: the body of POST/PUT/PATCH as a JSON object (limits
 * first, see readJsonObjectBody; another media type → 415; no body and no media type → `{}`); other methods carry no body here,
 * so whatever was sent is ignored unread (null).
 */
export async function betaRequestBody(request: Request, contentType: string | undefined, maxBytes: number): Promise<Record<string, unknown> | null> {
  if (request.method !== "POST" && request.method !== "PUT" && request.method !== "PATCH") return null;
  // An action without input (`POST …/sync`) may come with no body at all; the route's schema still judges `{}`.
  if (request.method === "POST" && !request.headers.get("content-type") && request.body === null) return {};
  if (contentType && !JSON_MEDIA_TYPE.test(contentType.trim())) {
    throw new AppError(415, "unsupported_media_type", "Send the request body as application/json.", "unsupported_media_type");
  }
  return readJsonObjectBody(request, maxBytes);
}
