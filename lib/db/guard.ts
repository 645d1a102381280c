import net from "node:net";
import tls from "node:tls";
import { EventEmitter } from "node:events";
import type { Logger } from "../log.ts";
import { ConnectionLostError, DatabaseUnreachableError, isConnectionLost, isDatabaseUnavailable } from "./errors.ts";

/**
 * The connection guard of the postgres.js pool: a circuit breaker with a health probe, built on
 * the pool's socket factory (postgres.js `socket` option), so it sees every byte each pool
 * connection sends and receives without touching the driver.
 *
 * Why: postgres.js alone waits on a dead database — a statement on a socket that went silent
 * (network blackhole) has no client-side timeout at all, and its reconnect backoff grows to
 * 20 s. The guard instead:
 *
 * - follows the wire protocol of each connection just enough to know whether a reply is due
 *   (Sync/Query sent, ReadyForQuery not yet back; Flush sent, no row description, suspension or
 *   completion yet; a COPY FROM STDIN the client is still feeding is not "due");
 * - when a reply has been due with no byte received for `stallMs`, when a connection errors,
 *   or when one closes while a reply was due, runs a probe: a query on a separate connection,
 *   bounded by `probeTimeoutMs`;
 * - a probe that fails as "unreachable" (refused, reset, timed out…) while not one byte arrived
 *   from the server on any connection since it started opens the circuit: every pool socket is
 *   destroyed (their statements fail with DATABASE_UNREACHABLE → 503) and new connections fail
 *   at once, without touching the network, while probes run every `probeIntervalMs`; the
 *   first probe that succeeds closes the circuit;
 * - a probe that succeeds also reports which stalled connections' server sessions still exist
 *   (pg_stat_activity by the pid of the BackendKeyData message): one the server no longer knows
 *   is dead (failover, lost NAT state) and is destroyed with CONNECTION_LOST. The check is used
 *   only when the probe connection's own pid matches pg_backend_pid(), i.e. not behind a pooler
 *   such as PgBouncer, whose pids are not the server's.
 *
 * A slow statement (a long report, a lock wait, a cursor stream, a COPY) is never cut by the
 * guard: the probe finds the server answering and the session alive, and the statement goes on.
 * Server-side `statement_timeout` bounds those (lib/db/postgres.ts).
 *
 * With TLS (sslmode=…), the guard negotiates TLS itself and hands postgres.js the secured
 * socket (postgres.js gets `ssl: false`), so it follows the plaintext protocol there too.
 */

export interface GuardSettings {
  /** TCP connect + TLS negotiation of a connection the guard secures itself. */
  connectTimeoutMs: number;
  /** TLS the guard negotiates (postgres.js then gets `ssl: false`); null: plaintext. */
  tls: { mode: string; direct: boolean } | null;
  /** A reply due with no byte received this long → probe. */
  stallMs: number;
  /** A probe that has not answered after this long has failed. */
  probeTimeoutMs: number;
  /** While the circuit is open: pause between the end of a probe and the next. */
  probeIntervalMs: number;
}

/** What the guard needs to run a probe: a query on a connection made with `socket`. */
export interface ProbeClient {
  query(text: string): Promise<Record<string, unknown>[]>;
  /** Ends the client now (its sockets are destroyed). */
  destroy(): Promise<void>;
}

type SocketFactory = (options: any) => net.Socket | EventEmitter | Promise<net.Socket | EventEmitter>;

const SCAN_MS = 100;
const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;

/** Follows one connection's protocol stream in both directions (see the module comment). */
class Tap {
  /** Syncs and simple Queries sent whose ReadyForQuery has not come back. */
  pending = 0;
  /** A Flush sent (extended protocol without Sync: describe, cursor fetch) not answered yet. */
  flushPending = false;
  /** The server is waiting for COPY data from us. */
  copyIn = false;
  /** Sent Terminate: the close that follows is ours. */
  terminating = false;
  /** Not followed (a cancel request, TLS negotiated by someone else, a stream we could not frame). */
  opaque = false;
  /** Server process id from BackendKeyData. */
  pid = 0;
  /** Last time a reply became due or a byte arrived. */
  lastProgress = 0;
  closed = false;
  error: unknown = null;
  private startupSent = false;
  private sslAnswerDue = false;
  private writeSkip = 0;
  // Reading side: the current server message.
  private head = Buffer.alloc(5);
  private headLen = 0;
  private type = 0;
  private rest = 0;
  private body: Buffer[] = [];

  constructor(readonly socket: net.Socket, readonly kind: "pool" | "probe") {}

  get waiting(): boolean {
    return !this.opaque && !this.closed && !this.copyIn && (this.pending > 0 || this.flushPending);
  }

  onWrite(chunk: unknown, now: number) {
    if (this.opaque) return;
    const buf = chunk instanceof Uint8Array ? chunk : null;
    if (!buf) return;
    const wasWaiting = this.waiting;
    const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    let i = 0;
    while (i < buf.length) {
      if (this.writeSkip > 0) {
        const n = Math.min(this.writeSkip, buf.length - i);
        i += n;
        this.writeSkip -= n;
        continue;
      }
      if (!this.startupSent) {
        if (buf.length - i < 8) return void (this.opaque = true);
        const len = view.readUInt32BE(i);
        const code = view.readUInt32BE(i + 4);
        if (code === CANCEL_REQUEST) return void (this.opaque = true);
        if (code === SSL_REQUEST) this.sslAnswerDue = true;
        else {
          this.startupSent = true;
          this.pending++; // the startup ends with ReadyForQuery
        }
        this.writeSkip = len;
        continue;
      }
      if (buf.length - i < 5) return void (this.opaque = true);
      const t = view[i];
      const len = view.readUInt32BE(i + 1);
      if (t === 0x53 /* S Sync */ || t === 0x51 /* Q Query */) this.pending++;
      else if (t === 0x48 /* H Flush */) this.flushPending = true;
      else if (t === 0x63 /* c CopyDone */ || t === 0x66 /* f CopyFail */) this.copyIn = false;
      else if (t === 0x58 /* X Terminate */) this.terminating = true;
      this.writeSkip = 1 + len;
    }
    if (!wasWaiting && this.waiting) this.lastProgress = now;
  }

  onData(buf: Buffer, now: number) {
    this.lastProgress = now;
    if (this.opaque) return;
    let i = 0;
    if (this.sslAnswerDue) {
      this.sslAnswerDue = false;
      if (buf[0] === 0x53 /* S: TLS follows, the bytes are no longer readable here */) return void (this.opaque = true);
      i = 1;
    }
    while (i < buf.length) {
      if (this.headLen < 5) {
        const n = Math.min(5 - this.headLen, buf.length - i);
        buf.copy(this.head, this.headLen, i, i + n);
        this.headLen += n;
        i += n;
        if (this.headLen < 5) return;
        this.type = this.head[0];
        this.rest = this.head.readUInt32BE(1) - 4;
        this.body = [];
        if (this.rest < 0) return void (this.opaque = true);
      }
      const n = Math.min(this.rest, buf.length - i);
      if (this.type === 0x4b /* K */ && n > 0) this.body.push(buf.subarray(i, i + n));
      i += n;
      this.rest -= n;
      if (this.rest === 0) {
        this.message(this.type);
        this.headLen = 0;
      }
    }
  }

  private message(t: number) {
    switch (t) {
      case 0x5a: // Z ReadyForQuery
        this.pending = Math.max(0, this.pending - 1);
        this.flushPending = false;
        this.copyIn = false;
        break;
      case 0x73: // s PortalSuspended
      case 0x43: // C CommandComplete
      case 0x54: // T RowDescription
      case 0x6e: // n NoData
      case 0x45: // E ErrorResponse
      case 0x49: // I EmptyQueryResponse
        this.flushPending = false;
        break;
      case 0x47: // G CopyInResponse: now the server waits for us
        this.copyIn = true;
        break;
      case 0x4b: {
        // K BackendKeyData: process id, secret key
        const b = Buffer.concat(this.body);
        if (b.length >= 4) this.pid = b.readInt32BE(0);
        break;
      }
    }
  }
}

/**
 * A socket that fails at once: what a new pool connection gets while the circuit is open. It
 * fails after postgres.js has flushed its first message into it (postgres.js writes the startup
 * message on a setImmediate; a socket closed before that leaves the message queued in the
 * connection object, to be sent ahead of the next connection's own).
 */
class DeadSocket extends EventEmitter {
  readyState = "opening";
  destroyed = false;
  private failing = false;
  constructor(private readonly err: Error) {
    super();
    setTimeout(() => this.fail(), 20);
  }
  private fail() {
    if (this.failing) return;
    this.failing = true;
    setImmediate(() => {
      this.destroyed = true;
      this.readyState = "closed";
      this.emit("error", this.err);
      this.emit("close", true);
    });
  }
  write() {
    this.fail();
    return true;
  }
  end() {
    this.fail();
    return this;
  }
  destroy() {
    this.fail();
    return this;
  }
  setKeepAlive() {
    return this;
  }
  setNoDelay() {
    return this;
  }
}

/** Destroys a pool socket after any write postgres.js has queued for it (see DeadSocket). */
function kill(socket: net.Socket, err: Error) {
  setImmediate(() => socket.destroy(err));
}

export type GuardState = "up" | "down";

export class ConnectionGuard {
  state: GuardState = "up";
  private taps = new Set<Tap>();
  private scanTimer: ReturnType<typeof setInterval> | null = null;
  private probeTimer: ReturnType<typeof setTimeout> | null = null;
  private probing: Promise<void> | null = null;
  private lastProbeStart = 0;
  private lastByteAt = 0;
  private downSince = 0;
  private hostIndex = 0;
  /** The probe connection kept between probes (a query on it costs no new session). */
  private probe_: Probe | null = null;
  /** Every probe client not yet destroyed (a timed-out probe destroys them all). */
  private probes = new Set<Probe>();
  private closed = false;

  constructor(
    private readonly settings: GuardSettings,
    private readonly makeProbeClient: (socket: SocketFactory) => ProbeClient,
    private readonly log: Logger,
  ) {}

  /** The postgres.js `socket` option of the pool. */
  readonly poolSocket: SocketFactory = (options) => {
    if (this.state === "down" && !this.closed) return new DeadSocket(new DatabaseUnreachableError("the database is unreachable (failing fast until a probe succeeds)"));
    return this.open(options, "pool");
  };

  /**
   * Whether a pool connection has a reply due ("busy"), none has ("idle"), or a connection's
   * protocol could not be followed ("unknown").
   */
  busy(): "busy" | "idle" | "unknown" {
    let unknown = false;
    for (const t of this.taps) {
      if (t.kind !== "pool" || t.closed || t.socket.destroyed) continue;
      if (t.waiting) return "busy";
      if (t.opaque) unknown = true;
    }
    return unknown ? "unknown" : "idle";
  }

  async close() {
    this.closed = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.scanTimer = this.probeTimer = null;
    this.probe_ = null;
    await Promise.all([...this.probes].map((p) => this.dropProbe(p)));
  }

  private open(options: any, kind: "pool" | "probe", onTap?: (t: Tap) => void): net.Socket | EventEmitter | Promise<net.Socket | EventEmitter> {
    let socket: net.Socket;
    let host: string | undefined;
    if (options.path) socket = net.connect(options.path);
    else {
      const hosts: string[] = options.host;
      const ports: number[] = options.port;
      const i = this.hostIndex++ % hosts.length;
      host = hosts[i];
      socket = net.connect(ports[i] ?? ports[0], host);
    }
    if (!this.settings.tls) return this.track(socket, kind, onTap);
    return this.secure(socket, host, kind, onTap);
  }

  /**
   * TLS, negotiated here rather than by postgres.js (which is given `ssl: false`), so that the
   * guard sees the plaintext protocol of the connection. The same negotiation as postgres.js:
   * SSLRequest and 'S' (or TLS at once with sslnegotiation=direct), certificate checks off for
   * sslmode require/allow/prefer, a plaintext fallback only for prefer. Bounded by the connect
   * timeout; a failure becomes a socket that fails (a rejected factory would leak the pool slot).
   */
  private secure(raw: net.Socket, host: string | undefined, kind: "pool" | "probe", onTap?: (t: Tap) => void): Promise<net.Socket | EventEmitter> {
    const tlsSettings = this.settings.tls!;
    return new Promise((resolve) => {
      let settled = false;
      let secured: tls.TLSSocket | null = null;
      const timer = setTimeout(
        () => fail(Object.assign(new Error(`TLS negotiation did not finish within ${this.settings.connectTimeoutMs} ms`), { code: "CONNECT_TIMEOUT" })),
        this.settings.connectTimeoutMs,
      );
      const fail = (e: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        secured?.destroy();
        raw.destroy();
        const err = e instanceof Error ? e : new Error(String(e));
        if (kind === "pool" && this.state === "up" && !this.closed && isDatabaseUnavailable(err)) this.suspect(`TLS connection failed (${(err as any).code ?? err.message})`);
        resolve(new DeadSocket(err));
      };
      const done = (s: net.Socket) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        raw.removeListener("error", fail);
        raw.removeListener("close", closedEarly);
        secured?.removeListener("error", fail);
        resolve(this.track(s, kind, onTap));
      };
      const closedEarly = () => fail(Object.assign(new Error("the connection closed during TLS negotiation"), { code: "ECONNRESET" }));
      raw.on("error", fail);
      raw.on("close", closedEarly);
      const upgrade = () => {
        const options: tls.ConnectionOptions = { socket: raw, servername: host && !net.isIP(host) ? host : undefined };
        if (tlsSettings.direct) options.ALPNProtocols = ["postgresql"];
        if (tlsSettings.mode === "require" || tlsSettings.mode === "allow" || tlsSettings.mode === "prefer") options.rejectUnauthorized = false;
        secured = tls.connect(options);
        secured.on("error", fail);
        secured.once("secureConnect", () => done(secured!));
      };
      if (tlsSettings.direct) {
        raw.once("connect", upgrade);
        return;
      }
      raw.once("data", (b: Buffer) => {
        if (b[0] === 0x53 /* S */) return upgrade();
        if (tlsSettings.mode === "prefer") return done(raw);
        fail(new Error("The server does not support SSL connections"));
      });
      raw.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])); // SSLRequest
    });
  }

  /** Follows a connection's protocol from here on (see Tap). */
  private track(socket: net.Socket, kind: "pool" | "probe", onTap?: (t: Tap) => void): net.Socket {
    const tap = new Tap(socket, kind);
    onTap?.(tap);
    this.taps.add(tap);
    const write = socket.write;
    (socket as any).write = (chunk: unknown, ...rest: unknown[]) => {
      tap.onWrite(chunk, performance.now());
      return (write as any).call(socket, chunk, ...rest);
    };
    // A failed connection is reported closed right after its error. postgres.js fails the
    // statements sent on a connection at its socket's 'error', but takes the connection out of
    // service only at 'close', which Bun emits a little later (timers run in between): a
    // statement it pipelined onto the connection in that gap was never settled, and a request
    // hung for good (seen when a retry after a killed connection landed there). So the 'close'
    // follows the 'error' at once (after postgres.js has failed what was sent, with the error's
    // own code), reports no error so postgres.js fails anything still pending with
    // CONNECTION_CLOSED (a read is retried once, else 503), and is reported only once.
    const emit = socket.emit;
    let closeReported = false;
    (socket as any).emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
      if (event !== "close") return emit.call(this, event, ...args);
      if (closeReported) return false;
      closeReported = true;
      const r = emit.call(this, "close", false);
      // postgres.js drops every listener at close; an error the socket still emits must not throw.
      socket.on("error", () => {});
      return r;
    };
    socket.on("data", (d: Buffer) => {
      const now = performance.now();
      this.lastByteAt = now;
      tap.onData(d, now);
    });
    socket.on("error", (e) => {
      tap.error = e;
      queueMicrotask(() => socket.emit("close", false));
    });
    socket.on("close", () => {
      const dueReply = tap.waiting && !tap.terminating;
      tap.closed = true;
      this.taps.delete(tap);
      if (kind === "pool" && !this.closed && this.state === "up" && (tap.error || dueReply)) {
        this.suspect(tap.error ? `connection error (${(tap.error as any)?.code ?? "unknown"})` : "connection closed with a reply due");
      }
    });
    this.startScan();
    return socket;
  }

  private startScan() {
    if (this.scanTimer || this.closed) return;
    this.scanTimer = setInterval(() => this.scan(), SCAN_MS);
    (this.scanTimer as any).unref?.();
  }

  private scan() {
    const now = performance.now();
    const stalled: Tap[] = [];
    let pool = 0;
    for (const t of this.taps) {
      if (t.socket.destroyed) {
        this.taps.delete(t);
        continue;
      }
      if (t.kind !== "pool") continue;
      pool++;
      if (t.waiting && now - t.lastProgress >= this.settings.stallMs) stalled.push(t);
    }
    if (stalled.length) {
      if (this.state === "down") for (const t of stalled) kill(t.socket, new DatabaseUnreachableError());
      else if (now - this.lastProbeStart >= this.settings.stallMs) this.probe(`no reply for ${this.settings.stallMs} ms`, stalled);
    }
    if (pool === 0 && this.scanTimer && this.state === "up" && !this.probing) {
      clearInterval(this.scanTimer);
      this.scanTimer = null;
    }
  }

  /** Something looked wrong: check the server (at most one probe at a time). */
  private suspect(reason: string) {
    if (this.state === "up") this.probe(reason, []);
  }

  private probe(reason: string, stalled: Tap[]) {
    if (this.probing || this.closed) return;
    const started = performance.now();
    this.lastProbeStart = started;
    this.probing = this.runProbe(reason, stalled, started).finally(() => {
      this.probing = null;
      if (this.state === "down" && !this.closed) {
        this.probeTimer = setTimeout(() => {
          this.probeTimer = null;
          this.probe("recovery", []);
        }, this.settings.probeIntervalMs);
        (this.probeTimer as any).unref?.();
      }
    });
  }

  private async runProbe(reason: string, stalled: Tap[], started: number) {
    const pids = stalled.map((t) => t.pid).filter((p) => Number.isInteger(p) && p > 0);
    const text = pids.length
      ? `select pg_backend_pid() as me, array(select pid from pg_stat_activity where pid in (${pids.join(",")})) as alive`
      : `select pg_backend_pid() as me`;
    let answer: { rows: Record<string, unknown>[]; probe: Probe };
    try {
      answer = await withTimeout(this.probeQuery(text), this.settings.probeTimeoutMs);
    } catch (e) {
      if (e instanceof ProbeTimeout) {
        this.probe_ = null;
        for (const p of [...this.probes]) void this.dropProbe(p);
      }
      if (this.closed) return;
      const unreachable = e instanceof ProbeTimeout || isDatabaseUnavailable(e);
      const heardFrom = this.lastByteAt >= started;
      if (this.state === "up" && unreachable && !heardFrom) this.openCircuit(reason, e);
      else if (this.state === "up") this.log.debug("database probe failed; the server still answers, the circuit stays closed", { reason, error: describe(e) });
      return;
    }
    if (this.closed) return;
    if (this.state === "down") {
      const downMs = Math.round(performance.now() - this.downSince);
      this.state = "up";
      this.log.info("database reachable again", { down_ms: downMs });
      return;
    }
    // Stalled connections whose server session is gone are dead: fail their statements now.
    const rows = answer.rows;
    const me = Number(rows[0]?.me);
    const direct = answer.probe.tap !== null && answer.probe.tap.pid === me;
    if (direct && pids.length) {
      const alive = new Set(parseIntArray(rows[0]?.alive));
      for (const t of stalled) {
        if (t.pid && !alive.has(t.pid) && t.waiting && t.lastProgress < started) {
          this.log.warn("database connection lost: its server session no longer exists; closing it", { pid: t.pid });
          kill(t.socket, new ConnectionLostError("the database connection was lost (its server session no longer exists)"));
        }
      }
    }
  }

  private newProbe(): Probe {
    const p: Probe = { client: null as unknown as ProbeClient, tap: null };
    p.client = this.makeProbeClient((options) => this.open(options, "probe", (t) => (p.tap = t)));
    this.probes.add(p);
    return p;
  }

  private async dropProbe(p: Probe) {
    this.probes.delete(p);
    if (this.probe_ === p) this.probe_ = null;
    await p.client.destroy().catch(() => {});
  }

  /**
   * Runs the probe statement. On the kept probe connection first; when that one turns out dead
   * (terminated with the pool's) or has not answered within a quarter of the probe timeout (its
   * path may be the one that died), on a fresh connection as well: the question is whether the
   * server answers a new connection now, not whether an old one survived. The first answer wins.
   */
  private probeQuery(text: string): Promise<{ rows: Record<string, unknown>[]; probe: Probe }> {
    return new Promise((resolve, reject) => {
      let pending = 0;
      let done = false;
      let freshStarted = false;
      let timer: ReturnType<typeof setTimeout> | null = null;
      const succeed = (p: Probe, rows: Record<string, unknown>[]) => {
        if (timer) clearTimeout(timer);
        if (done) return;
        done = true;
        if (this.probe_ !== p) {
          const old = this.probe_;
          this.probe_ = p;
          if (old) void this.dropProbe(old);
        }
        resolve({ rows, probe: p });
      };
      const fail = (p: Probe, e: unknown) => {
        void this.dropProbe(p);
        if (--pending === 0 && !done && (freshStarted || !isConnectionLost(e))) {
          if (timer) clearTimeout(timer);
          done = true;
          reject(e);
        }
      };
      const run = (p: Probe) => {
        pending++;
        p.client.query(text).then(
          (rows) => succeed(p, rows),
          (e) => {
            if (!freshStarted && isConnectionLost(e)) startFresh();
            fail(p, e);
          },
        );
      };
      const startFresh = () => {
        if (freshStarted || done || this.closed) return;
        freshStarted = true;
        run(this.newProbe());
      };
      const kept = this.probe_;
      if (!kept) return startFresh();
      run(kept);
      timer = setTimeout(startFresh, Math.max(1, Math.floor(this.settings.probeTimeoutMs / 4)));
    });
  }

  private openCircuit(reason: string, error: unknown) {
    this.state = "down";
    this.downSince = performance.now();
    this.log.warn("database unreachable: failing requests fast until a probe succeeds", {
      reason,
      error: describe(error),
      probe_interval_ms: this.settings.probeIntervalMs,
    });
    for (const t of [...this.taps]) {
      if (t.kind === "pool") kill(t.socket, new DatabaseUnreachableError());
    }
    this.startScan();
  }
}

interface Probe {
  client: ProbeClient;
  /** The tap of the probe connection's socket (its BackendKeyData pid). */
  tap: Tap | null;
}

class ProbeTimeout extends Error {
  readonly code = "PROBE_TIMEOUT";
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function parseIntArray(v: unknown): number[] {
  if (Array.isArray(v)) return v.map(Number);
  if (typeof v === "string") return v.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);
  return [];
}

function describe(e: unknown) {
  const x = e as any;
  return { code: x?.code, message: typeof x?.message === "string" ? x.message : String(e) };
}
