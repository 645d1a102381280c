import { text } from "drizzle-orm/pg-core";
import { PROVIDERS } from "../../providers.ts";

/** The `provider` column of every table (aws, azure, gcp; typed from lib/providers.ts). */
export const providerColumn = () => text("provider", { enum: PROVIDERS });
