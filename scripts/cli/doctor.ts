import type { CliCommand } from "./types.ts";
import { openDb } from "../../lib/db/index.ts";
import { runDoctor, type DoctorCheck } from "../../lib/ops/doctor.ts";

export const doctorCommands: CliCommand[] = [
  {
    group: "doctor",
    name: "",
    summary: "check this deployment's settings, database, migrations, clock and price catalog",
    usage: "doctor [--json]",
    options: {},
    // It opens the database itself, without migrating (it may run beside a live deployment).
    noDb: true,
    async run(s) {
      let handle = null;
      let openError: string | undefined;
      try {
        handle = await openDb({ url: s.config.databaseUrl, dataDir: s.config.dataDir, migrate: false });
      } catch (e) {
        openError = e instanceof Error ? e.message.replace(/\s*\n\s*/g, " ") : String(e);
      }
      try {
        const checks = await runDoctor(s.config, handle, { openError });
        return { ok: !checks.some((c) => c.status === "problem"), problems: checks.filter((c) => c.status === "problem").length, checks };
      } finally {
        await handle?.close().catch(() => {});
      }
    },
    human: (r: { problems: number; checks: DoctorCheck[] }) =>
      [
        ...r.checks.map((c) => `${c.status === "ok" ? "ok     " : c.status === "problem" ? "PROBLEM" : c.status === "warning" ? "warning" : "skipped"} ${c.name}: ${c.message}`),
        r.problems ? `${r.problems} problem(s).` : "No problems.",
      ].join("\n"),
    exitCode: (r: { problems: number }) => (r.problems ? 1 : 0),
  },
];
