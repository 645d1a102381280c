/**
 * Checks of a paged Beta list (DESIGN §12) through the real app: every page's `X-Pagination`
 * totals, `Link` rel="next" on every page but the last (and requested as given: it must work),
 * the pages together equal to the whole list in the same order, no row twice.
 */
import { expect } from "bun:test";
import type { TestContext } from "./app.ts";

export function linksOf(r: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of (r.headers.get("link") ?? "").matchAll(/<([^>]*)>;\s*rel="(\w+)"/g)) out[m[2]!] = m[1]!;
  return out;
}

export function paginationOf(r: Response): { page: number; page_size: number; total_count: number; total_pages: number } {
  const h = r.headers.get("x-pagination");
  expect(h).toBeTruthy();
  return JSON.parse(h!);
}

/** The path and query of an absolute link, to send through the app (PUBLIC_URL is http://localhost). */
function pathOf(link: string): string {
  const u = new URL(link);
  expect(u.origin).toBe("http://localhost");
  return `${u.pathname}${u.search}`;
}

/**
 * Walks the list at `path` (absolute, with its own filters) page by page with `page_size`,
 * following rel="next"; checks every page; returns the rows of all pages in order, and checks
 * them against one page holding everything.
 */
export async function walkPages(t: TestContext, path: string, pageSize: number, opts: { key?: string; expectTotal?: number; idOf?: (row: any) => string } = {}): Promise<any[]> {
  const idOf = opts.idOf ?? ((r: any) => r.id);
  const sep = path.includes("?") ? "&" : "?";
  const whole = await t.request("GET", `${path}${sep}page_size=500`, { key: opts.key });
  expect(whole.status).toBe(200);
  const all = (await whole.json()) as any[];
  if (opts.expectTotal !== undefined) expect(all.length).toBe(opts.expectTotal);
  expect(paginationOf(whole)).toEqual({ page: 1, page_size: 500, total_count: all.length, total_pages: Math.max(1, Math.ceil(all.length / 500)) });
  expect(linksOf(whole).next).toBeUndefined();

  const pages = Math.max(1, Math.ceil(all.length / pageSize));
  const rows: any[] = [];
  let next: string | undefined = `${path}${sep}page_size=${pageSize}`;
  for (let n = 1; n <= pages; n++) {
    const r = await t.request("GET", next!, { key: opts.key });
    expect(r.status).toBe(200);
    const body = (await r.json()) as any[];
    expect(paginationOf(r)).toEqual({ page: n, page_size: pageSize, total_count: all.length, total_pages: pages });
    expect(body.map(idOf)).toEqual(all.slice((n - 1) * pageSize, n * pageSize).map(idOf));
    rows.push(...body);
    const links = linksOf(r);
    expect(links.first).toBeDefined();
    expect(links.last).toBeDefined();
    if (n < pages) {
      expect(links.next).toBeDefined();
      expect(new URL(links.next!).searchParams.get("page")).toBe(String(n + 1));
      next = pathOf(links.next!);
    } else {
      expect(links.next).toBeUndefined();
      next = undefined;
    }
    if (n > 1) expect(links.prev).toBeDefined();
  }
  expect(new Set(rows.map(idOf)).size).toBe(rows.length);
  expect(rows.map(idOf)).toEqual(all.map(idOf));
  return all;
}
