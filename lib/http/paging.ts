import { t } from "elysia";
import { Type } from "@sinclair/typebox";
import { BadRequestError } from "../errors.ts";

/**
 * Paging of every Beta list (DESIGN §12): the spec's array bodies stay as they are; `page` and
 * `page_size` choose the slice, `X-Pagination` tells the totals and an RFC 8288 `Link` header
 * points at the first, previous, next and last pages.
 */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
/** The highest page number a request may ask for. */
export const MAX_PAGE = 1_000_000;

/** A page number or size as a query string carries it: digits only (no sign, exponent, hex, blank or decimal point). */
const WHOLE_NUMBER = /^[0-9]+$/;

/**
 * The one reading of `page`, `page_size` (and the runs list's `limit`) on every list: a plain
 * whole number from 1 to `max`. `1e3`, `0x10`, ` 1`, `+1` and `1.0` answer 400 naming the field.
 */
export function pageParam(field: string, value: unknown, max: number): number {
  const n = typeof value === "string" ? (WHOLE_NUMBER.test(value) ? Number(value) : NaN) : typeof value === "number" ? value : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new BadRequestError(`Invalid query parameter: ${field} must be a whole number from 1 to ${max}.`, { [field]: [`must be a whole number from 1 to ${max}`] });
  }
  return n;
}

/**
 * The query schema of a paging field. The OpenAPI document shows an integer (its range and
 * default); the value is read by `pageParam` alone — not by Elysia's numeric coercion, which takes
 * `1e3` for 1000 and `0x10` for 16.
 */
export function pageField(field: string, max: number, def: number | undefined, description: string) {
  const range = { minimum: 1, maximum: max, ...(def === undefined ? {} : { default: def }), description };
  return t.Optional(
    t
      .Transform(t.Union([t.String({ format: "integer" }), Type.Integer(range)], range))
      .Decode((v) => pageParam(field, v, max))
      .Encode((v) => v),
  );
}

/** Query fields of a paged list (spread into the route's query object). */
export const PageQueryFields = {
  page: pageField("page", MAX_PAGE, 1, "Page number, from 1"),
  page_size: pageField("page_size", MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE, `Rows per page (1–${MAX_PAGE_SIZE})`),
};

/** The largest `limit` (the billing runs list's documented alias of `page_size`). */
export const MAX_LIMIT_ALIAS = 200;

/** `limit`: an alias of `page_size` (1–200), as the billing runs list has long documented it. */
export const LimitAliasField = {
  limit: pageField("limit", MAX_LIMIT_ALIAS, undefined, `Alias of page_size (1–${MAX_LIMIT_ALIAS}); links name it page_size`),
};

export interface PageRequest {
  page: number;
  pageSize: number;
  /** SQL OFFSET / LIMIT of the page. */
  offset: number;
  limit: number;
}

export function pageRequest(query: { page?: number; page_size?: number; limit?: number }, defaults: { pageSize?: number } = {}): PageRequest {
  const page = query.page ?? 1;
  const pageSize = query.limit ?? query.page_size ?? defaults.pageSize ?? DEFAULT_PAGE_SIZE;
  return { page, pageSize, offset: (page - 1) * pageSize, limit: pageSize };
}

/** `page`/`page_size` of a route whose query is validated by hand (report params): 400 naming the field. */
export function pageQueryOf(raw: { page?: unknown; page_size?: unknown }): { page?: number; page_size?: number } {
  const out: { page?: number; page_size?: number } = {};
  for (const [field, max] of [["page", MAX_PAGE], ["page_size", MAX_PAGE_SIZE]] as const) {
    if (raw[field] !== undefined) out[field] = pageParam(field, raw[field], max);
  }
  return out;
}

/** A page of rows and the total count of the whole list. */
export interface Page<T> {
  items: T[];
  total: number;
}

/** The page of a list that is small by nature and already in memory (reports catalog, keys, …). */
export function pageOfArray<T>(all: T[], p: PageRequest): Page<T> {
  return { items: all.slice(p.offset, p.offset + p.limit), total: all.length };
}

/** `X-Pagination` and `Link` for the page; links keep the request's other query parameters. */
export function pageHeaders(requestUrl: string, publicUrl: string, p: PageRequest, total: number): Record<string, string> {
  const totalPages = Math.max(1, Math.ceil(total / p.pageSize));
  const url = new URL(requestUrl);
  // Under PUBLIC_URL, path included (a service mounted at https://host/commitops); never the Host header.
  const base = publicUrl.replace(/\/+$/, "");
  const link = (page: number, rel: string) => {
    const q = new URLSearchParams(url.search);
    q.delete("limit"); // the alias of page_size, which the links carry
    q.set("page", String(page));
    q.set("page_size", String(p.pageSize));
    return `<${base}${url.pathname}?${q}>; rel="${rel}"`;
  };
  const links = [link(1, "first")];
  if (p.page > 1) links.push(link(Math.min(p.page - 1, totalPages), "prev"));
  if (p.page < totalPages) links.push(link(p.page + 1, "next"));
  links.push(link(totalPages, "last"));
  return {
    "x-pagination": JSON.stringify({ page: p.page, page_size: p.pageSize, total_count: total, total_pages: totalPages }),
    link: links.join(", "),
  };
}

/** What a list route hands to `pagedList`: its request, response headers and validated paging fields. */
export interface ListContext {
  request: Request;
  set: { headers: Record<string, unknown> };
  query: { page?: number; page_size?: number; limit?: number };
}

/**
 * The answer of a paged list route: `load` reads the page the query asks for (SQL OFFSET/LIMIT,
 * or `pageOfArray` for a list small by nature), the paging headers are set, and the page's rows
 * are the spec's array body.
 */
export async function pagedList<T>(ctx: ListContext, publicUrl: string, load: (p: PageRequest) => Promise<Page<T>> | Page<T>, defaults: { pageSize?: number } = {}): Promise<T[]> {
  // page_size has a default in the schema: whether it was sent is the URL's to say.
  if (ctx.query.limit !== undefined && new URL(ctx.request.url).searchParams.has("page_size")) {
    throw new BadRequestError("Invalid query parameter: limit is an alias of page_size; send one of them.", { limit: ["is an alias of page_size; send one of them"] });
  }
  const p = pageRequest(ctx.query, defaults);
  const page = await load(p);
  Object.assign(ctx.set.headers, pageHeaders(ctx.request.url, publicUrl, p, page.total));
  return page.items;
}
