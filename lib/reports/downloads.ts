/**
 * Limits of streamed report downloads (JSON and CSV fetches of a report month), so that clients
 * that stop reading cannot take the database away from everyone else:
 *  - a download whose client has not read for `downloadIdleTimeoutSeconds` while the producer
 *    waits for backpressure is aborted (the cursor's transaction rolls back, its connection goes
 *    back to the pool) and its response ends with an error (a truncated transfer);
 *  - at most `downloadConcurrency` downloads stream per process and database handle (default:
 *    the pool size − 2, at least 1, so other requests always find a connection; 1 on PGlite,
 *    where every download's query runs on the single connection: its holdable cursor frees the
 *    connection between fetches, but each download still computes its rows there first); a
 *    download that finds no free slot within `downloadQueueTimeoutSeconds` answers 503 +
 *    Retry-After.
 */
import { AppError } from "../errors.ts";
import type { Config } from "../config.ts";
import type { DatabaseHandle } from "../db/index.ts";

export interface DownloadLimits {
  /** 0 = never abort an idle download. */
  idleTimeoutMs: number;
  concurrency: number;
  queueTimeoutMs: number;
}

/** The effective limits for this process's configuration (lib/config.ts) and database handle. */
export function downloadLimits(
  config: Pick<Config, "downloadIdleTimeoutSeconds" | "downloadConcurrency" | "downloadQueueTimeoutSeconds">,
  handle: Pick<DatabaseHandle, "poolSize">,
): DownloadLimits {
  return {
    idleTimeoutMs: config.downloadIdleTimeoutSeconds * 1000,
    concurrency: config.downloadConcurrency ?? Math.max(1, handle.poolSize - 2),
    queueTimeoutMs: config.downloadQueueTimeoutSeconds * 1000,
  };
}

/** 503 when every download slot stayed busy for the queue timeout (decided before any byte of the body). */
export class DownloadsBusyError extends AppError {
  constructor(retryAfterSeconds: number) {
    super(503, "service_unavailable", "Too many report downloads are in progress; retry shortly.", "service_unavailable", {}, null, {
      "Retry-After": String(retryAfterSeconds),
    });
  }
}

/** Thrown by a stream's `push` when the client has not read for the idle timeout. */
/** A report whose query did not finish within REPORT_QUERY_TIMEOUT_SECONDS: nothing was sent yet. */
export class ReportTimeoutError extends AppError {
  constructor(timeoutMs: number) {
    super(503, "report_timeout", `The report took longer than ${Math.round(timeoutMs / 1000)} s to compute and was cancelled; retry later or narrow it with filters.`, "service_unavailable", {}, null, {
      "Retry-After": "30",
    });
  }
}

export class DownloadIdleError extends Error {
  constructor(readonly idleTimeoutMs: number) {
    super(`the client read nothing for ${idleTimeoutMs} ms`);
    this.name = "DownloadIdleError";
  }
}

/** Thrown by a stream's `push` once the client has gone away (the body stream was cancelled). */
export { ClientGoneError } from "../errors.ts";

interface Waiter {
  grant(): void;
}

/** A counting semaphore with a FIFO queue whose waiters give up after a timeout. */
export class DownloadSlots {
  private active = 0;
  private readonly waiters: Waiter[] = [];

  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiters.length;
  }

  /** A release function (call it once the download no longer uses the database), or null after `timeoutMs`. */
  acquire(max: number, timeoutMs: number): Promise<(() => void) | null> {
    if (this.active < max && this.waiters.length === 0) {
      this.active++;
      return Promise.resolve(this.releaser(max));
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser(max));
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(null);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private releaser(max: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      while (this.active < max && this.waiters.length) {
        this.active++;
        this.waiters.shift()!.grant();
      }
    };
  }
}

const slotsByHandle = new WeakMap<DatabaseHandle, DownloadSlots>();

/** The download slots of one database handle (one pool: shared by every app serving it). */
export function downloadSlots(handle: DatabaseHandle): DownloadSlots {
  let slots = slotsByHandle.get(handle);
  if (!slots) slotsByHandle.set(handle, (slots = new DownloadSlots()));
  return slots;
}
