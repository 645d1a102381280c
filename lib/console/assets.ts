/**
 * The console's static files: bundled once per process (or handed over by the compiled binary),
 * kept in memory with their brotli and gzip forms, served with content-hashed names and cached
 * for a year. The HTML shell is the only uncached file.
 */
import { brotliCompress, constants, gzip } from "node:zlib";
import { promisify } from "node:util";
import { createHash } from "node:crypto";
import { CONSOLE_BASE } from "./sessions.ts";

export interface ConsoleFile {
  name: string;
  kind: "entry" | "chunk" | "asset";
  bytes: Uint8Array;
}

interface ServedFile {
  type: string;
  identity: Uint8Array<ArrayBuffer>;
  br: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
}

export interface ConsoleBundle {
  files: Map<string, ServedFile>;
  scripts: string[];
  styles: string[];
  preloads: string[];
  /** Compressed (brotli) bytes of the JavaScript the first page loads. */
  firstPageScriptBytes: number;
}

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
  json: "application/json",
};

let loadFiles: () => Promise<ConsoleFile[]> = async () => (await import("../adapters/consoleBuild.ts")).buildConsole();
let bundle: Promise<ConsoleBundle> | undefined;

/** The compiled binary hands over its embedded build here. */
export function setConsoleFiles(loader: () => Promise<ConsoleFile[]>): void {
  loadFiles = loader;
  bundle = undefined;
}

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

// Compressed off the event loop (zlib's thread pool): quality 11 takes hundreds of milliseconds
// at start-up, which would stall every request of a just-started replica.
async function serve(name: string, bytes: Uint8Array): Promise<ServedFile> {
  const ext = name.slice(name.lastIndexOf(".") + 1);
  const [br, gz] = await Promise.all([
    brotliAsync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }),
    gzipAsync(bytes, { level: 9 }),
  ]);
  return {
    type: TYPES[ext] ?? "application/octet-stream",
    identity: new Uint8Array(bytes),
    br: new Uint8Array(br),
    gzip: new Uint8Array(gz),
    etag: `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`,
  };
}

export function consoleBundle(): Promise<ConsoleBundle> {
  bundle ??= loadFiles()
    .then(async (list) => {
      const files = new Map<string, ServedFile>(await Promise.all(list.map(async (f) => [f.name, await serve(f.name, f.bytes)] as const)));
      const scripts = list.filter((f) => f.kind === "entry" && f.name.endsWith(".js")).map((f) => f.name);
      const styles = list.filter((f) => f.name.endsWith(".css")).map((f) => f.name);
      const preloads = list.filter((f) => f.kind === "chunk" && f.name.endsWith(".js") && f.name.startsWith("chunk-")).map((f) => f.name);
      const firstPageScriptBytes = [...scripts, ...preloads].reduce((n, name) => n + files.get(name)!.br.length, 0);
      return { files, scripts, styles, preloads, firstPageScriptBytes };
    })
    .catch((e) => {
      bundle = undefined;
      throw e;
    });
  return bundle;
}

/** Starts the bundling in the background (at server start), so the first page does not wait for it. */
export function warmConsole(onError: (e: unknown) => void): void {
  consoleBundle().catch(onError);
}

function preferredEncoding(acceptEncoding: string | null): "br" | "gzip" | null {
  const accepted = (acceptEncoding ?? "")
    .toLowerCase()
    .split(",")
    .map((p) => p.trim().split(";"))
    .filter(([, q]) => !q || !/^q=0(\.0*)?$/.test(q.trim()))
    .map(([e]) => e!.trim());
  if (accepted.includes("br")) return "br";
  if (accepted.includes("gzip")) return "gzip";
  return null;
}

export async function assetResponse(name: string, request: Request): Promise<Response | null> {
  const file = (await consoleBundle()).files.get(name);
  if (!file) return null;
  const headers: Record<string, string> = {
    "content-type": file.type,
    "cache-control": "public, max-age=31536000, immutable",
    etag: file.etag,
    vary: "Accept-Encoding",
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
  };
  if (request.headers.get("if-none-match") === file.etag) return new Response(null, { status: 304, headers });
  const encoding = preferredEncoding(request.headers.get("accept-encoding"));
  const body = encoding === "br" ? file.br : encoding === "gzip" ? file.gzip : file.identity;
  if (encoding) headers["content-encoding"] = encoding;
  return new Response(request.method === "HEAD" ? null : body, { headers });
}

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** The HTML shell of every console page: no inline script or style, everything from this origin. */
export async function shellResponse(): Promise<Response> {
  const b = await consoleBundle();
  const asset = (n: string) => `${CONSOLE_BASE}/assets/${n}`;
  const html = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="description" content="commitops console: cloud spend, commitments, plans and purchases">',
    '<meta name="color-scheme" content="light">',
    "<title>commitops</title>",
    '<link rel="icon" href="data:,">',
    ...b.styles.map((n) => `<link rel="stylesheet" href="${asset(n)}">`),
    ...b.preloads.map((n) => `<link rel="modulepreload" href="${asset(n)}">`),
    ...b.scripts.map((n) => `<script type="module" src="${asset(n)}"></script>`),
    "</head>",
    '<body><div id="app"><p class="boot" role="status">Loading commitops…</p></div><noscript>The commitops console needs JavaScript. The same data is on the API: see /docs.</noscript></body>',
    "</html>",
  ].join("\n");
  return new Response(html, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-frame-options": "DENY",
      "referrer-policy": "same-origin",
      "x-content-type-options": "nosniff",
      "cross-origin-opener-policy": "same-origin",
      "permissions-policy": "camera=(), microphone=(), geolocation=()",
    },
  });
}
