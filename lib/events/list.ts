/**
 * GET /events: the org's event log for pull-based consumers, paged like every list (DESIGN §12),
 * filtered by type (exact types or a `domain.*` prefix, repeated or comma-separated) and by the
 * time the event occurred ([since, until)). Newest first by default (what happened lately);
 * `order=oldest_first` walks the log forward, the order in which it was written (time, then the
 * log's sequence), for a consumer catching up from a `since`.
 */
import { and, asc, desc, eq, gte, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { events } from "../db/schema/events.ts";
import { BadRequestError, NotFoundError } from "../errors.ts";
import type { Page, PageRequest } from "../http/paging.ts";
import { isUuid } from "../ids.ts";
import { EVENT_TYPES, isEventType, type EventType } from "./catalog.ts";
import { eventView, type EventView } from "./view.ts";

export const EVENT_ORDERS = ["newest_first", "oldest_first"] as const;
export type EventOrder = (typeof EVENT_ORDERS)[number];

/** `type` values a request may name (repeated params and comma-separated lists together). */
export const MAX_TYPE_FILTERS = 20;
/** The longest `type` value, `since` or `until` read. */
export const MAX_TYPE_LENGTH = 100;
export const MAX_TIME_LENGTH = 40;

export interface EventFilters {
  /** Only these types; undefined: every type. */
  types?: EventType[];
  since?: Date;
  until?: Date;
  order: EventOrder;
}

/** The domains a `prefix.*` filter may name (`purchase.*`, `billing_sync.*`, …). */
const DOMAINS = [...new Set(EVENT_TYPES.map((t) => t.slice(0, t.indexOf("."))))].sort();

/** RFC 3339 date-time with an offset (Z or ±hh:mm; a `+` left unencoded in the URL arrives as a space), or a date (its midnight, UTC). */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+\- ])(\d{2}):(\d{2})))?$/;

function instant(field: string, value: string): Date {
  const m = value.length <= MAX_TIME_LENGTH ? DATE_TIME.exec(value) : null;
  let d: Date | null = null;
  if (m) {
    const [y, mo, day, h = 0, mi = 0, sec = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((x) => (x === undefined ? undefined : Number(x))) as number[];
    const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0;
    const offset = m[9] ? (m[9] === "-" ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) : 0;
    const utc = Date.UTC(y!, mo! - 1, day!, h, mi, sec, ms);
    const check = new Date(Date.UTC(y!, mo! - 1, day!));
    // Calendar and clock ranges: Date.UTC would roll 2026-02-30 over to March and 24:00 to the next day.
    const valid = check.getUTCFullYear() === y && check.getUTCMonth() === mo! - 1 && check.getUTCDate() === day && h < 24 && mi < 60 && sec < 60 && Number(m[10] ?? 0) < 24 && Number(m[11] ?? 0) < 60;
    if (valid) d = new Date(utc - offset * 60_000);
  }
  if (!d || Number.isNaN(d.getTime())) {
    throw new BadRequestError(`Invalid query parameter: ${field} must be an ISO 8601 date-time with a time zone (2026-05-01T00:00:00Z) or a date (2026-05-01, midnight UTC).`, {
      [field]: ["must be an ISO 8601 date-time with a time zone, or a date"],
    });
  }
  return d;
}

/** The event types named by the request's `type` params: exact types and `domain.*` prefixes. */
function typesOf(values: string[]): EventType[] | undefined {
  if (!values.length) return undefined;
  const names = values.flatMap((v) => v.split(",")).map((v) => v.trim());
  if (names.length > MAX_TYPE_FILTERS) throw new BadRequestError(`Invalid query parameter: type names at most ${MAX_TYPE_FILTERS} types or prefixes.`, { type: [`must name at most ${MAX_TYPE_FILTERS} values`] });
  const out = new Set<EventType>();
  for (const name of names) {
    const shown = name.slice(0, MAX_TYPE_LENGTH);
    if (name.length <= MAX_TYPE_LENGTH && isEventType(name)) {
      out.add(name);
      continue;
    }
    const domain = name.endsWith(".*") ? name.slice(0, -2) : null;
    if (name.length <= MAX_TYPE_LENGTH && domain && DOMAINS.includes(domain)) {
      for (const t of EVENT_TYPES) if (t.startsWith(`${domain}.`)) out.add(t);
      continue;
    }
    throw new BadRequestError(`Invalid query parameter: type "${shown}" is not an event type: use one of ${EVENT_TYPES.join(", ")}, or a prefix ${DOMAINS.map((d) => `${d}.*`).join(", ")}.`, {
      type: [`must be an event type or a prefix such as purchase.* ("${shown}" is neither)`],
    });
  }
  return [...out];
}

/**
 * The filters of a GET /events request, read from its URL (a repeated `type` keeps every value,
 * which the validated query object would not). 400 `invalid_parameter` naming the field.
 */
export function eventFiltersOf(requestUrl: string): EventFilters {
  const q = new URL(requestUrl).searchParams;
  const one = (field: string): string | undefined => {
    const all = q.getAll(field);
    if (all.length > 1) throw new BadRequestError(`Invalid query parameter: ${field} may be given once.`, { [field]: ["must be given once"] });
    return all[0];
  };
  const since = one("since");
  const until = one("until");
  const order = one("order") ?? "newest_first";
  if (!(EVENT_ORDERS as readonly string[]).includes(order)) throw new BadRequestError("Invalid query parameter: order must be newest_first or oldest_first.", { order: ["must be newest_first or oldest_first"] });
  const f: EventFilters = { types: typesOf(q.getAll("type")), order: order as EventOrder };
  if (since !== undefined) f.since = instant("since", since);
  if (until !== undefined) f.until = instant("until", until);
  if (f.since && f.until && f.since >= f.until) throw new BadRequestError("Invalid query parameter: until must be after since.", { until: ["must be after since"] });
  return f;
}

/** One page of the org's events under the filters, with the total of the filtered log. */
export async function pageEvents(db: DbOrTx, orgId: string, f: EventFilters, p: PageRequest, publicUrl: string): Promise<Page<EventView>> {
  const where: SQL[] = [eq(events.orgId, orgId)];
  if (f.types) where.push(inArray(events.type, f.types));
  if (f.since) where.push(gte(events.occurredAt, f.since));
  if (f.until) where.push(lt(events.occurredAt, f.until));
  const cond = and(...where);
  const dir = f.order === "oldest_first" ? asc : desc;
  const rows = await db.select().from(events).where(cond).orderBy(dir(events.occurredAt), dir(events.seq)).limit(p.limit).offset(p.offset);
  const [count] = await db.select({ n: sql<number>`count(*)::int` }).from(events).where(cond);
  return { items: rows.map((r) => eventView(r, publicUrl)), total: Number(count?.n ?? 0) };
}

/** One event of the org; another org's (or an unknown id) is 404. */
export async function getEvent(db: DbOrTx, orgId: string, id: string, publicUrl: string): Promise<EventView> {
  const [row] = isUuid(id) ? await db.select().from(events).where(and(eq(events.orgId, orgId), eq(events.id, id.toLowerCase()))) : [];
  if (!row) throw new NotFoundError(`No event ${id.slice(0, 64)} in this organization.`);
  return eventView(row, publicUrl);
}
