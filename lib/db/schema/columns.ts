import { numeric, text } from "drizzle-orm/pg-core";
import { PROVIDERS } from "../../providers.ts";

/** The `provider` column of every table (aws, azure, gcp; typed from lib/providers.ts). */
export const providerColumn = () => text("provider", { enum: PROVIDERS });

/** The bill's exact sums of a summary row (unrounded numeric): billing_cost_summaries and billing_detail_summaries. */
export const billSumColumns = () => ({
  ondemandCost: numeric("ondemand_cost").notNull(),
  commitmentCost: numeric("commitment_cost").notNull(),
  otherCost: numeric("other_cost").notNull(),
  totalCost: numeric("total_cost").notNull(),
  billedCost: numeric("billed_cost").notNull(),
});
