// The console's speed (issue 27), on loopback with the demo organization, against a baseline in
// the same run: the HTML shell alone (the floor of any page served by this server).
//   - JavaScript of the first page: compressed bytes the browser received (Resource Timing),
//     against the 200 KB budget;
//   - first page interactive: navigation start → the overview's figures on screen and the page
//     answering a click, median of BENCH_ROUNDS (5) warm loads, against loading the bare shell;
//   - Lighthouse (npm `lighthouse` 12.8.2 run by npx, the installed Chromium) on the overview: performance and
//     accessibility, mobile (Lighthouse's default: simulated slow 4G and 4× CPU slowdown) and desktop.
// The service is `bun scripts/main.ts serve` on a fresh embedded database (BENCH_BINARY=path to
// use a compiled binary). Usage: npx bun bench/console.ts
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { freePort } from "../tests/helpers/process.ts";

const root = join(import.meta.dir, "..");
const CHROMIUM = process.env.CHROME_PATH ?? "/usr/bin/chromium";
/** The Lighthouse the console's figures were measured with (README, Benchmarks). */
const LIGHTHOUSE = "lighthouse@12.8.2";
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const work = mkdtempSync(join(tmpdir(), "commitops-console-bench-"));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const command = process.env.BENCH_BINARY ? [process.env.BENCH_BINARY, "serve"] : [process.execPath, join(root, "scripts", "main.ts"), "serve"];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function startService(): Promise<{ child: ChildProcess; email: string; password: string }> {
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: base, DATA_DIR: join(work, "data"), LOG_LEVEL: "error" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /Demo sign-in[^:]*: (\S+) \(admin\).*password (\S+)/.exec(out);
      if (m) resolve({ child, email: m[1]!, password: m[2]! });
    });
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) before printing the demo sign-in:\n${out}`)));
  });
}

async function waitForDemoData(): Promise<void> {
  // The demo's billing months load in the background after start: wait until the overview has them.
  await new Promise((r) => setTimeout(r, 4000));
}

const launchArgs = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const { child, email, password } = await startService();
try {
  await waitForDemoData();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: launchArgs });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/app/`);
  await page.waitForSelector("#email");
  await page.fill("#email", email);
  await page.fill("#password", password);
  await page.click("#sign-in");
  await page.waitForSelector("#approve");
  await page.click("#approve");
  await page.waitForSelector("#overview-ready", { state: "attached", timeout: 30_000 });

  // The first page's JavaScript as the browser received it (compressed), on a cold cache.
  const cold = await context.newPage();
  await cold.route("**/*", (route) => route.continue());
  const cdp = await context.newCDPSession(cold);
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  await cold.goto(`${base}/app/`);
  await cold.waitForSelector("#overview-ready", { state: "attached", timeout: 30_000 });
  const scripts = (await cold.evaluate(() =>
    performance
      .getEntriesByType("resource")
      .filter((e) => (e as PerformanceResourceTiming).initiatorType === "script" || e.name.endsWith(".js"))
      .map((e) => ({ name: e.name, transfer: (e as PerformanceResourceTiming).encodedBodySize })),
  )) as { name: string; transfer: number }[];
  const jsBytes = scripts.reduce((n, s) => n + s.transfer, 0);
  await cold.close();

  // First page interactive: navigation → figures shown and a click answered; baseline: the bare shell.
  const interactive: number[] = [];
  const shell: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const p = await context.newPage();
    const t0 = Date.now();
    await p.goto(`${base}/app/`);
    await p.waitForSelector("#overview-ready", { state: "attached", timeout: 30_000 });
    await p.click("nav.side a[href='/app/reports']");
    await p.waitForFunction(() => document.getElementById("page-title")?.textContent !== "Overview");
    interactive.push(Date.now() - t0);
    const t1 = Date.now();
    await p.goto(`${base}/healthz`);
    shell.push(Date.now() - t1);
    await p.close();
  }

  // Lighthouse with the signed-in cookie.
  const cookies = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join("; ");
  await browser.close();
  const lighthouse = (preset: "mobile" | "desktop") => {
    // Lighthouse (≈ 300 packages, 250 MB with its Sentry and OpenTelemetry trees) is fetched by
    // npx into its cache on the first bench run rather than installed by every `npm ci`.
    const args = [
      "--yes",
      LIGHTHOUSE,
      `${base}/app/`,
      "--quiet",
      "--output=json",
      "--output-path=stdout",
      "--only-categories=performance,accessibility",
      `--extra-headers=${JSON.stringify({ Cookie: cookies })}`,
      `--chrome-flags=${launchArgs.join(" ")}`,
      ...(preset === "desktop" ? ["--preset=desktop"] : []),
    ];
    const r = spawnSync("npx", args, { env: { ...process.env, CHROME_PATH: CHROMIUM }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) return { performance: NaN, accessibility: NaN, error: (r.stderr || r.stdout).slice(0, 500) };
    const report = JSON.parse(r.stdout);
    return {
      performance: Math.round(report.categories.performance.score * 100),
      accessibility: Math.round(report.categories.accessibility.score * 100),
      fcp: report.audits["first-contentful-paint"].displayValue as string,
      lcp: report.audits["largest-contentful-paint"].displayValue as string,
      tbt: report.audits["total-blocking-time"].displayValue as string,
      cls: report.audits["cumulative-layout-shift"].displayValue as string,
      si: report.audits["speed-index"].displayValue as string,
    };
  };
  const mobile = lighthouse("mobile");
  const desktop = lighthouse("desktop");

  console.log(`| measure | console | baseline / budget |`);
  console.log(`|---|---|---|`);
  console.log(`| JavaScript of the first page (compressed, ${scripts.length} files) | ${(jsBytes / 1024).toFixed(1)} KB | budget 200 KB |`);
  console.log(`| first page interactive (median of ${rounds}; all: ${interactive.join(", ")} ms) | ${median(interactive)} ms | bare /healthz navigation ${median(shell)} ms; budget 1000 ms |`);
  for (const [name, r] of [["mobile", mobile], ["desktop", desktop]] as const) {
    if ("error" in r) console.log(`| Lighthouse ${name} | failed: ${r.error} | |`);
    else console.log(`| Lighthouse ${name}: performance / accessibility (FCP ${r.fcp}, LCP ${r.lcp}, TBT ${r.tbt}, CLS ${r.cls}, SI ${r.si}) | ${r.performance} / ${r.accessibility} | ≥ 90 / ≥ 95 |`);
  }
} finally {
  child.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 500));
  rmSync(work, { recursive: true, force: true });
}
