/**
 * The error statuses of each Beta operation: SPEC's table for reports and templates (templates'
 * list, create and update add 422), and for the others what DESIGN §4 lets them answer. 429 and
 * 503 can come from any authenticated route (rate limit, database down); DESIGN §12 adds 409 to
 * every POST (an `Idempotency-Key` still running). The 412 of the conditional writes (`If-Match`)
 * is declared with the headers that cause it, in lib/http/openapiHeaders.ts.
 */
export function SPEC_ERROR_STATUSES(method: string, path: string): number[] {
  const base = [400, 401, 403, 404, 405, 409, 500];
  if (path.startsWith("/allocation-reports")) return [...base, 429, 503];
  if (path.startsWith("/commitment-plan-templates")) {
    const isItem = path !== "/commitment-plan-templates";
    const withValidation = !isItem || method === "put"; // list, create, update
    return [...base, ...(withValidation ? [422] : []), 429, 503];
  }
  const hasBody = ["post", "put", "patch"].includes(method);
  const conflict = method === "post" || path.startsWith("/cost-estimates") ? [409] : [];
  // Work done at a provider during the request (a purchasing connection's inventory listing).
  if (path.endsWith("/inventory")) return [400, 401, 403, 404, 405, 409, 422, 429, 500, 502, 503];
  return [400, 401, 403, 404, 405, ...conflict, ...(hasBody ? [422] : []), 429, 500, 503];
}
