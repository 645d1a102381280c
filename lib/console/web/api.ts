/**
 * The console's only way to the service: the public Beta API through /app/api (the server adds
 * the session's token). Paths and response types come from the generated `api.gen.ts`
 * (openapi-typescript on /openapi.json), so a field the API stops sending fails the type check.
 */
import type { paths } from "./api.gen.ts";
import { session } from "./session.ts";

export const API_BASE = "/app/api";

type Method = "get" | "post" | "put" | "patch" | "delete";
type PathsWith<M extends Method> = { [P in keyof paths]: paths[P] extends { [K in M]: {} } ? P : never }[keyof paths];
type Op<P extends keyof paths, M extends Method> = paths[P] extends { [K in M]: infer O } ? O : never;
type Success<O> = O extends { responses: infer R } ? (R extends { 200: { content: { "application/json": infer T } } } ? T : R extends { 201: { content: { "application/json": infer T } } } ? T : unknown) : unknown;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type BodyOf<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

export type ApiGet<P extends PathsWith<"get">> = Success<Op<P, "get">>;
export type ApiQuery<P extends PathsWith<"get">> = QueryOf<Op<P, "get">>;

/** The spec's error body (SPEC "Errors"). */
export interface ErrorBody {
  code: string | number;
  message: string;
  errors?: Record<string, string[]>;
  detail?: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

export interface ApiResponse<T> {
  status: number;
  data: T;
  headers: Headers;
}

type Params = Record<string, string | number | boolean | string[] | undefined | null>;

/** `/beta/v1/org/{org_id}/x/{id}` with the session's org and the given path parameters filled in. */
export function apiPath(template: string, pathParams: Record<string, string> = {}): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const v = name === "org_id" ? session().orgId : pathParams[name];
    if (v === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(v);
  });
}

export function queryString(query: Params | undefined): string {
  if (!query) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A URL the browser may open or download directly (GETs need no CSRF token). */
export function apiUrl(template: string, pathParams: Record<string, string> = {}, query?: Params): string {
  return `${API_BASE}${apiPath(template, pathParams)}${queryString(query)}`;
}

export function signInAgain(): never {
  const here = location.pathname + location.search;
  location.assign(`/app/login?return=${encodeURIComponent(here)}`);
  throw new ApiError(401, { code: "session_expired", message: "Your session has ended; signing in again." });
}

async function request<T>(method: string, url: string, init: { body?: unknown; headers?: Record<string, string> } = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: "application/json", ...init.headers };
  if (method !== "GET") headers["x-csrf-token"] = session().csrf;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), credentials: "same-origin" });
  } catch {
    throw new ApiError(0, { code: "network", message: "The service could not be reached. Check your connection and try again." });
  }
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (res.status === 401) signInAgain();
  if (!res.ok) {
    const body = data && typeof data === "object" && "message" in (data as object) ? (data as ErrorBody) : { code: res.status, message: `The request failed (HTTP ${res.status}).` };
    throw new ApiError(res.status, body);
  }
  return { status: res.status, data: data as T, headers: res.headers };
}

export function get<P extends PathsWith<"get">>(template: P, opts: { path?: Record<string, string>; query?: ApiQuery<P> & Params } = {}): Promise<ApiResponse<ApiGet<P>>> {
  return request("GET", apiUrl(template, opts.path, opts.query as Params));
}

export function send<M extends Exclude<Method, "get">, P extends PathsWith<M>>(
  method: M,
  template: P,
  opts: { path?: Record<string, string>; query?: Params; body?: BodyOf<Op<P, M>>; ifMatch?: string; idempotencyKey?: string } = {},
): Promise<ApiResponse<Success<Op<P, M>>>> {
  const headers: Record<string, string> = {};
  if (opts.ifMatch) headers["if-match"] = opts.ifMatch;
  if (opts.idempotencyKey) headers["idempotency-key"] = opts.idempotencyKey;
  return request(method.toUpperCase(), apiUrl(template, opts.path, opts.query), { body: opts.body, headers });
}

/** A fresh Idempotency-Key for one user action (a retried click sends the same key). */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}
