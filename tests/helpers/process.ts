import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

/** A free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as any).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

/** Polls `url` until it answers `status` or the deadline passes. */
export async function waitFor(url: string, status = 200, timeoutMs = 60_000): Promise<Response> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      if (r.status === status) return r;
      last = r.status;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer ${status} in ${timeoutMs} ms (last: ${String(last)})`);
}

/** Starts a process, collecting its output; `stop()` sends SIGTERM and waits. */
export function startProcess(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
  const child: ChildProcess = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env } as any, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return {
    child,
    output: () => output,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
