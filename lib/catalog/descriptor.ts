import type { catalogSkus } from "../db/schema/index.ts";

/** The SKU descriptor of the spec's LineItem.catalog_sku, snapshotted into lines and shown by search. */
export interface CatalogSkuDescriptor {
  catalog_sku_org_id: string;
  catalog_sku_id: string;
  provider: string;
  provider_sku_id: string;
  display_name: string;
  instance_type: string;
  service: string;
  provider_service: string;
  region_code: string;
  operating_system: string;
  database_engine: string;
  cache_engine: string;
  usage_type: string;
}

export function catalogSkuDescriptor(s: typeof catalogSkus.$inferSelect): CatalogSkuDescriptor {
  return {
    catalog_sku_org_id: s.catalogSkuOrgId,
    catalog_sku_id: s.id,
    provider: s.provider,
    provider_sku_id: s.providerSkuId,
    display_name: s.displayName,
    instance_type: s.instanceType,
    service: s.service,
    provider_service: s.providerService,
    region_code: s.regionCode,
    operating_system: s.operatingSystem,
    database_engine: s.databaseEngine,
    cache_engine: s.cacheEngine,
    usage_type: s.usageType,
  };
}
