import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

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

/** The service's CLI entry (`commitops …`). */
export const MAIN = fileURLToPath(new URL("../../scripts/main.ts", import.meta.url));

/** This checkout's root. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * `commitops serve` on a free loopback port (no demo data, embedded database unless the env
 * says otherwise), not waiting for it to answer. `root`: the source tree to run (default this
 * checkout; another version's copy for an upgrade).
 */
export async function spawnServer(env: Record<string, string | undefined>, opts: { root?: string } = {}) {
  const port = await freePort();
  const root = opts.root ?? ROOT;
  const p = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], {
    cwd: root,
    env: { DATABASE_URL: "", SEED_DEMO: "false", ...env, PORT: String(port), HOST: "127.0.0.1" },
  });
  return { ...p, port, url: `http://127.0.0.1:${port}` };
}

/**
 * `commitops serve` (as `spawnServer`), once its /readyz answers 200; its output is in the error
 * if it never does.
 */
export async function startServer(env: Record<string, string | undefined>, timeoutMs = 90_000, opts: { root?: string } = {}) {
  const p = await spawnServer(env, opts);
  const { url } = p;
  try {
    await waitFor(`${url}/readyz`, 200, timeoutMs);
  } catch (e) {
    await p.stop("SIGKILL");
    throw new Error(`${e instanceof Error ? e.message : String(e)}\n${p.output()}`);
  }
  return p;
}

/** Resolves with the output once it matches `pattern` (rejects if the process exits first or the time runs out). */
export async function outputMatching(p: { output(): string; exited: Promise<unknown> }, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  let exited = false;
  void p.exited.then(() => (exited = true));
  while (!pattern.test(p.output())) {
    if (exited) throw new Error(`the process exited before its output matched ${pattern}:\n${p.output()}`);
    if (Date.now() > end) throw new Error(`the output did not match ${pattern} in ${timeoutMs} ms:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return p.output();
}

/** Resolves once `cond` holds, polled every 25 ms; rejects naming `what` when the time runs out. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
