/** The org id segment of a Beta API path (`/beta/v1/org/{org_id}` or below). */
export const ORG_PATH = /^\/beta\/v1\/org\/([^/]+)(?:\/|$)/;

/**
 * True when a concrete path matches an Elysia route pattern (`:param` segments match one
 * segment, a trailing `*` the rest; a trailing slash is ignored on both sides).
 */
export function routePatternMatches(pattern: string, path: string): boolean {
  const p = pattern.replace(/\/+$/, "").split("/");
  const a = path.replace(/\/+$/, "").split("/");
  if (p.length !== a.length) return p[p.length - 1] === "*" && a.length >= p.length - 1;
  return p.every((seg, i) => seg.startsWith(":") || seg === "*" || seg === a[i]);
}
