import { activeTraceIds } from "./tracing/index.ts";
/** Structured JSON logs, one object per line. Secrets are redacted by key name. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/** LOG_LEVEL as a level (case-insensitive); anything else is `info`. */
export function parseLogLevel(v: string | undefined): LogLevel {
  const level = (v ?? "info").toLowerCase();
  return level in ORDER ? (level as LogLevel) : "info";
}
const SECRET_KEY = /authorization|password|secret|token|api[_-]?key|cookie|code_verifier/i;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Whether a line at `level` would be written (absent: assume it would). */
  enabled?(level: LogLevel): boolean;
}

export function redact(value: unknown, depth = 0): unknown {
  if (depth > 4 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? "[redacted]" : redact(v, depth + 1);
  return out;
}

/** A query error's text without its parameters (drizzle appends them: values from requests and data). */
const withoutParams = (message: string) => message.split("\nparams:")[0]!;

/**
 * What the log keeps of an unexpected error (never sent to a client): its message and that of
 * its cause, which holds the driver's reason under drizzle's "Failed query".
 */
export function errorForLog(e: unknown) {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause instanceof Error ? withoutParams(e.cause.message) : undefined;
  // drizzle's message (and so the stack's first line) carries the query's parameters: never logged.
  return { name: e.name, message: withoutParams(e.message), ...(cause ? { cause } : {}), stack: e.stack?.replace(/\nparams:[^\n]*/g, "") };
}

export function createLogger(level: LogLevel = "info", sink: (line: string) => void = (l) => process.stdout.write(l + "\n")): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    // The active span's ids (tracing on): a log line and its trace found from each other.
    sink(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...activeTraceIds(), ...(fields ? (redact(fields) as object) : {}) }));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    enabled: (lvl) => ORDER[lvl] >= ORDER[level],
  };
}
