import { errorForLog, type Logger } from "./log.ts";

/**
 * A server process outlives any one error: what escapes every handler (a driver's callback
 * throwing on a timer, a rejected promise nobody awaited) is logged and the process keeps
 * serving. A request's own failures are answered by the app's error handler; this is the net
 * under it. Only the server installs it; a CLI command still ends on an uncaught error.
 */
export function keepServingOnUncaughtErrors(log: Logger, proc: Pick<NodeJS.Process, "on"> = process): void {
  proc.on("uncaughtException", (e: unknown) => {
    log.error("uncaught error (the process keeps serving)", { error: errorForLog(e) });
  });
  proc.on("unhandledRejection", (e: unknown) => {
    log.error("unhandled promise rejection (the process keeps serving)", { error: errorForLog(e) });
  });
}

/**
 * A command (the CLI) ends on an error that escapes every handler (a driver's timer after its
 * connection died) as on any failure: `report` says it once, in one line, and the process exits 1.
 * Returns what to call once the command reported its failure itself (then nothing more is said).
 */
export function endOnUncaughtErrors(report: (e: unknown) => void, proc: Pick<NodeJS.Process, "on" | "exit"> = process): () => void {
  let reported = false;
  const fatal = (e: unknown) => {
    if (!reported) report(e);
    reported = true;
    proc.exit(1);
  };
  proc.on("uncaughtException", fatal);
  proc.on("unhandledRejection", fatal);
  return () => {
    reported = true;
  };
}
