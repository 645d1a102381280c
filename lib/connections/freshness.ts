import type { DbOrTx } from "../db/index.ts";
import { queryRows } from "../billing/sql.ts";
import { KIND_PROVIDER } from "./kinds.ts";

export interface ConnectionFreshness {
  id: string;
  name: string;
  provider: string;
  kind: string;
  status: string;
  enabled: boolean;
  last_synced_at: string | null;
  next_sync_at: string | null;
  newest_month: string | null;
  newest_month_imported_at: string | null;
  closed_months: string[];
  last_error_cause: string | null;
}

/** Each connection of the org with how current its data is: nothing of its settings, and of a failure only its cause (messages name buckets and tables, which viewers need not see). */
export async function connectionFreshness(db: DbOrTx, orgId: string): Promise<ConnectionFreshness[]> {
  const rows = await queryRows<{
    id: string; name: string; provider: string; kind: string; status: string; enabled: boolean; last_synced_at: string | null; next_sync_at: string | null;
    newest_month: string | null; newest_month_imported_at: string | null; closed_months: string | null; last_error_cause: string | null;
  }>(
    db,
    `SELECT c.id::text AS id, c.name, k.provider, c.kind, c.status, c.enabled,
            to_char(c.last_synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_synced_at,
            to_char(c.next_sync_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next_sync_at,
            to_char(p.month, 'YYYY-MM') AS newest_month,
            to_char(p.imported_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS newest_month_imported_at,
            (SELECT string_agg(to_char(f.month, 'YYYY-MM'), ',' ORDER BY f.month)
             FROM billing_connection_periods f
             JOIN billing_periods bp ON bp.org_id = c.org_id AND bp.provider = k.provider AND bp.month = f.month AND bp.status = 'closed'
             WHERE f.connection_id = c.id) AS closed_months,
            c.last_error_cause
     FROM billing_connections c
     JOIN json_each_text($2::json) AS k(kind, provider) ON k.kind = c.kind
     LEFT JOIN LATERAL (SELECT month, imported_at FROM billing_connection_periods WHERE connection_id = c.id ORDER BY month DESC LIMIT 1) p ON true
     WHERE c.org_id = $1::uuid
     ORDER BY c.created_at, c.id`,
    [orgId, JSON.stringify(KIND_PROVIDER)],
  );
  return rows.map((r) => ({ ...r, closed_months: r.closed_months ? r.closed_months.split(",") : [] }));
}
