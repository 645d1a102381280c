/** Request and response bodies of the loopback JSON servers (Google's front ends accept gzip request bodies). */
import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      resolve((req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString("utf8"));
    });
    req.on("error", reject);
  });
}

export function sendJson(res: ServerResponse, status: number, value: unknown) {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
