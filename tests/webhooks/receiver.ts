/**
 * A webhook receiver on loopback, as a customer would write one: it verifies each message's
 * signature with the Standard Webhooks reference library (`standardwebhooks`' Webhook.verify)
 * and dedupes by `webhook-id`. Each path can misbehave on demand (fail, 410, redirect, hang,
 * stream a huge answer) so tests can show one bad receiver does not slow another.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Webhook } from "standardwebhooks";

export type Behavior =
  | { kind: "ok"; status?: number; body?: string }
  | { kind: "status"; status: number; body?: string }
  | { kind: "redirect"; to: string }
  | { kind: "hang" }
  /** Answers `status` and streams `bytes` of body as fast as the socket takes it. */
  | { kind: "huge"; status: number; bytes: number };

export interface Received {
  path: string;
  id: string | null;
  headers: Record<string, string>;
  body: string;
  json: any;
  /** Verified with one of the receiver's secrets (null: no secret configured for the path). */
  verified: boolean | null;
  /** Which configured secret verified it (index), when one did. */
  verifiedWith: number | null;
  at: number;
}

export interface Receiver {
  port: number;
  url(path?: string): string;
  /** Every request, in arrival order. */
  received: Received[];
  /** The first message of each webhook-id on `path` (deduped, in first-arrival order). */
  unique(path?: string): Received[];
  /** Requests that reached `path`. */
  on(path: string): Received[];
  behave(path: string, b: Behavior | ((r: Received) => Behavior)): void;
  /** Bytes of body a path's answers have written so far (how much of a huge answer went out). */
  bytesSent(path: string): number;
  /** Secrets a path's messages are verified with (any may match). */
  verifyWith(path: string, secrets: string[]): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const behaviors = new Map<string, Behavior | ((r: Received) => Behavior)>();
  const secrets = new Map<string, string[]>();
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const sent = new Map<string, number>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")]));
      let json: any = null;
      try {
        json = JSON.parse(body);
      } catch {}
      let verified: boolean | null = null;
      let verifiedWith: number | null = null;
      const keys = secrets.get(path);
      if (keys?.length) {
        verified = false;
        keys.forEach((k, i) => {
          if (verified) return;
          try {
            new Webhook(k).verify(body, headers);
            verified = true;
            verifiedWith = i;
          } catch {}
        });
      }
      const r: Received = { path, id: headers["webhook-id"] ?? null, headers, body, json, verified, verifiedWith, at: Date.now() };
      received.push(r);
      const found = behaviors.get(path) ?? { kind: "ok" };
      const b = typeof found === "function" ? found(r) : found;
      switch (b.kind) {
        case "ok":
          res.writeHead(b.status ?? 204).end(b.body);
          return;
        case "status":
          res.writeHead(b.status, { "content-type": "text/plain" }).end(b.body ?? `status ${b.status}`);
          return;
        case "redirect":
          res.writeHead(302, { location: b.to }).end();
          return;
        case "hang":
          return; // never answers; the socket stays open
        case "huge": {
          res.writeHead(b.status, { "content-type": "application/octet-stream", "content-length": String(b.bytes) });
          const block = Buffer.alloc(64 * 1024, 0x61);
          let left = b.bytes;
          const pump = () => {
            while (left > 0) {
              const n = Math.min(left, block.length);
              left -= n;
              sent.set(path, (sent.get(path) ?? 0) + n);
              if (!res.write(n === block.length ? block : block.subarray(0, n))) return void res.once("drain", pump);
            }
            res.end();
          };
          res.on("close", () => (left = 0));
          pump();
          return;
        }
      }
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    unique(path = "/hook") {
      const seen = new Set<string>();
      return received.filter((r) => r.path === path && r.id && !seen.has(r.id) && (r.verified !== false) && seen.add(r.id));
    },
    on: (path) => received.filter((r) => r.path === path),
    behave: (path, b) => void behaviors.set(path, b),
    verifyWith: (path, keys) => void secrets.set(path, keys),
    bytesSent: (path) => sent.get(path) ?? 0,
    reset() {
      received.length = 0;
      behaviors.clear();
      secrets.clear();
      sent.clear();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
