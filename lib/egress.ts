/**
 * Outgoing requests to hosts an org named (a connection's endpoint, a key's token_uri), under the
 * rule of lib/hosts.ts: the named hosts are resolved and checked once when opened, every socket
 * connects to an address that was checked (no second DNS query to rebind), and a socket to any
 * other host (an SDK's default endpoint, a redirect) is checked the same way before it connects.
 * The TLS server name and the Host header stay the name.
 */
import http from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";
import { isIP } from "node:net";
import { bareHost, checkedAddresses, checkedLookup, isPublicAddress, NonPublicHostError, type HostAddress } from "./hosts.ts";

export interface Egress {
  /** Agents for an SDK's own HTTP client (AWS NodeHttpHandler, Azure pipeline). */
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
  agentFor(url: string | URL): http.Agent;
  /** A fetch over the agents (whole body buffered), for clients that take a fetch implementation. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  close(): void;
}

type Callback = (err: Error | null, stream: Duplex) => void;

/** A connection an org's host does not complete in this long fails as a refused one does (a filtered port tells nothing). */
export const EGRESS_CONNECT_TIMEOUT_MS = 10_000;
/** A request through `Egress.fetch` given no signal of its own is abandoned after this long. */
const EGRESS_REQUEST_TIMEOUT_MS = 120_000;

/** Ends a socket that has not connected within EGRESS_CONNECT_TIMEOUT_MS. */
function boundConnect<S extends Duplex | undefined>(socket: S): S {
  if (!socket) return socket;
  const timer = setTimeout(() => socket.destroy(Object.assign(new Error("connect timed out"), { code: "ETIMEDOUT" })), EGRESS_CONNECT_TIMEOUT_MS);
  (timer as any).unref?.();
  const done = () => clearTimeout(timer);
  socket.once("connect", done);
  socket.once("close", done);
  return socket;
}

/**
 * Resolves and checks the hosts of `urls` (throws NonPublicHostError, or the resolver's error)
 * and returns agents that connect only to checked addresses.
 */
export async function openEgress(urls: (string | null | undefined)[], allowPrivate: boolean): Promise<Egress> {
  const pinned = new Map<string, HostAddress[]>();
  for (const url of urls) {
    if (!url) continue;
    const host = bareHost(new URL(url).hostname);
    if (!pinned.has(host)) pinned.set(host, await checkedAddresses(host, allowPrivate));
  }
  const lookup = checkedLookup(allowPrivate, pinned);
  // An address is connected to without a lookup: check it here.
  const refused = (options: http.ClientRequestArgs): Error | null => {
    const host = String(options.host ?? options.hostname ?? "").replace(/^\[|\]$/g, "");
    return isIP(host) && !allowPrivate && !isPublicAddress(host) ? new NonPublicHostError() : null;
  };
  class CheckedHttpAgent extends http.Agent {
    override createConnection(options: http.ClientRequestArgs, callback?: Callback) {
      const err = refused(options);
      if (err) return void process.nextTick(() => callback?.(err, undefined as never));
      return boundConnect(super.createConnection(options, callback) as Duplex | undefined);
    }
  }
  class CheckedHttpsAgent extends https.Agent {
    override createConnection(options: http.ClientRequestArgs, callback?: Callback) {
      const err = refused(options);
      if (err) return void process.nextTick(() => callback?.(err, undefined as never));
      return boundConnect(super.createConnection(options, callback) as Duplex | undefined);
    }
  }
  const httpAgent = new CheckedHttpAgent({ keepAlive: true, lookup });
  const httpsAgent = new CheckedHttpsAgent({ keepAlive: true, lookup });
  const agentFor = (url: string | URL) => (new URL(url).protocol === "https:" ? httpsAgent : httpAgent);
  return {
    httpAgent,
    httpsAgent,
    agentFor,
    fetch: (input, init) => agentFetch(agentFor, input, init),
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/** fetch over node:http(s) with the given agents; redirects are not followed (a 3xx is returned as it is). */
async function agentFetch(agentFor: (url: URL) => http.Agent, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  const body = await bodyBytes(init.body);
  if (body && !headers.has("content-length")) headers.set("content-length", String(body.length));
  return new Promise<Response>((resolve, reject) => {
    const request = (url.protocol === "https:" ? https : http).request(
      url,
      { method: init.method ?? "GET", headers: Object.fromEntries(headers), agent: agentFor(url), signal: init.signal ?? AbortSignal.timeout(EGRESS_REQUEST_TIMEOUT_MS) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const out = new Headers();
          for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) out.append(name, v);
          const status = res.statusCode ?? 502;
          const empty = status === 204 || status === 205 || status === 304;
          resolve(new Response(empty ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage, headers: out }));
        });
      },
    );
    request.on("error", reject);
    request.end(body ?? undefined);
  });
}

async function bodyBytes(body: RequestInit["body"]): Promise<Buffer | null> {
  if (body === undefined || body === null) return null;
  if (typeof body === "string" || body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return Buffer.from(await new Response(body as BodyInit).arrayBuffer());
}
