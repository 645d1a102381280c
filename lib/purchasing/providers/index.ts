/**
 * The provider purchaser of a purchasing connection. Each SDK is loaded on first use: the EC2,
 * ARM and Compute clients are large, and most processes never buy.
 */
import type { PurchasingSettings } from "./settings.ts";
import type { ProviderPurchaser } from "./types.ts";

export async function providerPurchaserFor(settings: PurchasingSettings, opts: { now?: () => Date } = {}): Promise<ProviderPurchaser> {
  switch (settings.kind) {
    case "aws_purchasing":
      return (await import("./aws.ts")).awsPurchaser(settings.config, settings.secrets, opts);
    case "azure_purchasing":
      return (await import("./azure.ts")).azurePurchaser(settings.config, settings.secrets, opts);
    case "gcp_purchasing":
      return (await import("./gcp.ts")).gcpPurchaser(settings.config, settings.secrets, opts);
  }
}
