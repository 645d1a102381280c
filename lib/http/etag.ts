import { createHash } from "node:crypto";
import { versionOf, type ExpectedVersions } from "../versions.ts";

/**
 * Strong ETags of templates and estimates (DESIGN §12): `"<version>-<digest>"`. The version is the
 * row's (bumped by every change through the API) and decides `If-Match`; the digest of the body
 * makes the tag differ between representations (query variants, live prices, the next execution
 * date), so `If-None-Match` answers 304 only when the body would be byte-identical.
 */
export function etagOf(version: number, body: string): string {
  return `"${version}-${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
}

const TAG = /\s*(W\/)?"([^"]*)"\s*(?:,|$)/y;

function parseTags(header: string): { weak: boolean; value: string }[] | "*" {
  if (header.trim() === "*") return "*";
  const out: { weak: boolean; value: string }[] = [];
  TAG.lastIndex = 0;
  while (TAG.lastIndex < header.length) {
    const m = TAG.exec(header);
    if (!m) break;
    out.push({ weak: !!m[1], value: m[2]! });
  }
  return out;
}

/**
 * The versions `If-Match` accepts (strong comparison: weak tags never match). `undefined` when
 * there is no precondition (no header, or `*` on a resource that exists). A header that names
 * no version of ours accepts none: the write is refused with 412.
 */
export function expectedVersions(headers: Headers): ExpectedVersions {
  const h = headers.get("if-match");
  if (h === null) return undefined;
  const tags = parseTags(h);
  if (tags === "*") return undefined;
  const versions: number[] = [];
  for (const t of tags) {
    const m = /^(\d{1,15})-/.exec(t.value);
    if (!t.weak && m) versions.push(Number(m[1]));
  }
  return versions;
}

/** True when `If-None-Match` names this representation (weak comparison, per RFC 9110 §13.1.2). */
export function notModified(headers: Headers, etag: string): boolean {
  const h = headers.get("if-none-match");
  if (h === null) return false;
  const tags = parseTags(h);
  if (tags === "*") return true;
  return tags.some((t) => `"${t.value}"` === etag);
}

interface Ctx {
  request: Request;
  set: { headers: Record<string, unknown>; status?: unknown };
}

/**
 * Sets the document's ETag; on a GET whose `If-None-Match` matches it answers 304 without a
 * body. Documents without a known version go out without an ETag. (Typed as the document: a
 * route's response schema types its handler's result, and Elysia sends a Response as it is.)
 */
export function withEtag<T>(ctx: Ctx, document: T): T {
  const version = versionOf(document);
  if (version === undefined) return document;
  const body = JSON.stringify(document);
  const etag = etagOf(version, body);
  ctx.set.headers.etag = etag;
  if ((ctx.request.method === "GET" || ctx.request.method === "HEAD") && notModified(ctx.request.headers, etag)) {
    return new Response(null, { status: 304, headers: { etag } }) as unknown as T;
  }
  return document;
}
