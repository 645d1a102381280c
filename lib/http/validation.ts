import { BadRequestError, ValidationError, type FieldErrors } from "../errors.ts";

/** Converts a TypeBox/Elysia validation failure into field errors keyed by dotted path. */
export function fieldErrorsOf(err: any): FieldErrors {
  // Field names come from the request: `constructor` or `__proto__` must be ordinary keys.
  const out: FieldErrors = Object.create(null);
  let all: any[] = [];
  try {
    all = err.all ?? [];
  } catch {}
  for (const e of all) {
    const path = String(e.path ?? "").replace(/^\//, "").replace(/\//g, ".") || "(root)";
    let msg = e.summary ?? e.message ?? "is invalid";
    if (e.type === 45 /* Required */ || /Expected required property/i.test(e.message ?? "")) msg = "is required";
    else if (/Unexpected property/i.test(e.message ?? "")) msg = "is not a known field";
    (out[path] ??= []).includes(msg) || out[path]!.push(msg);
  }
  return out;
}

/** Body errors are 422 (the request was understood but is not acceptable); query/path 400. */
export function fromElysiaValidation(err: any): BadRequestError | ValidationError {
  const errors = fieldErrorsOf(err);
  const fields = Object.keys(errors);
  const where = fields.length ? `: ${fields.map((f) => `${f} ${errors[f]![0]}`).join("; ")}` : "";
  if (err.type === "body") return new ValidationError(`The request body is invalid${where}.`, errors);
  return new BadRequestError(`Invalid ${err.type === "params" ? "path" : "query"} parameter${where}.`, errors);
}
