import { describe, expect, test } from "bun:test";
import { dueExecutionDate, firstExecutionDateAfter, isValidDate, latestExecutionDate, nextExecutionDate } from "../../lib/templates/schedule.ts";

describe("auto-purchase schedule dates (UTC)", () => {
  test("daily", () => {
    const s = { schedule: "daily" as const, start_date: "2026-03-10", end_date: "2026-03-20" };
    expect(latestExecutionDate(s, "2026-03-09")).toBeNull();
    expect(latestExecutionDate(s, "2026-03-15")).toBe("2026-03-15");
    expect(latestExecutionDate(s, "2026-04-01")).toBe("2026-03-20");
    expect(firstExecutionDateAfter(s, "2026-03-15")).toBe("2026-03-16");
    expect(firstExecutionDateAfter(s, "2026-03-20")).toBeNull();
    expect(firstExecutionDateAfter(s, "2026-01-01")).toBe("2026-03-10");
  });

  test("weekly: start date + 7k", () => {
    const s = { schedule: "weekly" as const, start_date: "2026-03-02", end_date: null };
    expect(latestExecutionDate(s, "2026-03-08")).toBe("2026-03-02");
    expect(latestExecutionDate(s, "2026-03-09")).toBe("2026-03-09");
    expect(firstExecutionDateAfter(s, "2026-03-09")).toBe("2026-03-16");
    expect(firstExecutionDateAfter(s, "2026-12-30")).toBe("2027-01-04");
  });

  test("monthly: the start day each month, clamped to short months", () => {
    const s = { schedule: "monthly" as const, start_date: "2026-01-31", end_date: null };
    expect(latestExecutionDate(s, "2026-02-27")).toBe("2026-01-31");
    expect(latestExecutionDate(s, "2026-02-28")).toBe("2026-02-28");
    expect(latestExecutionDate(s, "2026-03-30")).toBe("2026-02-28");
    expect(latestExecutionDate(s, "2026-03-31")).toBe("2026-03-31");
    expect(firstExecutionDateAfter(s, "2026-03-31")).toBe("2026-04-30");
    expect(firstExecutionDateAfter(s, "2028-01-31")).toBe("2028-02-29");
  });

  test("due: the latest slot once; never a slot from before the schedule was set", () => {
    const s = { schedule: "daily" as const, start_date: "2026-03-01", end_date: null };
    expect(dueExecutionDate(s, "2026-03-15", null)).toBe("2026-03-15");
    expect(dueExecutionDate(s, "2026-03-15", "2026-03-15")).toBeNull();
    // five days down: only the latest slot
    expect(dueExecutionDate(s, "2026-03-20", "2026-03-15")).toBe("2026-03-20");
    const m = { schedule: "monthly" as const, start_date: "2026-01-31", end_date: null };
    expect(dueExecutionDate(m, "2026-03-15", null, "2026-03-15")).toBeNull();
    expect(nextExecutionDate(m, "2026-03-15", null, "2026-03-15")).toBe("2026-03-31");
    expect(nextExecutionDate(m, "2026-04-02", null, "2026-03-15")).toBe("2026-03-31");
  });

  test("dates are real calendar dates", () => {
    expect(isValidDate("2026-02-28")).toBe(true);
    expect(isValidDate("2028-02-29")).toBe(true);
    expect(isValidDate("2026-02-29")).toBe(false);
    expect(isValidDate("2026-13-01")).toBe(false);
    expect(isValidDate("2026-1-01")).toBe(false);
  });
});
