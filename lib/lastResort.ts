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
