import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";

const fixture = join(import.meta.dir, "fixtures/throwing-server.ts");

/** Issue 26, point 1: the server process never dies of an error that escapes every handler. */
describe("the process survives what escapes every handler", () => {
  test("an uncaught TypeError from a timer and an unobserved rejection are logged; the server keeps answering", async () => {
    const port = await freePort();
    const p = startProcess(process.execPath, [fixture], { env: { PORT: String(port) } });
    try {
      await waitFor(`http://127.0.0.1:${port}/`, 200, 30_000);
      await new Promise((r) => setTimeout(r, 800)); // the throws have happened
      const r = await fetch(`http://127.0.0.1:${port}/`);
      expect(await r.text()).toBe("ok");
      expect(p.child.exitCode).toBeNull();
      const lines = p.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
      expect(lines.some((l) => l.level === "error" && l.msg === "uncaught error (the process keeps serving)")).toBe(true);
      expect(lines.some((l) => l.level === "error" && l.msg === "unhandled promise rejection (the process keeps serving)")).toBe(true);
    } finally {
      await p.stop();
    }
  }, 60_000);

  test("without the handler the same process dies (what the handler prevents)", async () => {
    const port = await freePort();
    const p = startProcess(process.execPath, [fixture], { env: { PORT: String(port), NO_HANDLER: "1" } });
    const code = await Promise.race([p.exited, new Promise<string>((r) => setTimeout(() => r("alive"), 20_000))]);
    if (code === "alive") await p.stop("SIGKILL");
    expect(code).not.toBe("alive");
    expect(code).not.toBe(0);
  }, 60_000);
});

/**
 * porsager/postgres#1208 on the pinned, patched driver (patches/postgres+3.4.9.patch): a reserved
 * connection whose backend was terminated. Unpatched, the second query throws an uncatchable
 * TypeError from `nextWrite` and ends the process; patched, it fails like the first.
 */
describe.skipIf(!process.env.TEST_DATABASE_URL)("postgres.js: a write to a closed connection settles [postgres]", () => {
  test("queries on a reserved connection whose backend was terminated reject, twice, and the process lives", async () => {
    const sql = postgres(process.env.TEST_DATABASE_URL!, { max: 2, onnotice: () => {} });
    const killer = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      const reserved = await sql.reserve();
      const [{ pid }] = await reserved`select pg_backend_pid() as pid`;
      await killer`select pg_terminate_backend(${pid})`;
      await new Promise((r) => setTimeout(r, 100));
      const first = await reserved`select 1`.then(() => "ok", (e) => e?.code);
      const second = await reserved`select 1`.then(() => "ok", (e) => e?.code);
      expect(first).not.toBe("ok");
      expect(["CONNECTION_CLOSED", "CONNECTION_DESTROYED", "CONNECTION_ENDED", "57P01"]).toContain(second);
      reserved.release();
    } finally {
      await sql.end({ timeout: 1 });
      await killer.end({ timeout: 1 });
    }
  }, 60_000);
});
