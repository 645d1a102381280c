// `npm test`: bun test over every test file in parallel worker processes (each keeps its modules
// and its migrated database images across the files it runs), slowest files first by the
// durations recorded in tests/timings.json; then, alone on the machine, the files that measure
// latency (a first line `// test:solo …` says why). Ends with the totals of both and the run's
// ten slowest files.
//
//   npm test                          the whole suite
//   npm test -- tests/budgets         a folder or files (extra arguments go to bun test)
//   npm test -- --write-timings       also record this run's durations in tests/timings.json
//   TEST_WORKERS=1 npm test           one process, files in order (as `bun test` alone)
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const recorded = join(root, "tests/timings.json");

const args = process.argv.slice(2);
const writeTimings = args.includes("--write-timings");
const passThrough = args.filter((a) => a !== "--write-timings");

// Three on two cores: a good share of the suite waits (child processes, browsers, sockets).
const workers = Math.max(1, Number(process.env.TEST_WORKERS) || Math.max(2, cpus().length + 1));

const scratch = mkdtempSync(join(tmpdir(), "commitops-test-timings-"));
const timings = join(scratch, "timings.json");
if (existsSync(recorded)) copyFileSync(recorded, timings);

interface Totals {
  pass: number;
  skip: number;
  todo: number;
  fail: number;
  error: number;
  expects: number;
  tests: number;
  files: number;
}
const totals: Totals = { pass: 0, skip: 0, todo: 0, fail: 0, error: 0, expects: 0, tests: 0, files: 0 };

const started = Date.now();
let code = 0;
try {
  if (passThrough.length || workers === 1) {
    code = await bunTest(passThrough, workers);
  } else {
    const files = [...new Bun.Glob("tests/**/*.test.{ts,tsx}").scanSync({ cwd: root })].sort();
    const solo = files.filter(isSolo);
    const shared = files.filter((f) => !solo.includes(f));
    code = await bunTest(shared, workers);
    if (solo.length) {
      console.error(`\nAlone on the machine (they measure latency): ${solo.join(", ")}\n`);
      code = Math.max(code, await bunTest(solo, 1));
    }
    console.error(`\nTotals of the whole run:`);
    console.error(` ${totals.pass} pass`);
    if (totals.skip) console.error(` ${totals.skip} skip`);
    if (totals.todo) console.error(` ${totals.todo} todo`);
    console.error(` ${totals.fail} fail`);
    if (totals.error) console.error(` ${totals.error} error${totals.error === 1 ? "" : "s"}`);
    console.error(` ${totals.expects} expect() calls`);
    console.error(`Ran ${totals.tests} tests across ${totals.files} files. [${((Date.now() - started) / 1000).toFixed(2)}s]`);
  }
  printSlowest();
  if (writeTimings && existsSync(timings)) copyFileSync(timings, recorded);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(code);

/** Runs bun test on `files` (all when empty), echoing its output and adding its summary to the totals. */
async function bunTest(files: string[], n: number): Promise<number> {
  const cmd = [process.execPath, "test", "--timeout", "120000"];
  if (n > 1) cmd.push(`--parallel=${n}`, "--no-isolate");
  cmd.push(`--timings=${timings}`, "--update-timings", ...files.map((f) => (f.startsWith("-") || f.startsWith("/") || f.startsWith(".") ? f : `./${f}`)));
  const child = Bun.spawn(cmd, { cwd: root, stdin: "inherit", stdout: "pipe", stderr: "pipe" });
  const tail: string[] = [];
  const echo = async (stream: ReadableStream<Uint8Array>, to: NodeJS.WriteStream) => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      to.write(chunk);
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const l of lines) tail.push(l);
      if (tail.length > 200) tail.splice(0, tail.length - 50);
    }
    if (pending) tail.push(pending);
  };
  await Promise.all([echo(child.stdout, process.stdout), echo(child.stderr, process.stderr)]);
  const exit = await child.exited;
  for (const line of tail) {
    const count = /^\s*(\d+) (pass|skip|todo|fail|errors?)$/.exec(line);
    if (count) totals[count[2]!.startsWith("error") ? "error" : (count[2] as "pass")] += Number(count[1]);
    const expects = /^\s*(\d+) expect\(\) calls$/.exec(line);
    if (expects) totals.expects += Number(expects[1]);
    const ran = /^Ran (\d+) tests? across (\d+) files?\./.exec(line);
    if (ran) {
      totals.tests += Number(ran[1]);
      totals.files += Number(ran[2]);
    }
  }
  return exit;
}

function isSolo(file: string): boolean {
  return /^\/\/ test:solo\b/.test(readFileSync(join(root, file), "utf8").slice(0, 200));
}

/** The ten slowest files of this run: all of a whole run's durations, else those bun rewrote. */
function printSlowest() {
  if (!existsSync(timings)) return;
  const files = (p: string): Record<string, number> => (existsSync(p) ? (JSON.parse(readFileSync(p, "utf8")).files ?? {}) : {});
  const before = files(recorded);
  const measured = Object.entries(files(timings)).filter(([f, ms]) => passThrough.length === 0 || before[f] !== ms);
  if (!measured.length) return;
  console.error(`\nSlowest test files (${workers} worker${workers === 1 ? "" : "s"}, ${((Date.now() - started) / 1000).toFixed(0)} s wall):`);
  for (const [file, ms] of measured.sort((a, b) => b[1] - a[1]).slice(0, 10)) console.error(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
}
