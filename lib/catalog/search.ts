import { and, asc, eq, ilike, notExists, or, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { DbOrTx } from "../db/index.ts";
import { catalogSkus } from "../db/schema/index.ts";
import type { Provider } from "../pricing/index.ts";
import { PUBLIC_CATALOG } from "./model.ts";

export interface CatalogSearch {
  provider: Provider;
  q?: string;
  region?: string;
  service?: string;
  instanceType?: string;
  page: number;
  pageSize: number;
}

export interface CatalogSkuResult {
  catalog_sku_id: string;
  catalog_sku_org_id: string;
  provider: string;
  provider_sku_id: string;
  display_name: string;
  instance_type: string;
  instance_family: string;
  service: string;
  provider_service: string;
  region_code: string;
  operating_system: string;
  database_engine: string;
  cache_engine: string;
  usage_type: string;
  usage_unit: string;
  is_available: boolean;
  source: string;
  as_of: string;
}

export interface Page<T> {
  items: T[];
  page: number;
  pageSize: number;
  totalCount: number;
  totalPages: number;
}

/** `%`, `_` and `\` are literal in the user's text. */
function likePattern(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Searches the SKUs an org may use (public catalog + its custom-priced SKUs; a custom SKU hides
 * the public one with the same provider_sku_id). `q` matches, word by word, the display name,
 * instance type, region and service.
 */
export async function searchCatalogSkus(db: DbOrTx, orgId: string, p: CatalogSearch): Promise<Page<CatalogSkuResult>> {
  const own = alias(catalogSkus, "own");
  const conds: (SQL | undefined)[] = [
    eq(catalogSkus.provider, p.provider),
    or(eq(catalogSkus.catalogSkuOrgId, orgId), and(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), notExists(
      db.select({ one: sql`1` }).from(own).where(and(eq(own.catalogSkuOrgId, orgId), eq(own.provider, catalogSkus.provider), eq(own.providerSkuId, catalogSkus.providerSkuId))),
    ))),
  ];
  if (p.region) conds.push(eq(catalogSkus.regionCode, p.region));
  if (p.service) conds.push(or(eq(catalogSkus.service, p.service), eq(catalogSkus.providerService, p.service)));
  if (p.instanceType) conds.push(eq(catalogSkus.instanceType, p.instanceType));
  for (const word of (p.q ?? "").split(/\s+/).filter(Boolean).slice(0, 10)) {
    const pat = likePattern(word);
    conds.push(or(ilike(catalogSkus.displayName, pat), ilike(catalogSkus.instanceType, pat), ilike(catalogSkus.regionCode, pat), ilike(catalogSkus.service, pat), ilike(catalogSkus.providerService, pat)));
  }
  const where = and(...conds);
  const [{ count }] = (await db.select({ count: sql<number>`count(*)::int` }).from(catalogSkus).where(where)) as [{ count: number }];
  const rows = await db
    .select()
    .from(catalogSkus)
    .where(where)
    .orderBy(asc(catalogSkus.displayName), asc(catalogSkus.id))
    .limit(p.pageSize)
    .offset((p.page - 1) * p.pageSize);
  const total = Number(count);
  return {
    items: rows.map((s) => ({
      catalog_sku_id: s.id,
      catalog_sku_org_id: s.catalogSkuOrgId,
      provider: s.provider,
      provider_sku_id: s.providerSkuId,
      display_name: s.displayName,
      instance_type: s.instanceType,
      instance_family: s.instanceFamily,
      service: s.service,
      provider_service: s.providerService,
      region_code: s.regionCode,
      operating_system: s.operatingSystem,
      database_engine: s.databaseEngine,
      cache_engine: s.cacheEngine,
      usage_type: s.usageType,
      usage_unit: s.usageUnit,
      is_available: s.isAvailable,
      source: s.source,
      as_of: s.asOf,
    })),
    page: p.page,
    pageSize: p.pageSize,
    totalCount: total,
    totalPages: Math.max(1, Math.ceil(total / p.pageSize)),
  };
}
