import { and, asc, eq, sql } from "drizzle-orm";
import type { Page, PageRequest } from "../http/paging.ts";
import type { DbOrTx } from "../db/index.ts";
import { segments } from "../db/schema/index.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import { PROVIDERS, type Provider } from "../templates/enums.ts";
import { ensureSystemTemplates } from "../templates/system.ts";

export interface SegmentFilters {
  account_ids?: string[];
  regions?: string[];
  services?: string[];
}

export interface Segment {
  id: string;
  orgId: string;
  provider: Provider;
  kind: "provider_resources" | "custom";
  name: string;
  filters: SegmentFilters;
  createdAt: Date;
}

export interface SegmentView {
  id: string;
  provider: Provider;
  kind: string;
  name: string;
  filters: SegmentFilters;
  created_at: string;
}

export function segmentView(s: Segment): SegmentView {
  return { id: s.id, provider: s.provider, kind: s.kind, name: s.name, filters: s.filters, created_at: s.createdAt.toISOString() };
}

const PROVIDER_SEGMENT_NAMES: Record<Provider, string> = { aws: "All AWS resources", azure: "All Azure resources", gcp: "All Google Cloud resources" };

/**
 * The org's provider-resources segment (the default `segment_id`) with its system templates,
 * created on first use. Concurrent first uses meet on the partial unique index: one insert
 * wins, the others do nothing and read the winner's row.
 */
export async function ensureProviderSegment(db: DbOrTx, orgId: string, provider: Provider): Promise<Segment> {
  const existing = await db
    .select()
    .from(segments)
    .where(and(eq(segments.orgId, orgId), eq(segments.provider, provider), eq(segments.kind, "provider_resources")))
    .limit(1);
  // System templates are created in the same transaction as the segment, so an existing
  // segment already has them.
  if (existing[0]) return existing[0] as Segment;
  return db.transaction(async (tx) => {
    await tx
      .insert(segments)
      .values({ orgId, provider, kind: "provider_resources", name: PROVIDER_SEGMENT_NAMES[provider], filters: {} })
      .onConflictDoNothing({ target: [segments.orgId, segments.provider], where: sql`kind = 'provider_resources'` });
    const [seg] = await tx
      .select()
      .from(segments)
      .where(and(eq(segments.orgId, orgId), eq(segments.provider, provider), eq(segments.kind, "provider_resources")))
      .limit(1);
    await ensureSystemTemplates(tx, seg as Segment);
    return seg as Segment;
  });
}

/** A segment of the org, or 404 (another org's segment is indistinguishable from none). */
export async function getSegment(db: DbOrTx, orgId: string, id: string): Promise<Segment> {
  const [seg] = await db.select().from(segments).where(and(eq(segments.orgId, orgId), eq(segments.id, id))).limit(1);
  if (!seg) throw new NotFoundError("No such segment in this organization.");
  return seg as Segment;
}

function cleanList(field: string, v: unknown, errors: Record<string, string[]>): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string" || !x.trim() || x.length > 255)) {
    errors[`filters.${field}`] = ["must be a list of non-empty strings (max 255 characters each)"];
    return undefined;
  }
  const out = [...new Set(v.map((x: string) => x.trim()))];
  return out.length ? out : undefined;
}

/** A custom segment: usage of the provider narrowed by account, region and service. */
export async function createCustomSegment(
  db: DbOrTx,
  orgId: string,
  input: { provider: string; name: string; filters?: { account_ids?: unknown; regions?: unknown; services?: unknown } },
): Promise<Segment> {
  const errors: Record<string, string[]> = {};
  if (!(PROVIDERS as readonly string[]).includes(input.provider)) errors.provider = [`must be one of ${PROVIDERS.join(", ")}`];
  const name = (input.name ?? "").trim();
  if (!name || name.length > 255) errors.name = ["must be 1 to 255 characters"];
  const filters: SegmentFilters = {};
  const f = input.filters ?? {};
  const a = cleanList("account_ids", f.account_ids, errors);
  const r = cleanList("regions", f.regions, errors);
  const sv = cleanList("services", f.services, errors);
  if (a) filters.account_ids = a;
  if (r) filters.regions = r;
  if (sv) filters.services = sv;
  if (Object.keys(errors).length) throw new ValidationError("The segment is invalid.", errors);
  return db.transaction(async (tx) => {
    const [seg] = await tx.insert(segments).values({ orgId, provider: input.provider as Provider, kind: "custom", name, filters }).returning();
    await ensureSystemTemplates(tx, seg as Segment);
    return seg as Segment;
  });
}

export async function listSegments(db: DbOrTx, orgId: string, provider?: Provider): Promise<Segment[]> {
  const where = provider ? and(eq(segments.orgId, orgId), eq(segments.provider, provider)) : eq(segments.orgId, orgId);
  return (await db.select().from(segments).where(where).orderBy(asc(segments.provider), asc(segments.createdAt))) as Segment[];
}

/**
 * One page of the org's segments (GET /segments): by provider, the provider-resources segment
 * first, then the custom ones oldest first, id as tiebreak. The provider-resources
 * segments of the listed providers are created on first use here too, as GET
 * /commitment-plan-templates does, so the default `segment_id` is always listed.
 */
export async function pageSegments(db: DbOrTx, orgId: string, opts: { provider?: Provider }, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<SegmentView>> {
  // One read for the steady state (every provider-resources segment exists); created only where missing.
  const present = new Set(
    (await db.select({ provider: segments.provider }).from(segments).where(and(eq(segments.orgId, orgId), eq(segments.kind, "provider_resources")))).map((r) => r.provider),
  );
  for (const provider of opts.provider ? [opts.provider] : PROVIDERS) if (!present.has(provider)) await ensureProviderSegment(db, orgId, provider);
  const where = and(eq(segments.orgId, orgId), opts.provider ? eq(segments.provider, opts.provider) : undefined);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(segments).where(where);
  const rows = await db.select().from(segments).where(where).orderBy(asc(segments.provider), sql`${segments.kind} <> 'provider_resources'`, asc(segments.createdAt), asc(segments.id)).limit(p.limit).offset(p.offset);
  return { items: (rows as Segment[]).map(segmentView), total: Number(counted?.n ?? 0) };
}
