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
 * - `blackholeAfterNext(pattern, answer)`: the next chunk a client sends that matches `pattern`
 *   (read as latin1) reaches the server, and so does everything until the server sends a chunk
 *   matching `answer`; the next chunk that client sends after that reaches the server too, and
 *   right after it the proxy goes `blackhole()` — e.g. a transaction's last statement, then its
 *   COMMIT, which commits while its answer is lost.
 * - `slow(ms)`: every chunk, both ways, is forwarded `ms` later (order kept): a loaded server or
 *   a long path — slow, not down. `slow(0)` ends it.
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
  slow(ms: number): void;
  blackholeAfterNext(pattern: RegExp, answer: RegExp): void;
  /** performance.now() when the last `blackholeAfterNext` trap went off (0: not yet). */
  readonly trappedAt: number;
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
  /** The armed trap: waiting for the server's answer, then for the client's next chunk. */
  trapState: "none" | "answer" | "next";
}

export async function startTcpProxy(targetHost: string, targetPort: number, opts: { tls?: boolean } = {}): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let mode: "open" | "blackhole" = "open";
  let listening = false;
  let port = 0;
  let tlsSessions = 0;
  let latencyMs = 0;
  let trap: { pattern: RegExp; answer: RegExp } | null = null;
  /** The armed trap's answer, once its client chunk went by. */
  let awaitedAnswer: RegExp | null = null;
  let trappedAt = 0;

  /** Writes `d` to `to` after the current latency, never ahead of an earlier chunk of the same direction. */
  const sender = (to: () => Socket | null, alive: () => boolean) => {
    let lastAt = 0;
    return (d: Buffer) => {
      if (!alive()) return;
      const now = performance.now();
      if (latencyMs === 0 && lastAt <= now) return void to()?.write(d);
      const at = Math.max(now + latencyMs, lastAt);
      lastAt = at;
      setTimeout(() => {
        if (alive()) to()?.write(d);
      }, at - now);
    };
  };

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
    const p: Pair = { client, raw, upstream: null, blackholed: mode === "blackhole", trapState: "none" };
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
    const alive = () => !p.blackholed && pairs.has(p);
    const toServer = sender(() => upstream, alive);
    client.on("data", (d: Buffer) => {
      toServer(d);
      if (!alive()) return;
      if (p.trapState === "next") {
        p.trapState = "none";
        trappedAt = performance.now();
        proxy.blackhole();
      } else if (p.trapState === "none" && trap && trap.pattern.test(d.toString("latin1"))) {
        p.trapState = "answer";
        awaitedAnswer = trap.answer;
        trap = null;
      }
    });
    const toClient = sender(() => client, alive);
    upstream.on("data", (d: Buffer) => {
      toClient(d);
      if (p.trapState === "answer" && awaitedAnswer?.test(d.toString("latin1"))) p.trapState = "next";
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
    slow(ms: number) {
      latencyMs = ms;
    },
    blackholeAfterNext(pattern: RegExp, answer: RegExp) {
      trap = { pattern, answer };
      trappedAt = 0;
    },
    get trappedAt() {
      return trappedAt;
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
