import { connect, createServer, type Server, type Socket } from "node:net";
import { TLSSocket } from "node:tls";

/**
 * A TCP proxy in front of a server (PostgreSQL in the outage tests) that a test can break the
 * ways a network or a server breaks:
 *
 * - `refuse()`: stop listening — new connections get ECONNREFUSED; live ones keep flowing.
 * - `blackhole()`: new connections are accepted but never reach the server, and every live
 *   connection stops forwarding in both directions (bytes are dropped, nothing is closed —
 *   not even when the server closes its side: no FIN crosses a blackhole either).
 * - `blackholeLive()`: only the live connections go silent; new ones flow (the old path of a
 *   failover that moved the address, or a middlebox that lost its state).
 * - `reset()`: destroy every live connection (a crash, a failover, a middlebox dropping state).
 * - `restore()`: listen and forward again; connections that were blackholed are destroyed (the
 *   bytes they dropped leave their protocol streams unusable, as after a real partition).
 *
 * `cut()` is `refuse()` + `reset()`: the server went away.
 *
 * With `{ tls: true }` the proxy also terminates TLS the way PostgreSQL negotiates it (an
 * SSLRequest answered 'S', then a TLS handshake with a self-signed certificate for 127.0.0.1),
 * for clients with sslmode=require; it forwards plaintext to the server.
 */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its host replaced by the proxy's. */
  urlFor(url: string): string;
  refuse(): Promise<void>;
  blackhole(): void;
  blackholeLive(): void;
  reset(): void;
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Live client connections. */
  readonly connections: number;
  /** TLS sessions established (tls proxies). */
  readonly tlsSessions: number;
  close(): Promise<void>;
}

interface Pair {
  /** The client side the proxy reads and writes (the TLS socket on a tls proxy). */
  client: Socket;
  /** The accepted TCP socket. */
  raw: Socket;
  upstream: Socket | null;
  blackholed: boolean;
}

export async function startTcpProxy(targetHost: string, targetPort: number, opts: { tls?: boolean } = {}): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let mode: "open" | "blackhole" = "open";
  let listening = false;
  let port = 0;
  let tlsSessions = 0;

  const destroyPair = (p: Pair) => {
    pairs.delete(p);
    p.client.destroy();
    p.raw.destroy();
    p.upstream?.destroy();
  };

  const onConnection = (raw: Socket) => {
    if (!opts.tls || mode === "blackhole") return forward(raw, raw);
    raw.once("data", () => {
      // The SSLRequest: accept, then the TLS handshake on the same connection.
      raw.write(Buffer.from("S"));
      const secured = new TLSSocket(raw, { isServer: true, key: TEST_KEY, cert: TEST_CERT } as any);
      secured.once("secure", () => tlsSessions++);
      forward(secured, raw);
    });
    raw.on("error", () => raw.destroy());
  };

  const forward = (client: Socket, raw: Socket) => {
    const p: Pair = { client, raw, upstream: null, blackholed: mode === "blackhole" };
    pairs.add(p);
    client.on("error", () => destroyPair(p));
    client.on("close", () => destroyPair(p));
    raw.on("close", () => destroyPair(p));
    if (p.blackholed) {
      client.on("data", () => {}); // accepted, read and dropped: no byte ever reaches the server
      return;
    }
    const upstream = connect(targetPort, targetHost);
    p.upstream = upstream;
    const upstreamGone = () => {
      if (p.blackholed) upstream.destroy(); // the client side never learns
      else destroyPair(p);
    };
    upstream.on("error", upstreamGone);
    upstream.on("close", upstreamGone);
    client.on("data", (d) => {
      if (!p.blackholed) upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (!p.blackholed) client.write(d);
    });
  };

  let server: Server = createServer(onConnection);
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer(onConnection);
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        port = (server.address() as { port: number }).port;
        listening = true;
        resolve();
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      // close() stops accepting at once; its callback would wait for the live connections.
      server.close();
      resolve();
    });

  await listen();

  const proxy: TcpProxy = {
    get port() {
      return port;
    },
    urlFor(url: string) {
      const u = new URL(url);
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    },
    async refuse() {
      await stopListening();
    },
    blackhole() {
      mode = "blackhole";
      for (const p of pairs) p.blackholed = true;
    },
    blackholeLive() {
      for (const p of pairs) p.blackholed = true;
    },
    reset() {
      for (const p of [...pairs]) destroyPair(p);
    },
    async cut() {
      await proxy.refuse();
      proxy.reset();
    },
    async restore() {
      mode = "open";
      for (const p of [...pairs]) if (p.blackholed) destroyPair(p);
      if (!listening) await listen();
    },
    get connections() {
      return pairs.size;
    },
    get tlsSessions() {
      return tlsSessions;
    },
    async close() {
      proxy.reset();
      await stopListening();
    },
  };
  return proxy;
}

/** A self-signed test certificate for 127.0.0.1 / localhost (valid until 2125), tests only. */
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtjWC5+494NEVZHh/
IwAhfPQD/7U76xlAVL6PGfSGshmhRANCAASkah9lEx/0m4HHwwW3G/RcHHG9yUhl
i+QycGkqVud6JzrrULG1sNoR5yfbybwEpfdKQug285BEm7tB9xGsRZdp
-----END PRIVATE KEY-----
`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmjCCAUGgAwIBAgIUUoPDbqKGZYg5Ad+WgvcY6irNpMMwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMzEwMTg1OFoYDzIxMjYxMDMw
MTAxODU4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASkah9lEx/0m4HHwwW3G/RcHHG9yUhli+QycGkqVud6JzrrULG1sNoR
5yfbybwEpfdKQug285BEm7tB9xGsRZdpo28wbTAdBgNVHQ4EFgQUjjPP/dcBmWeY
KhpWUqz2LAHxhqgwHwYDVR0jBBgwFoAUjjPP/dcBmWeYKhpWUqz2LAHxhqgwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDRwAwRAIgUiJe8/0KVyahzPQOIhQ+Fy+BV5sb7PDShM+eb0nL9lYCIExh
6L2/HbRhzP6ma+7tOK+I+zOf95SG3cqc6ZOMlerZ
-----END CERTIFICATE-----
`;
