import { errorForLog, type Logger } from "../log.ts";
import { ConnectionLostError, DatabaseUnreachableError, isDatabaseUnavailable, StatementDeadlineError } from "./errors.ts";

/**
 * The health of one PostgreSQL pool: a circuit breaker with a probe, built around the driver and
 * never inside it. It sees only the operations our code hands the driver (a statement, a
 * transaction, a stream) and a probe connection of its own; it never writes to, reads from or
 * ends a socket of the pool. What it can do is answer for an operation (reject the promise our
 * caller awaits) and replace the pool through the driver's own API (`onRetire`).
 *
 * - An operation waiting on the server with no progress for `stallMs` starts a probe (at most one
 *   at a time, at most one per `stallMs`): `select 1` on a kept probe connection and, when that
 *   one is silent or missing after a quarter of `probeTimeoutMs`, on a fresh one.
 * - **Slow is not down.** The database is declared unreachable only when the probe heard not one
 *   byte from the server within `probeTimeoutMs` (plus one turn of the event loop, so a busy
 *   process does not take its own lateness for silence), or when a fresh connection was refused
 *   or failed as unavailable. A server that answers late, or refuses for load, is waited for:
 *   the statement timeout bounds it (`deadlineMs`).
 * - **Down**: every operation in flight is answered `DatabaseUnreachableError` (503), the pool is
 *   replaced (the old one ended by the driver), new operations fail at once (`admit`), and a
 *   fresh-connection probe runs every `probeIntervalMs` until one succeeds.
 * - **Old path dead, server up** (a failover that moved the address, a middlebox that lost its
 *   state): the kept probe connection stayed silent for the whole probe while a fresh one
 *   answered. The pool's connections are as old as the kept one: operations in flight are
 *   answered `ConnectionLostError` (a read is retried once on the new pool) and the pool is
 *   replaced.
 * - **Deadline**: an operation still waiting `deadlineMs` after its last progress (the server's
 *   statement_timeout would have ended it) is answered `StatementDeadlineError` (503) and its
 *   statement is cancelled through the driver.
 */

export interface HealthSettings {
  stallMs: number;
  probeTimeoutMs: number;
  probeIntervalMs: number;
  /** 0: no client-side deadline. */
  deadlineMs: number;
}

/** A probe connection: one postgres.js client of one connection, owned by the health check. */
export interface ProbeConnection {
  query(text: string): Promise<unknown>;
  /** performance.now() of the last byte received from the server on it (0: none yet). */
  lastByteAt(): number;
  end(): Promise<void>;
}

/** What the code running an operation tells the health check about it. */
export interface WatchedOp {
  /** Our own code works on what arrived (a stream's consumer, a transaction's callback): not waiting on the server. */
  busy(): void;
  /** Waiting on the server again. */
  waiting(): void;
  /** Something arrived from the server. */
  progress(): void;
  /** How to cancel the operation's statement at the server when its deadline passes. */
  onDeadline(cancel: () => void): void;
  /** Its own deadline (a transaction's `SET LOCAL statement_timeout`, a stream's); 0: none. */
  setDeadline(ms: number): void;
  /** Answers the caller with `error` now; the driver finishes the operation on its own (a ROLLBACK on a silent connection). */
  giveUp(error: unknown): void;
}

class Op implements WatchedOp {
  waitingSince: number | null;
  cancel: (() => void) | null = null;
  /** Null: the pool's. */
  deadlineMs: number | null = null;
  settled = false;
  constructor(
    readonly generation: number,
    private readonly rejectWith: (e: unknown) => void,
    now: number,
  ) {
    this.waitingSince = now;
  }
  busy() {
    this.waitingSince = null;
  }
  waiting() {
    this.waitingSince = performance.now();
  }
  progress() {
    if (this.waitingSince !== null) this.waitingSince = performance.now();
  }
  onDeadline(cancel: () => void) {
    this.cancel = cancel;
  }
  setDeadline(ms: number) {
    this.deadlineMs = ms;
  }
  giveUp(e: unknown) {
    this.fail(e);
  }
  fail(e: unknown) {
    if (this.settled) return;
    this.settled = true;
    this.rejectWith(e);
  }
}

const SCAN_MS = 100;
/** Lets pending I/O (a probe's answer already in the socket) run before a timer's verdict. */
const ioTurn = () => new Promise<void>((r) => setImmediate(() => setImmediate(r)));

export type HealthState = "up" | "down";

type Verdict = { kind: "up" | "old-path-dead" } | { kind: "unreachable"; error: unknown };

export class DatabaseHealth {
  state: HealthState = "up";
  /** Bumped when the pool is replaced; operations remember theirs. */
  generation = 0;
  private readonly ops = new Set<Op>();
  private scanTimer: ReturnType<typeof setInterval> | null = null;
  private recoveryTimer: ReturnType<typeof setTimeout> | null = null;
  private probing: Promise<void> | null = null;
  private lastProbeAt = -Infinity;
  private kept: ProbeConnection | null = null;
  private downSince = 0;
  private closed = false;

  constructor(
    private readonly settings: HealthSettings,
    private readonly openProbe: () => ProbeConnection,
    private readonly log: Logger,
    /** Replace the pool: new work goes to a new one, the old one is ended by the driver. */
    private readonly onRetire: () => void,
  ) {}

  /** Operations in flight. */
  get inFlight(): number {
    return this.ops.size;
  }

  /** Throws while the database is known down: new work fails at once, without the network. */
  admit(): void {
    if (this.state === "down" || this.closed) throw new DatabaseUnreachableError("the database is unreachable (failing fast until a probe succeeds)");
  }

  /**
   * Runs `start` (one driver operation) under watch: its promise is the driver's, unless the
   * database is found down or the connection's path dead first, or its deadline passes.
   */
  watch<T>(start: (op: WatchedOp) => PromiseLike<T>): Promise<T> {
    try {
      this.admit();
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise<T>((resolve, reject) => {
      const op = new Op(this.generation, reject, performance.now());
      this.ops.add(op);
      this.startScan();
      let running: PromiseLike<T>;
      try {
        running = start(op);
      } catch (e) {
        this.ops.delete(op);
        op.fail(e);
        return;
      }
      Promise.resolve(running).then(
        (v) => {
          this.ops.delete(op);
          if (op.settled) return;
          op.settled = true;
          resolve(v);
        },
        (e) => {
          this.ops.delete(op);
          if (!op.settled) this.noticeFailure(e);
          op.fail(e);
        },
      );
    });
  }

  /** An operation failed as "unavailable" (refused, reset, connect timeout…): check the server. */
  private noticeFailure(e: unknown) {
    if (this.state === "up" && !this.closed && isDatabaseUnavailable(e)) this.probe(`statement failed (${codeOf(e)})`);
  }

  async close() {
    this.closed = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    if (this.recoveryTimer) clearTimeout(this.recoveryTimer);
    this.scanTimer = this.recoveryTimer = null;
    const kept = this.kept;
    this.kept = null;
    await kept?.end().catch(() => {});
  }

  private startScan() {
    if (this.scanTimer || this.closed) return;
    this.scanTimer = setInterval(() => this.scan(), Math.min(SCAN_MS, Math.max(10, Math.floor(this.settings.stallMs / 4))));
    (this.scanTimer as any).unref?.();
  }

  private scan() {
    const now = performance.now();
    let stalled = false;
    for (const op of this.ops) {
      if (op.settled) {
        this.ops.delete(op);
        continue;
      }
      if (op.waitingSince === null) continue;
      const waited = now - op.waitingSince;
      if (waited >= this.settings.stallMs) stalled = true;
      const deadlineMs = op.deadlineMs ?? this.settings.deadlineMs;
      if (deadlineMs > 0 && waited >= deadlineMs && this.state === "up") {
        this.log.warn("database statement abandoned: no answer within the statement timeout", { waited_ms: Math.round(waited) });
        const cancel = op.cancel;
        op.fail(new StatementDeadlineError(deadlineMs));
        this.ops.delete(op);
        try {
          (cancel?.() as any)?.catch?.(() => {});
        } catch {}
      }
    }
    if (stalled && this.state === "up" && now - this.lastProbeAt >= this.settings.stallMs) this.probe(`no answer for ${this.settings.stallMs} ms`);
    if (this.ops.size === 0 && !this.probing && this.scanTimer) {
      clearInterval(this.scanTimer);
      this.scanTimer = null;
    }
  }

  private probe(reason: string) {
    if (this.probing || this.closed || this.state === "down") return;
    this.lastProbeAt = performance.now();
    this.probing = this.runProbe(reason)
      .catch((e) => this.log.error("database probe failed unexpectedly", { error: errorForLog(e) }))
      .finally(() => {
        this.probing = null;
      });
  }

  private async runProbe(reason: string) {
    const started = performance.now();
    const verdict = await this.ask(started);
    if (this.closed || this.state === "down") return;
    if (verdict.kind === "unreachable") return this.goDown(reason, verdict.error);
    if (verdict.kind === "old-path-dead") {
      this.log.warn("database connections lost: the server answers new connections but not the old ones; replacing the pool", { reason });
      this.retire(new ConnectionLostError("the database connection was lost (the server answers on new connections only)"));
    }
  }

  /**
   * The probe's verdict. Asks the kept connection first; a fresh one too when the kept one is
   * missing, fails, or is silent after a quarter of the probe timeout.
   */
  private ask(started: number): Promise<Verdict> {
    const { probeTimeoutMs } = this.settings;
    const kept = this.kept;
    let keptAnswered = false;
    let keptFailed: unknown = null;
    let fresh: ProbeConnection | null = null;
    let freshAnswered = false;
    let freshFailed: unknown = null;
    let done = false;
    const end = (c: ProbeConnection | null) => void c?.end().catch(() => {});
    return new Promise<Verdict>((resolve) => {
      const timers: ReturnType<typeof setTimeout>[] = [];
      /** The verdict; the connection that answered is kept, the others ended. */
      const finish = (v: Verdict) => {
        if (done) return;
        done = true;
        for (const t of timers) clearTimeout(t);
        const keepKept = kept !== null && keptFailed === null && v.kind === "up" && (keptAnswered || !freshAnswered);
        if (keepKept) end(fresh);
        else {
          if (this.kept === kept) this.kept = null;
          end(kept);
          if (freshAnswered) this.kept = fresh;
          else end(fresh);
        }
        resolve(v);
      };
      const startFresh = () => {
        if (fresh || done || this.closed) return;
        const f = this.openProbe();
        fresh = f;
        f.query("select 1").then(
          () => {
            freshAnswered = true;
            if (done) {
              // Answered after the verdict: keep it if nothing else is kept.
              if (this.kept === null) this.kept = f;
              else if (this.kept !== f) end(f);
              return;
            }
            // A kept connection still silent when the fresh one answers: wait out the probe
            // timeout before calling its path dead (a loaded server may just be late).
            if (!kept || keptFailed !== null) finish({ kind: "up" });
          },
          (e) => {
            freshFailed = e;
            end(f);
            if (done || !(kept === null || keptFailed !== null)) return;
            finish(isDatabaseUnavailable(e) ? { kind: "unreachable", error: e } : { kind: "up" });
          },
        );
      };
      if (kept) {
        kept.query("select 1").then(
          () => {
            keptAnswered = true;
            finish({ kind: "up" });
          },
          (e) => {
            keptFailed = e;
            if (done) return;
            if (freshAnswered) return finish({ kind: "up" });
            if (freshFailed !== null) return finish(isDatabaseUnavailable(freshFailed) ? { kind: "unreachable", error: freshFailed } : { kind: "up" });
            // The server answered with an error of its own: it is there.
            if (!isDatabaseUnavailable(e)) return finish({ kind: "up" });
            startFresh();
          },
        );
        timers.push(setTimeout(startFresh, Math.max(1, Math.floor(probeTimeoutMs / 4))));
      } else startFresh();
      timers.push(
        setTimeout(async () => {
          await ioTurn();
          if (done) return;
          const keptHeard = (kept?.lastByteAt() ?? 0) >= started;
          const freshHeard = ((fresh as ProbeConnection | null)?.lastByteAt() ?? 0) >= started;
          if (freshAnswered && kept && keptFailed === null && !keptHeard) return finish({ kind: "old-path-dead" });
          if (freshAnswered || keptHeard || freshHeard) return finish({ kind: "up" });
          finish({ kind: "unreachable", error: freshFailed ?? new DatabaseUnreachableError(`no byte from the server within ${probeTimeoutMs} ms`) });
        }, probeTimeoutMs),
      );
    });
  }

  /** Answers every operation of the current pool with `error` and replaces the pool. */
  private retire(error: unknown) {
    const gen = this.generation;
    this.generation++;
    for (const op of [...this.ops]) {
      if (op.generation !== gen) continue;
      this.ops.delete(op);
      op.fail(error);
    }
    try {
      this.onRetire();
    } catch (e) {
      this.log.error("database pool could not be replaced", { error: errorForLog(e) });
    }
  }

  private goDown(reason: string, error: unknown) {
    this.state = "down";
    this.downSince = performance.now();
    this.log.warn("database unreachable: failing requests fast until a probe succeeds", {
      reason,
      error: errorForLog(error),
      probe_interval_ms: this.settings.probeIntervalMs,
    });
    this.retire(new DatabaseUnreachableError());
    this.scheduleRecovery();
  }

  private scheduleRecovery() {
    if (this.closed || this.recoveryTimer) return;
    this.recoveryTimer = setTimeout(() => {
      this.recoveryTimer = null;
      void this.recover();
    }, this.settings.probeIntervalMs);
    (this.recoveryTimer as any).unref?.();
  }

  /** While down: one fresh-connection probe; the first that answers closes the circuit. */
  private async recover() {
    if (this.closed || this.state !== "down") return;
    const f = this.openProbe();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ok = await Promise.race([
      f.query("select 1").then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), this.settings.probeTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (this.closed) return void f.end().catch(() => {});
    if (!ok) {
      void f.end().catch(() => {});
      return this.scheduleRecovery();
    }
    const old = this.kept;
    this.kept = f;
    void old?.end().catch(() => {});
    this.state = "up";
    this.log.info("database reachable again", { down_ms: Math.round(performance.now() - this.downSince) });
  }
}

function codeOf(e: unknown): string {
  const x = e as any;
  return String(x?.code ?? x?.cause?.code ?? "unknown");
}
