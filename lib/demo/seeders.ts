import type { Services } from "../services.ts";
import { estimatesDemoSeeder } from "../estimates/demo.ts";
import { billingDemoSeeder } from "../billing/demo.ts";
import { budgetsDemoSeeder } from "../budgets/demo.ts";

/** Feature demo data, run in order after the demo org exists. Each must be idempotent. */
export interface DemoSeeder {
  name: string;
  run(s: Services, orgId: string): Promise<void>;
}

export const demoSeeders: DemoSeeder[] = [estimatesDemoSeeder, billingDemoSeeder, budgetsDemoSeeder];
