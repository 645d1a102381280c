/**
 * CPU time, read from /proc (Linux): this process's waited-for children (a CLI run by runChild),
 * and the PostgreSQL server on this machine (every `postgres` process, with the backends that
 * ended since: their time is added to the postmaster's children). Take two readings around a step.
 */
import { readdirSync, readFileSync } from "node:fs";

const TICK = 100; // USER_HZ: 100 on Linux

function statFields(pid: string): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces.
    return [text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")), ...text.slice(text.lastIndexOf(")") + 2).split(" ")];
  } catch {
    return null;
  }
}
/** utime, stime, cutime, cstime are fields 14–17 of /proc/pid/stat (1-based; here after the name). */
const ticks = (f: string[], withChildren: boolean) => Number(f[12]) + Number(f[13]) + (withChildren ? Number(f[14]) + Number(f[15]) : 0);

export interface CpuReading {
  /** Seconds of this process's waited-for children. */
  children: number;
  /** Seconds of every postgres process, ended backends included. */
  postgres: number;
}

export function readCpu(): CpuReading {
  const self = statFields("self")!;
  let pg = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const f = statFields(pid);
    if (f && f[0] === "postgres") pg += ticks(f, true);
  }
  return { children: (Number(self[14]) + Number(self[15])) / TICK, postgres: pg / TICK };
}

export function cpuSince(before: CpuReading): CpuReading {
  const now = readCpu();
  return { children: now.children - before.children, postgres: now.postgres - before.postgres };
}
