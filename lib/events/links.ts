/**
 * The API resource and console page an event links to (relative to PUBLIC_URL; lib/events/view.ts
 * makes them absolute). One place, so a moved route or page is changed once.
 */
const api = (orgId: string, path: string) => `/beta/v1/org/${orgId}${path}`;
const query = (q: Record<string, string>) => new URLSearchParams(q).toString();

export const billingConnectionLinks = (orgId: string, connectionId: string) => ({
  resourcePath: api(orgId, `/billing-connections/${connectionId}`),
  consolePath: `/app/connections/billing/${connectionId}`,
});

export const billingRunsLink = (orgId: string, connectionId: string) => api(orgId, `/billing-connections/${connectionId}/runs`);

/** A report's month: the API's rows and the Reports page on that month. */
export const reportMonthLinks = (orgId: string, reportType: string, year: number, month: number) => ({
  resourcePath: api(orgId, `/allocation-reports/${reportType}?${query({ year: String(year), month: String(month) })}`),
  consolePath: `/app/reports?${query({ report: reportType, year: String(year), month: String(month) })}`,
});

/** A commitment, and the overview's table of commitments expiring within 90 days. */
export const commitmentLinks = (orgId: string, commitmentId: string) => ({
  resourcePath: api(orgId, `/commitments/${commitmentId}`),
  consolePath: "/app/#expiring",
});

/**
 * The cost explorer on an anomaly's series: its daily effective cost over the four weeks up to
 * the day (API and console take the same query; an empty filter value = rows without one).
 */
export function anomalyLinks(orgId: string, a: { dimension: "account" | "service"; provider: string; key: string | null; date: string; windowStart: string; windowEnd: string }) {
  const q = query({ group_by: "day", start_date: a.windowStart, end_date: a.windowEnd, metric: "effective_cost", provider: a.provider, [a.dimension]: a.key ?? "" });
  return { resourcePath: api(orgId, `/costs?${q}`), consolePath: `/app/explorer?${q}` };
}

/** The price catalog of a provider (search) and the estimates page, which prices from it. */
export const catalogLinks = (orgId: string, provider: string) => ({
  resourcePath: api(orgId, `/catalog-skus?${query({ provider })}`),
  consolePath: "/app/estimates",
});

/** A purchase, and its page in the console (where an admin approves or rejects it). */
export const purchaseLinks = (orgId: string, purchaseId: string) => ({
  resourcePath: api(orgId, `/purchases/${purchaseId}`),
  consolePath: `/app/purchases/${purchaseId}`,
});

/** A filed ticket, and the console's support page. */
export const supportTicketLinks = (orgId: string, ticketKey: string) => ({
  resourcePath: api(orgId, `/support/tickets/${ticketKey}`),
  consolePath: "/app/support",
});

/** A budget and its page. */
export const budgetLinks = (orgId: string, budgetId: string) => ({
  resourcePath: api(orgId, `/budgets/${budgetId}`),
  consolePath: `/app/budgets/${budgetId}`,
});

/** A webhook endpoint and its page (with its delivery log). */
export const webhookEndpointLinks = (orgId: string, endpointId: string) => ({
  resourcePath: api(orgId, `/webhook-endpoints/${endpointId}`),
  consolePath: `/app/notifications/endpoints/${endpointId}`,
});
