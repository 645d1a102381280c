/**
 * The one-screen table of `npm run bench`: each benchmark adds its headline figures (with the
 * baseline measured in the same run) to the file named by BENCH_SUMMARY; bench/run.ts prints them.
 */
import { appendFileSync } from "node:fs";

export interface HeadlineFigure {
  /** What was measured. */
  figure: string;
  /** Our figure, as printed. */
  value: string;
  /** The baseline of the same run, as printed ("" when none). */
  baseline: string;
  /** value ÷ baseline, or another comparison ("" when none). */
  ratio: string;
  /** The goal and whether it is met. */
  goal: string;
}

export function addHeadline(f: HeadlineFigure): void {
  const path = process.env.BENCH_SUMMARY;
  if (path) appendFileSync(path, JSON.stringify(f) + "\n");
}
