/**
 * `/docs`: the API reference (Scalar) rendering `/openapi.json`. The Scalar script is a pinned
 * npm copy served by this app (`/docs/scalar.js`), never a CDN: the page works offline and no
 * third party can change the script the page runs.
 */
import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { createRequire } from "node:module";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { brotliCompress, constants as zlibConstants, gzip } from "node:zlib";
import { promisify } from "node:util";
import type { Services } from "../services.ts";
import { escapeHtml } from "../oauth/pages.ts";
import { htmlPageHeaders } from "./pageHeaders.ts";
import { EVENT_CATALOG_MARKDOWN } from "../events/docs.ts";

/** The exact version package.json pins for @scalar/api-reference (a test keeps them equal). */
export const SCALAR_VERSION = "1.72.1";
export const SCALAR_SCRIPT_PATH = "/docs/scalar.js";
const DOCS_PATH = "/docs";

const DOCUMENT_INFO = {
  title: "commitops Beta API",
  version: "1.0.0",
  description:
    "Cloud commitment optimization: allocation reports, commitment plan templates, cost estimates, support and the assistant (MCP) server.\n\n" +
    "## Events\n\nEach organization's event log (`GET /beta/v1/org/{org_id}/events`; also delivered to its webhook endpoints, Slack and email). The types, each with a versioned `data` document (`components/schemas/<Type>Data`):\n\n" +
    EVENT_CATALOG_MARKDOWN,
};

/** Scalar's self-contained browser bundle, from node_modules (the compiled binary injects its embedded copy). */
async function readScalarFromNodeModules(): Promise<Uint8Array<ArrayBuffer>> {
  const packageMain = createRequire(import.meta.url).resolve("@scalar/api-reference");
  return readFile(join(dirname(packageMain), "browser", "standalone.js"));
}

let loadScalarScript: () => Promise<Uint8Array<ArrayBuffer>> = readScalarFromNodeModules;
let scalarScript: Promise<Uint8Array<ArrayBuffer>> | undefined;

/** The compiled binary has no node_modules: its entry hands over the embedded Scalar bundle here (no argument: node_modules again). */
export function setScalarScript(loader: () => Promise<Uint8Array<ArrayBuffer>> = readScalarFromNodeModules) {
  loadScalarScript = loader;
  scalarScript = undefined;
  encodedScripts = new Map();
}

function cachedScalarScript(): Promise<Uint8Array<ArrayBuffer>> {
  scalarScript ??= loadScalarScript().catch((e) => {
    scalarScript = undefined; // a later request tries again
    throw e;
  });
  return scalarScript;
}

type ScriptEncoding = "br" | "gzip";
let encodedScripts: Map<ScriptEncoding, Promise<Uint8Array<ArrayBuffer>>> = new Map();

/**
 * The bundle compressed once per encoding (4.35 MB of JavaScript: 14 s to the page's
 * DOMContentLoaded on a busy machine uncompressed), kept with the bundle it came from.
 */
function encodedScalarScript(encoding: ScriptEncoding): Promise<Uint8Array<ArrayBuffer>> {
  let encoded = encodedScripts.get(encoding);
  if (!encoded) {
    // Off the event loop (Brotli takes about half a second of CPU for this bundle).
    encoded = cachedScalarScript().then(
      async (plain) =>
        (encoding === "br"
          ? await promisify(brotliCompress)(plain, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 9, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: plain.length } })
          : await promisify(gzip)(plain, { level: 9 })) as Uint8Array<ArrayBuffer>,
    );
    encoded.catch(() => encodedScripts.delete(encoding));
    encodedScripts.set(encoding, encoded);
  }
  return encoded;
}

/** The best encoding of the bundle a request accepts (Brotli, then gzip; none when `q=0` or not named). */
function acceptedEncoding(request: Request): ScriptEncoding | null {
  const offered = new Map(
    (request.headers.get("accept-encoding") ?? "")
      .split(",")
      .map((part) => part.trim().split(/\s*;\s*/))
      .filter(([name]) => name)
      .map(([name, ...params]) => [name!.toLowerCase(), Number(params.find((p) => p.startsWith("q="))?.slice(2) ?? 1)] as const),
  );
  for (const e of ["br", "gzip"] as const) if ((offered.get(e) ?? 0) > 0) return e;
  return null;
}

// The versioned URL may be cached for good: a new pin changes the page's `?v=`.
const SCRIPT_HEADERS: Record<string, string> = {
  "content-type": "application/javascript; charset=utf-8",
  "cache-control": "public, max-age=31536000, immutable",
  "x-content-type-options": "nosniff",
  vary: "Accept-Encoding",
};

/**
 * Scripts only from this origin: the page has no executable inline script (the configuration is
 * a JSON data block). Styles need 'unsafe-inline': Scalar adds several `<style>` elements (one
 * with theme-dependent content) and `style` attributes, most without a nonce. Nothing else
 * leaves the origin (`withDefaultFonts: false`); "try it" requests go to this service's public
 * URL, which may differ from the host the page was opened on.
 */
function pageHeaders(publicOrigin: string): Record<string, string> {
  return htmlPageHeaders(
    [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      `connect-src 'self' ${publicOrigin}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'none'",
    ].join("; "),
  );
}

// Scalar's hosted extras (AI agent, MCP generator, developer toolbar) would call scalar.com.
const SCALAR_CONFIGURATION = {
  url: "/openapi.json",
  withDefaultFonts: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
};

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>${escapeHtml(DOCUMENT_INFO.title)} · reference</title></head>
<body>
<script id="api-reference" type="application/json" data-configuration="${escapeHtml(JSON.stringify(SCALAR_CONFIGURATION))}"></script>
<script src="${SCALAR_SCRIPT_PATH}?v=${SCALAR_VERSION}"></script>
</body></html>`;

/**
 * The OpenAPI generator (its document is completed by `/openapi.json` in app.ts) and our own
 * `/docs` page in place of the plugin's, whose page loads Scalar from a CDN.
 */
export function apiDocs(s: Services) {
  const docsPageHeaders = pageHeaders(new URL(s.config.publicUrl).origin);
  return new Elysia()
    .use(
      openapi({
        path: DOCS_PATH,
        provider: null,
        specPath: "/openapi/generated.json",
        documentation: {
          openapi: "3.1.0",
          info: DOCUMENT_INFO,
          servers: [{ url: s.config.publicUrl }],
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "Org API key (co_…) or OAuth access token" },
              apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
            },
          },
        } as any,
      }),
    )
    .get(DOCS_PATH, () => new Response(DOCS_PAGE, { headers: docsPageHeaders }), { detail: { hide: true } })
    .get(
      SCALAR_SCRIPT_PATH,
      async ({ request }) => {
        const encoding = acceptedEncoding(request);
        if (!encoding) return new Response(await cachedScalarScript(), { headers: SCRIPT_HEADERS });
        return new Response(await encodedScalarScript(encoding), { headers: { ...SCRIPT_HEADERS, "content-encoding": encoding } });
      },
      { detail: { hide: true } },
    );
}
