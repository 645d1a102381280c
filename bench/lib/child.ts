import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** Runs a bun child to completion; resolves with stdout, wall time and its peak RSS (VmHWM). */
export function runChild(args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; ms: number; peakRss: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let peak = 0;
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
        if (m) peak = Math.max(peak, Number(m[1]) * 1024);
      } catch {}
    }, 50);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`${args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`));
      else resolve({ stdout, ms: performance.now() - t0, peakRss: peak });
    });
  });
}
