import { parse } from "csv-parse/sync";
import type { Config } from "../../config.ts";
import { CATALOG_SKUS_CSV } from "../snapshot.gen.ts";
import type { PriceSources, RefreshScope } from "./types.ts";

export const AWS_REFRESH_SERVICES = ["AmazonEC2", "AmazonRDS", "AmazonElastiCache", "AmazonES", "AmazonRedshift"];
export const AWS_SAVINGS_PLAN_OFFERS = ["AWSComputeSavingsPlan", "AWSDatabaseSavingsPlans"];
export const AZURE_REFRESH_SERVICES = ["Virtual Machines"];
export const GCP_REFRESH_SERVICES = ["Compute Engine"];

let snapshotRegions: Record<string, string[]> | null = null;

/** The regions the bundled snapshot prices, per provider: what a refresh keeps current by default. */
export function snapshotRegionsOf(provider: "aws" | "azure" | "gcp"): string[] {
  if (!snapshotRegions) {
    const rows: { provider_sku_id: string; region_code: string }[] = parse(CATALOG_SKUS_CSV, { columns: true, skip_empty_lines: true });
    const by: Record<string, Set<string>> = {};
    for (const r of rows) (by[r.provider_sku_id.split(":")[0]!] ??= new Set()).add(r.region_code);
    snapshotRegions = Object.fromEntries(Object.entries(by).map(([p, s]) => [p, [...s].filter(Boolean).sort()]));
  }
  return snapshotRegions[provider] ?? [];
}

export function refreshScopeOf(config: Config): RefreshScope {
  return {
    awsRegions: config.catalogRefreshAwsRegions ?? snapshotRegionsOf("aws"),
    awsServices: AWS_REFRESH_SERVICES,
    awsSavingsPlans: AWS_SAVINGS_PLAN_OFFERS,
    azureRegions: config.catalogRefreshAzureRegions ?? snapshotRegionsOf("azure"),
    azureServices: AZURE_REFRESH_SERVICES,
    gcpRegions: config.catalogRefreshGcpRegions ?? snapshotRegionsOf("gcp"),
    gcpServices: GCP_REFRESH_SERVICES,
  };
}

export function priceSourcesOf(config: Config, offlineDir: string | null = null): PriceSources {
  return {
    awsBaseUrl: config.awsPricingBaseUrl,
    azureBaseUrl: config.azurePricesBaseUrl,
    gcpBaseUrl: config.gcpBillingCatalogBaseUrl,
    gcpApiKey: config.gcpPricingApiKey ?? null,
    offlineDir,
  };
}
