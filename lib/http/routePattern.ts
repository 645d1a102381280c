/** The org id segment of a Beta API path (`/beta/v1/org/{org_id}` or below). */
export const ORG_PATH = /^\/beta\/v1\/org\/([^/]+)(?:\/|$)/;

/** A path's segments as route patterns compare them (a trailing slash is ignored). */
export function pathSegments(path: string): string[] {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47 /* / */) end--;
  return path.slice(0, end).split("/");
}

/**
 * An Elysia route pattern (`/a/:id/b`) compiled once into a test of a concrete path's segments
 * (`pathSegments`): `:param` segments match one segment, a trailing `*` the rest; a trailing
 * slash is ignored on both sides.
 */
export function compileRoutePattern(pattern: string): (segments: string[]) => boolean {
  const p = pathSegments(pattern);
  const wildcardTail = p[p.length - 1] === "*";
  const fixed = p.map((seg) => (seg.startsWith(":") || seg === "*" ? null : seg));
  return (a) => {
    if (p.length !== a.length && !(wildcardTail && a.length >= p.length - 1)) return false;
    const n = Math.min(fixed.length, a.length);
    for (let i = 0; i < n; i++) {
      const seg = fixed[i];
      if (seg !== null && seg !== a[i]) return false;
    }
    return true;
  };
}

/** True when a concrete path matches an Elysia route pattern (see `compileRoutePattern`). */
export function routePatternMatches(pattern: string, path: string): boolean {
  return compileRoutePattern(pattern)(pathSegments(path));
}
