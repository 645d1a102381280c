// /docs: Scalar served from this service (a pinned npm copy), with the sign-in pages' security
// headers. The browser part runs in Debian's /usr/bin/chromium (scripts/ci-install-chromium.sh).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { useServedTestApp } from "../helpers/chromium.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { SCALAR_SCRIPT_PATH, SCALAR_VERSION, setScalarScript } from "../../lib/http/docs.ts";
import { brotliDecompressSync, gunzipSync } from "node:zlib";

const root = join(import.meta.dir, "../..");

function cspDirectives(header: string | null): Map<string, string> {
  return new Map(
    (header ?? "")
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...values]) => [name!, values.join(" ")]),
  );
}

function scriptSources(html: string): string[] {
  return [...html.matchAll(/<script\b[^>]*\bsrc="([^"]*)"/g)].map((m) => m[1]!);
}

test("the pinned Scalar version is the exact one of package.json and node_modules", () => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  expect(pkg.dependencies["@scalar/api-reference"]).toBe(SCALAR_VERSION);
  const installed = JSON.parse(readFileSync(join(root, "node_modules/@scalar/api-reference/package.json"), "utf8"));
  expect(installed.version).toBe(SCALAR_VERSION);
});

describeEachDb("API reference page", (driver) => {
  const t = useTestApp(driver);

  test("/docs loads Scalar from this service: no CDN, no @latest, no external script", async () => {
    const r = await t.request("GET", "/docs", { key: null });
    expect(r.status).toBe(200);
    const html = await r.text();
    for (const outside of ["cdn.jsdelivr", "unpkg.com", "@latest", "fonts.scalar.com"]) expect(html).not.toContain(outside);
    expect(scriptSources(html)).toEqual([`${SCALAR_SCRIPT_PATH}?v=${SCALAR_VERSION}`]);
    // The configuration is a data block, not an inline script the CSP would have to allow.
    expect(html).toMatch(/<script id="api-reference" type="application\/json" data-configuration="[^"]*\/openapi\.json/);
  });

  test("/docs carries the security headers of the sign-in pages; scripts only from self", async () => {
    const r = await t.request("GET", "/docs", { key: null });
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    const csp = cspDirectives(r.headers.get("content-security-policy"));
    expect(csp.get("default-src")).toBe("'none'");
    expect(csp.get("script-src")).toBe("'self'");
    expect(csp.get("frame-ancestors")).toBe("'none'");
    expect(csp.get("base-uri")).toBe("'none'");
    expect(csp.get("connect-src")).toBe("'self' http://localhost");
  });

  test("/docs/scalar.js is the pinned Scalar bundle as JavaScript, cached for good", async () => {
    const r = await t.request("GET", SCALAR_SCRIPT_PATH, { key: null });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/javascript; charset=utf-8");
    expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    const js = await r.text();
    expect(js.length).toBeGreaterThan(1_000_000);
    expect(js).toContain(`@scalar/api-reference@${SCALAR_VERSION}`);
    expect(js).toBe(readFileSync(join(root, "node_modules/@scalar/api-reference/dist/browser/standalone.js"), "utf8"));
  });

  test("/docs/scalar.js is sent compressed to a browser that accepts it (Brotli first, then gzip), the same bytes once decoded; never to one that refuses", async () => {
    const plain = readFileSync(join(root, "node_modules/@scalar/api-reference/dist/browser/standalone.js"));
    const fetchWith = async (acceptEncoding: string) => {
      const r = await t.request("GET", SCALAR_SCRIPT_PATH, { key: null, headers: { "accept-encoding": acceptEncoding } });
      expect(r.status).toBe(200);
      expect(r.headers.get("vary")).toBe("Accept-Encoding");
      expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      return { encoding: r.headers.get("content-encoding"), body: Buffer.from(await r.arrayBuffer()) };
    };
    const br = await fetchWith("gzip, deflate, br, zstd");
    expect(br.encoding).toBe("br");
    expect(br.body.length).toBeLessThan(plain.length / 4);
    expect(brotliDecompressSync(br.body).equals(plain)).toBe(true);
    const gz = await fetchWith("gzip;q=1.0, br;q=0");
    expect(gz.encoding).toBe("gzip");
    expect(gz.body.length).toBeLessThan(plain.length / 3);
    expect(gunzipSync(gz.body).equals(plain)).toBe(true);
    for (const refused of ["identity", "gzip;q=0, br;q=0", "deflate"]) {
      const r = await fetchWith(refused);
      expect([refused, r.encoding]).toEqual([refused, null]);
      expect(r.body.equals(plain)).toBe(true);
    }
  });

  test("a Scalar script that cannot be loaded answers the JSON 500 of the app's error handler, then loads once it can", async () => {
    setScalarScript(() => Promise.reject(new Error(`ENOENT: ${root}/node_modules/missing.js`)));
    try {
      const r = await t.request("GET", SCALAR_SCRIPT_PATH, { key: null });
      expect(r.status).toBe(500);
      expect(r.headers.get("content-type")).toContain("application/json");
      const text = await r.text();
      expect(text).not.toContain(root);
      expect(JSON.parse(text)).toMatchObject({ status: "INTERNAL_SERVER_ERROR", url: SCALAR_SCRIPT_PATH });
    } finally {
      setScalarScript();
    }
    expect((await t.request("GET", SCALAR_SCRIPT_PATH, { key: null })).status).toBe(200);
  });

  test("the docs routes stay out of the OpenAPI document", async () => {
    const doc = await (await t.request("GET", "/openapi.json", { key: null })).json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/docs"))).toEqual([]);
  });
});

describe("API reference in headless Chromium", () => {
  const { t, hasChromium, baseUrl, browser } = useServedTestApp("pglite", "docs browser test");

  test.skipIf(!hasChromium)(
    "/docs renders the API under its CSP: no violation, no error, no request to another origin",
    async () => {
      const base = baseUrl();
      const page = await browser().newPage();
      const problems: string[] = [];
      const requests: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error" || /Content Security Policy/i.test(m.text())) problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("request", (r) => requests.push(r.url()));
      await page.goto(`${base}/docs`, { waitUntil: "networkidle" });
      await page.getByRole("heading", { name: "commitops Beta API" }).first().waitFor({ timeout: 30_000 });
      await page.getByText("Cost estimates").first().waitFor({ timeout: 30_000 });
      expect(problems).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(`${base}/`))).toEqual([]);
      expect(requests).toContain(`${base}${SCALAR_SCRIPT_PATH}?v=${SCALAR_VERSION}`);
      expect(requests).toContain(`${base}/openapi.json`);
      await page.close();
    },
    60_000,
  );
});
