import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { PageQueryFields, pageField, pagedList } from "../../../../../../lib/http/paging.ts";
import { searchCatalogSkus } from "../../../../../../lib/catalog/search.ts";
import { ensurePublicCatalogOnce } from "../../../../../../lib/catalog/seed.ts";
import { Text } from "../../../../../../lib/http/text.ts";
import { CatalogSku } from "./model.ts";

const CATALOG_PAGE_SIZE = 50;

const SearchQuery = t.Object({
  provider: t.Union([t.Literal("aws"), t.Literal("azure"), t.Literal("gcp")]),
  q: t.Optional(Text({ maxLength: 200 })),
  region: t.Optional(Text({ maxLength: 100 })),
  service: t.Optional(Text({ maxLength: 100 })),
  instance_type: t.Optional(Text({ maxLength: 100 })),
  page: PageQueryFields.page,
  page_size: pageField("page_size", 200, CATALOG_PAGE_SIZE, "Rows per page (1–200)"),
});

/** Catalog search: the public catalog plus the organization's custom-priced SKUs. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get(
    "",
    async (ctx) => {
      await ensurePublicCatalogOnce(s.db);
      const { query } = ctx;
      return pagedList(
        ctx,
        s.config.publicUrl,
        async (p) => {
          const page = await searchCatalogSkus(s.db, ctx.principal.orgId, { provider: query.provider, q: query.q, region: query.region, service: query.service, instanceType: query.instance_type, page: p.page, pageSize: p.pageSize });
          return { items: page.items, total: page.totalCount };
        },
        { pageSize: CATALOG_PAGE_SIZE },
      );
    },
    { scope: "estimates:read", query: SearchQuery, response: { 200: t.Array(CatalogSku) }, detail: { tags: ["Catalog"], summary: "Search catalog SKUs to add to cost estimates" } },
  ),
);
