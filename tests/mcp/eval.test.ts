/**
 * The assistant's evaluation set (tests/mcp/eval/*.questions.ts): every question answered
 * through a real MCP client and compared with the REST API or its CSV to the cent.
 */
import { beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describeEachDb } from "./../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { EVAL_NOW, openEval, type EvalContext, type EvalQuestion } from "./eval/harness.ts";

const DIR = join(import.meta.dir, "eval");
const files = readdirSync(DIR).filter((f) => f.endsWith(".questions.ts")).sort();
const areas: { file: string; questions: EvalQuestion[] }[] = [];
for (const file of files) areas.push({ file, questions: (await import(join(DIR, file))).questions as EvalQuestion[] });

test("the evaluation set holds at least 25 questions, each answered by named tools", () => {
  const all = areas.flatMap((a) => a.questions);
  expect(all.length).toBeGreaterThanOrEqual(25);
  expect(new Set(all.map((q) => q.question)).size).toBe(all.length);
  for (const q of all) expect(q.tools.length).toBeGreaterThan(0);
});

describeEachDb("assistant evaluation set", (driver) => {
  const t = useTestApp(driver, { now: () => EVAL_NOW });
  let ev: EvalContext;
  beforeAll(async () => {
    ev = await openEval(t);
  }, 120_000);
  for (const { file, questions } of areas) {
    for (const q of questions) test(`${file.replace(".questions.ts", "")}: ${q.question}`, () => q.run(ev), 60_000);
  }
});
