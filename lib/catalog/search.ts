import { and, asc, eq, ilike, notExists, or, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { DbOrTx } from "../db/index.ts";
import { catalogSkus } from "../db/schema/index.ts";
import type { Provider } from "../pricing/index.ts";
import { PUBLIC_CATALOG } from "./model.ts";
import { catalogSkuDescriptor, type CatalogSkuDescriptor } from "./descriptor.ts";

export interface CatalogSearch {
  provider: Provider;
  q?: string;
  region?: string;
  service?: string;
  instanceType?: string;
  page: number;
  pageSize: number;
}

/** A search hit: the line-item descriptor plus what a client needs to choose a SKU. */
export interface CatalogSkuResult extends CatalogSkuDescriptor {
  instance_family: string;
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
      ...catalogSkuDescriptor(s),
      instance_family: s.instanceFamily,
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
